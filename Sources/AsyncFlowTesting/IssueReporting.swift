#if canImport(Testing)
  import Testing
#endif

/// Where the test called a clock's wait, a barrier or a stub's answer: the location of the issue
/// that call records.
typealias SourceCaller = (fileID: String, filePath: String, line: Int, column: Int)

/// `1 call`, `2 calls`: `count` of `noun`, as the messages say it.
func counted(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "s")" }

/// Records `message` as a test issue at `caller` (the current test's own location without one),
/// or prints it outside Swift Testing: a wrong step of a test fails that test, not the process.
func recordIssue(_ message: String, at caller: SourceCaller? = nil) {
  #if canImport(Testing)
    if let caller {
      Issue.record(
        Comment(rawValue: message),
        sourceLocation: SourceLocation(
          fileID: caller.fileID, filePath: caller.filePath, line: caller.line, column: caller.column))
    } else { Issue.record(Comment(rawValue: message)) }
  #else
    if let caller { print("\(caller.fileID):\(caller.line): \(message)") } else { print(message) }
  #endif
}
