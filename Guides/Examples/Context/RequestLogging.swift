import AsyncFlow

// The server-shaped example of Guides/Guarantees.md, "Context": a request's ID, bound by its
// handler, reaches a logging helper inside the `Flow.single` that a `switchToLatestFlow` starts.
// `RequestLoggingTests` runs it on real threads, two requests at once, and on a test clock.

// region: request-id-logging
/// The ID of the request that a server is handling, bound by its handler around everything the
/// request does.
public enum RequestContext {
  @TaskLocal public static var requestID = "-"
}

/// A logging helper that knows nothing of requests: it reads the ID from the task it runs in.
public final class ServerLog: Sendable {
  private let lines = LockedState<[String]>([])

  public init() {}

  public func info(_ message: String) {
    let line = "[\(RequestContext.requestID)] \(message)"
    lines.withLock { $0.append(line) }
  }

  public var written: [String] { lines.withLock { $0 } }
}

/// A live search endpoint: the client sends queries as the user types, and each query supersedes
/// the one before. Each search runs in the task that `switchToLatestFlow` starts for its inner,
/// and it logs with the ID of the request whose handler iterates the results.
public func searchResults(
  for queries: some AsyncSequence<String, Never> & Sendable, log: ServerLog,
  search: @escaping @Sendable (String) async -> [String]
) -> some AsyncSequence<[String], Never> & Sendable {
  queries.switchToLatestFlow { query in
    Flow.single {
      log.info("searching \(query)")
      let results = await search(query)
      log.info("\(results.count) results for \(query)")
      return results
    }
  }
}

/// The request's handler: binds the request's ID, then streams the results to the client.
public func handleSearchRequest(
  id: String, queries: some AsyncSequence<String, Never> & Sendable, log: ServerLog,
  search: @escaping @Sendable (String) async -> [String], send: (_ results: [String]) async -> Void
) async {
  await RequestContext.$requestID.withValue(id) {
    log.info("request started")
    for await results in searchResults(for: queries, log: log, search: search) { await send(results) }
    log.info("request ended")
  }
}
// endregion: request-id-logging
