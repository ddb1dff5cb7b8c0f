import Testing

@testable import AsyncFlow

// A copy of Tests/AsyncFlowTests/Support/BoundedWait.swift: test targets do not share sources.

/// The scheduler yields a bounded wait gives the code under test before it gives up. A healthy
/// wait in these tests ends within a few hundred; the budget is counted, not timed, so a loaded
/// machine slows it down as much as the code it waits for.
let waitBudget = 200_000

/// The value of `task`, awaited within `yields` scheduler yields instead of the suite's time limit:
/// `nil`, and a test issue naming `what`, when the task has not ended by then. The task is left
/// running (cancel it if it should stop).
///
/// `await task.value` cannot be cancelled, so a deadlock in the code under test hangs it past the
/// time limit (and a deadlock that holds the pool's threads starves the time limit too). Here a
/// watcher of its own awaits the task, and the test polls what it saw between yields: giving up
/// leaves only the watcher behind.
///
/// ```swift
/// let consumer = Task { await collect(flow).elements }
/// #expect(await bounded(consumer) == [1, 2])
/// ```
@discardableResult
func bounded<Success: Sendable, Failure: Error>(
  _ task: Task<Success, Failure>, _ what: @autoclosure () -> String = "the task", yields: Int = waitBudget,
  sourceLocation: SourceLocation = #_sourceLocation
) async throws(Failure) -> Success? {
  let outcome = LockedState<Result<Success, Failure>?>(nil)
  Task {
    let result = await task.result
    outcome.withLock { $0 = result }
  }
  for _ in 0..<yields {
    if let result = outcome.withLock({ $0 }) { return try result.get() }
    if Task.isCancelled { break }
    await Task.yield()
  }
  if let result = outcome.withLock({ $0 }) { return try result.get() }
  Issue.record(
    "\(what()) did not end within \(yields) scheduler yields\(Task.isCancelled ? " (the test was cancelled)" : ""): the code under test is stuck",
    sourceLocation: sourceLocation)
  return nil
}

/// Runs `wait` (a barrier such as `gate.entered()`, `calls.calls(count:)`, `clock.sleepers(count:)`,
/// `signal.wait()`, or a loop over a sequence that only the code under test ends) within `yields`
/// scheduler yields: its result, or `nil` and a test issue naming `what` when it has not returned
/// by then. Giving up cancels it, which ends the package's barriers at once.
///
/// ```swift
/// await bounded("the inner ended") { await innerEnded.wait() }
/// ```
@discardableResult
func bounded<T: Sendable>(
  _ what: @autoclosure () -> String, yields: Int = waitBudget, sourceLocation: SourceLocation = #_sourceLocation,
  _ wait: @escaping @Sendable () async -> T
) async -> T? {
  let waiter = Task { await wait() }
  let result = await bounded(waiter, what(), yields: yields, sourceLocation: sourceLocation)
  if result == nil { waiter.cancel() }
  return result
}
