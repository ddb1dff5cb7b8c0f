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
/// request that gets a 401 while it is in flight joins it and gets its token, or its failure. A
/// 401 that arrives after the refresh finished, for a request sent with the old token, resends
/// with the new one instead of refreshing again: the token each request was sent with tells.
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
    let sentWith = token
    switch await send(path, sentWith) {
    case .success(let body):
      return body
    case .failure(.unauthorized):
      guard let fresh = try await token(replacing: sentWith) else { return nil }
      return try await send(path, fresh).get()
    case .failure(let error):
      throw error
    }
  }

  /// A token newer than `expired`: the current one if a refresh has replaced `expired` already,
  /// else the result of the refresh in flight, joined or started; `nil` if this caller was
  /// cancelled meanwhile.
  private func token(replacing expired: String) async throws(APIError) -> String? {
    if token != expired { return token }  // refreshed since this request was sent
    return try await refreshes.run(.token) { () throws(APIError) in try await self.refreshAndStore() }
  }

  /// Stored inside the single flight's operation, so that a 401 arriving after the refresh ended
  /// finds the new token. A refresh that every caller left is cancelled, and its result reaches no
  /// one; its store is a side effect, which the check keeps from writing a late token over the one
  /// a newer refresh stored.
  private func refreshAndStore() async throws(APIError) -> String {
    let fresh = try await refresh().get()
    if !Task.isCancelled { token = fresh }
    return fresh
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
