import AsyncFlow

// The service-shaped examples of Guides/Services.md: a profile lookup that joins repeated
// requests, a fan-out search over several backends that stops early, and a request ID in every log
// line (`RequestContext` and `ServerLog`, from Context/RequestLogging.swift). `FeedServiceTests`
// runs them on real threads and on a test clock.

/// How a backend call fails: `notFound` is for good, `unavailable` may pass.
public enum BackendError: Error, Equatable, Sendable {
  case notFound
  case unavailable

  public var isTransient: Bool { self == .unavailable }
}

public struct Profile: Equatable, Sendable {
  public var id: String
  public var name: String

  public init(id: String, name: String) {
    self.id = id
    self.name = name
  }
}

// region: service-profile-lookup
/// Profiles by ID, behind one flight per ID: 10,000 requests for 100 profiles make 100 backend
/// calls at a time. Each attempt has its own timeout; a timeout or an unavailable backend is
/// retried with jittered backoff, a profile that does not exist is not.
public final class ProfileLookup<C: Clock>: Sendable where C.Duration == Duration {
  public typealias Failure = FlowTimeoutFailure<BackendError>

  private let flights = SingleFlight<String, Profile, Failure>()
  private let fetch: @Sendable (String) async throws(BackendError) -> Profile
  private let clock: C
  private let log: ServerLog

  public init(clock: C, log: ServerLog, fetch: @escaping @Sendable (String) async throws(BackendError) -> Profile) {
    self.clock = clock
    self.log = log
    self.fetch = fetch
  }

  /// The profile, or `nil` when the caller was cancelled; throws `.timedOut` when the last attempt
  /// timed out, `.upstream(.notFound)` at once for a profile that does not exist.
  public func profile(_ id: String) async throws(Failure) -> Profile? {
    try await flights.run(id) { [fetch, clock, log] () throws(Failure) -> Profile in
      log.info("fetching profile \(id)")  // once per flight, with the ID of the request that started it
      let attempts = Flow.single { () throws(BackendError) in try await fetch(id) }
        .timeoutFlow(after: .seconds(2), clock: clock)
        .retryWithBackoff(maxRetries: 3, initialDelay: .milliseconds(100), jitter: 0.5, clock: clock) {
          failure throws(Failure) in
          guard case .upstream(let error) = failure else { return true }  // timed out: try again
          return error.isTransient
        }
      // `nil` only when every caller has left, and then what this throws reaches no one.
      guard let profile = try await attempts.firstFlow(where: { _ in true }) else { throw .timedOut }
      return profile
    }
  }
}
// endregion: service-profile-lookup

/// One search backend: its name for the logs, and its call.
public struct SearchBackend: Sendable {
  public let name: String
  public let search: @Sendable (String) async throws(BackendError) -> [String]

  public init(name: String, search: @escaping @Sendable (String) async throws(BackendError) -> [String]) {
    self.name = name
    self.search = search
  }
}

// region: service-fan-out
/// Asks every backend, three at a time, each within its own timeout; a backend that fails or is
/// too slow is logged and left out. Stops at `limit` results: the searches still running are
/// cancelled, and `collectWhile` returns only once they have ended, so no backend call outlives
/// the request.
public func fanOutSearch<C: Clock>(
  _ query: String, over backends: [SearchBackend], limit: Int, clock: C, log: ServerLog
) async -> [String] where C.Duration == Duration {
  var found: [String] = []
  await Flow.sequence(backends)
    .mergeFlow(maxConcurrent: 3) { backend in
      Flow.single { () throws(BackendError) in try await backend.search(query) }
        .timeoutFlow(after: .seconds(1), clock: clock)
        .catch { failure in
          log.info("\(backend.name) left out: \(failure)")
          return Flow<[String], Never>.empty
        }
    }
    .collectWhile { results in
      found += results
      return found.count < limit
    }
  return Array(found.prefix(limit))
}
// endregion: service-fan-out

// region: service-handler
/// A request's handler: binds the request's ID, so that every line the lookup and the fan-out
/// write for it carries it.
public func handleFeedRequest<C: Clock>(
  id: String, user: String, query: String, profiles: ProfileLookup<C>, backends: [SearchBackend], clock: C,
  log: ServerLog
) async -> (profile: Profile?, results: [String]) where C.Duration == Duration {
  await RequestContext.$requestID.withValue(id) {
    log.info("request for \(user)")
    let profile = try? await profiles.profile(user)
    let results = await fanOutSearch(query, over: backends, limit: 10, clock: clock, log: log)
    log.info("answered with \(results.count) results")
    return (profile, results)
  }
}
// endregion: service-handler
