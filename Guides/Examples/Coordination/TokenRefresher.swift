import AsyncFlow

/// What the API answers, and how a request fails.
public enum APIError: Error, Equatable {
  case unauthorized
  case offline
}

/// Sends one request with a token; the server answers 401 (`.unauthorized`) when the token expired.
public typealias SendRequest = @Sendable (_ path: String, _ token: String) async -> Result<String, APIError>
/// Exchanges the refresh credential for a new access token.
public typealias RefreshToken = @Sendable () async -> Result<String, APIError>

// region: naive-token-refresher
/// As people first write it: every request that gets a 401 refreshes the token itself. Five
/// requests that expire together send five refreshes, and, with a server that rotates refresh
/// credentials, all but the first fail and log the user out.
public actor NaiveAPIClient {
  private var token: String
  private let send: SendRequest
  private let refresh: RefreshToken

  public init(token: String, send: @escaping SendRequest, refresh: @escaping RefreshToken) {
    (self.token, self.send, self.refresh) = (token, send, refresh)
  }

  public func get(_ path: String) async throws(APIError) -> String {
    switch await send(path, token) {
    case .success(let body):
      return body
    case .failure(.unauthorized):
      token = try await refresh().get()  // one refresh per caller
      return try await send(path, token).get()
    case .failure(let error):
      throw error
    }
  }
}
// endregion: naive-token-refresher

// region: token-refresher
/// Fixed: the refresh is a single flight. Whichever request gets the first 401 starts it; every
/// request that gets a 401 while it is in flight joins it and gets its token, or its failure.
public actor APIClient {
  private enum Shared: Hashable, Sendable { case token }

  private var token: String
  private let send: SendRequest
  private let refresh: RefreshToken
  private let refreshes: SingleFlight<Shared, String, APIError>

  public init(token: String, send: @escaping SendRequest, refresh: @escaping RefreshToken) {
    (self.token, self.send, self.refresh) = (token, send, refresh)
    refreshes = SingleFlight()
  }

  /// The body at `path`, or `nil` if the calling task was cancelled while the token was refreshed.
  public func get(_ path: String) async throws(APIError) -> String? {
    switch await send(path, token) {
    case .success(let body):
      return body
    case .failure(.unauthorized):
      let refresh = self.refresh
      // Joined while a refresh is in flight; a new one only after it ended (no caching).
      guard let fresh = try await refreshes.run(.token, operation: { () throws(APIError) in try await refresh().get() })
      else { return nil }
      token = fresh  // every joined caller writes the same token: the actor's re-entrancy is harmless here
      return try await send(path, fresh).get()
    case .failure(let error):
      throw error
    }
  }
}
// endregion: token-refresher

// region: request-log
/// A screen whose loads are numbered and logged: when a tester reports "the list showed the old
/// category", the log says which trigger started which load and what replaced it.
@MainActor
public final class LoggedArticlesModel {
  public enum Work: Hashable, Sendable, CustomStringConvertible {
    case articles
    public var description: String { "articles" }
  }

  public private(set) var articles: [String] = []
  /// Kept by the screen, attached to a bug report: the last 200 runs' outcomes.
  public let log = RequestLog<Work>(capacity: 200)
  private let slots: TaskSlots<Work>
  private let fetch: @Sendable (String) async -> [String]

  public init(fetch: @escaping @Sendable (String) async -> [String]) {
    self.fetch = fetch
    slots = TaskSlots(log: log)
  }

  public func onAppear() { load("all", trigger: "appear") }
  public func categoryChanged(_ category: String) { load(category, trigger: "category \(category)") }
  public func refresh(_ category: String) { load(category, trigger: "refresh") }

  private func load(_ category: String, trigger: String) {
    let fetch = self.fetch
    slots.run(.articles, trigger: trigger) { @MainActor [weak self] in
      let found = await fetch(category)
      guard let self, !Task.isCancelled else { return }
      self.articles = found
    }
  }
}
// endregion: request-log
