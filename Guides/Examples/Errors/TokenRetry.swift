import AsyncFlow

// region: token-retry
/// How a request of `RetryingAPIClient` fails. A 401 says which token the request was sent with, so
/// that the retry refreshes only a token that no refresh has replaced yet.
public enum RequestFailure: Error, Equatable {
  case unauthorized(sentWith: String)
  case offline
}

/// The token refresher as a pipeline: a request answered "unauthorized" renews the token inside the
/// retry's decision, then goes again with the new one. The renewal is a single flight, so the
/// requests that get a 401 at once share one refresh; a 401 for a token already replaced resends
/// without refreshing. A refresh that fails ends the request with its failure, without a retry.
public actor RetryingAPIClient {
  private enum Shared: Hashable, Sendable { case token }

  private var token: String
  private let send: SendRequest
  private let refresh: RefreshToken
  private let refreshes = SingleFlight<Shared, String, RequestFailure>()

  public init(token: String, send: @escaping SendRequest, refresh: @escaping RefreshToken) {
    (self.token, self.send, self.refresh) = (token, send, refresh)
  }

  /// The body at `path`: one element, or the request's failure.
  public nonisolated func get(
    _ path: String
  ) -> AsyncRetryWithBackoffSequence<Flow<String, RequestFailure>, ContinuousClock> {
    Flow { emitter throws(RequestFailure) in
      let sentWith = await self.token
      switch await self.send(path, sentWith) {
      case .success(let body): await emitter.emit(body)
      case .failure(.unauthorized): throw .unauthorized(sentWith: sentWith)
      case .failure(.offline): throw .offline
      }
    }
    .retryWithBackoff(maxRetries: 1, initialDelay: .zero) { failure throws(RequestFailure) in
      guard case .unauthorized(let expired) = failure else { return false }
      try await self.renew(expired)
      return true  // a caller cancelled meanwhile ends without another attempt
    }
  }

  /// Returns once the token is newer than `expired`: at once if a refresh has replaced it, else
  /// when the refresh in flight, joined or started, has stored its token. The check and the start
  /// are one step of the actor, so no refresh can end in between.
  private func renew(_ expired: String) async throws(RequestFailure) {
    guard token == expired else { return }
    _ = try await refreshes.run(.token) { () throws(RequestFailure) in
      try await self.refreshAndStore(expired)
    }
  }

  /// A refresh that every caller left is cancelled; the check keeps its late token from replacing
  /// the one a newer refresh stored.
  private func refreshAndStore(_ expired: String) async throws(RequestFailure) -> String {
    switch await refresh() {
    case .success(let fresh):
      if !Task.isCancelled { token = fresh }
      return fresh
    case .failure(.unauthorized): throw .unauthorized(sentWith: expired)
    case .failure(.offline): throw .offline
    }
  }
}
// endregion: token-retry
