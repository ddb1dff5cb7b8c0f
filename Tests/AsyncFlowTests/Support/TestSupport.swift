@testable import AsyncFlow
import AsyncFlowTesting

struct TestError: Error, Hashable {
  var id = 0
}

/// A one-shot event: `wait()` returns once `fire()` has been called, before or after.
typealias Signal = CompletionSignal

/// A thread-safe log of events, for asserting the order in which concurrent code ran.
final class EventLog<Event: Sendable>: Sendable {
  private let events = LockedState<[Event]>([])

  func append(_ event: Event) { events.withLock { $0.append(event) } }

  var all: [Event] { events.withLock { $0 } }
}

/// Collects every element of `sequence`, and the failure it ended with.
func collect<S: AsyncSequence>(_ sequence: S) async -> (elements: [S.Element], failure: S.Failure?) {
  var elements: [S.Element] = []
  var iterator = sequence.makeAsyncIterator()
  do throws(S.Failure) {
    while let element = try await iterator.next(isolation: #isolation) { elements.append(element) }
    return (elements, nil)
  } catch {
    return (elements, error)
  }
}

/// Runs `body` in a task that is cancelled before `body` starts: its result, or `nil` (and an
/// issue) if the test is cancelled first.
@discardableResult
func inCancelledTask<T: Sendable>(
  _ body: @escaping @Sendable () async -> T, fileID: String = #fileID, filePath: String = #filePath,
  line: Int = #line, column: Int = #column
) async -> T? {
  let task = Task {
    withUnsafeCurrentTask { $0?.cancel() }
    return await body()
  }
  return await bounded(task, "the cancelled task", fileID: fileID, filePath: filePath, line: line, column: column)
}

/// `bounded(_:)` for the run that `TaskSlots.run` returns, if it started one (`nil`: nothing to
/// wait for, as `await run?.value` did).
@discardableResult
func bounded<Success: Sendable>(
  run task: Task<Success, Never>?, _ what: String = "the run", fileID: String = #fileID,
  filePath: String = #filePath, line: Int = #line, column: Int = #column
) async -> Success? {
  guard let task else { return nil }
  return await AsyncFlowTesting.bounded(task, what, fileID: fileID, filePath: filePath, line: line, column: column)
}
