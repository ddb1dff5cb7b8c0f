import AsyncFlow

/// AsyncFlow's counting waits (a subject's or a share's `subscribers(count:)`) reach the clock's
/// barrier through this: on a test clock they give up when the clock is idle, as
/// ``TestClock/sleepers(count:fileID:filePath:line:column:)`` and the stubs' barriers do.
extension TestExecutor: FlowBarrierExecutor {
  func barrier(
    _ what: @escaping @Sendable () -> String, isMet: @escaping @Sendable () -> Bool,
    wait: @escaping @Sendable () async -> Void, fileID: String, filePath: String, line: Int, column: Int
  ) async {
    await barrier(
      what, isMet: isMet, wait: wait, at: SourceCaller(fileID: fileID, filePath: filePath, line: line, column: column))
  }
}
