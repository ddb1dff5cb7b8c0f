import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// Guarantees.md, "Context": the request ID that a handler binds reaches the logging helper
/// inside the `Flow.single` that `switchToLatestFlow` starts for each query.
@Suite("Request ID logging example", .hangGuard)
struct RequestLoggingTests {
  /// The lines of request `index` in `log`, checked: each names that request's ID, and the queries
  /// it mentions are that request's own.
  private func expectLinesOfRequest(_ index: Int, in log: ServerLog, sourceLocation: SourceLocation = #_sourceLocation)
  {
    let id = "req-\(index)"
    let lines = log.written.filter { $0.hasPrefix("[\(id)] ") }
    #expect(lines.first == "[\(id)] request started", sourceLocation: sourceLocation)
    #expect(lines.last == "[\(id)] request ended", sourceLocation: sourceLocation)
    // The last query is never superseded: its search runs to its end.
    #expect(lines.contains("[\(id)] searching swift\(index)"), "\(lines)", sourceLocation: sourceLocation)
    #expect(lines.contains("[\(id)] 1 results for swift\(index)"), "\(lines)", sourceLocation: sourceLocation)
    let queries = lines.compactMap { $0.split(separator: " ").last }.filter { $0.hasPrefix("sw") }
    #expect(queries.allSatisfy { $0.hasSuffix("\(index)") }, "\(lines)", sourceLocation: sourceLocation)
  }

  /// Two requests at once, on real threads (no test clock: every task is started as in a
  /// server), writing to one log: every line names the request it was written for.
  @Test func twoRequestsAtOnceLogWithTheirOwnIDs() async {
    let log = ServerLog()
    let handlers = (0..<2).map { index in
      Task {
        var sent: [[String]] = []
        await handleSearchRequest(
          id: "req-\(index)", queries: Flow.sequence(["sw\(index)", "swift\(index)"]), log: log, search: { [$0] }
        ) { sent.append($0) }
        return sent
      }
    }
    for (index, handler) in handlers.enumerated() {
      #expect(await bounded(handler, "request \(index)")?.last == ["swift\(index)"])
    }
    #expect(!log.written.contains { $0.hasPrefix("[-]") }, "\(log.written)")
    for index in 0..<2 { expectLinesOfRequest(index, in: log) }
  }

  /// The same request on a test clock's schedule.
  @Test(.onTestClock) func aRequestLogsWithItsIDOnATestClock() async {
    let clock = TestClock.current
    let log = ServerLog()
    let handler = clock.task {
      await handleSearchRequest(
        id: "req-0", queries: Flow.sequence(["sw0", "swift0"]), log: log, search: { [$0] }
      ) { _ in }
    }
    #expect(await clock.value(of: handler) != nil)
    #expect(log.written.allSatisfy { $0.hasPrefix("[req-0] ") }, "\(log.written)")
    expectLinesOfRequest(0, in: log)
  }
}
