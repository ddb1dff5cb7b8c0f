import AsyncFlow

/// The value of `task`, or `nil` and a test issue naming `what` if the waiting test is cancelled
/// first: an `await task.value` that a test time limit can end.
///
/// `await task.value` ignores the waiting task's cancellation, so when the code under test never
/// ends, a `.timeLimit` trait reports the overrun but cannot stop the test: it hangs the whole run.
/// Here the wait is a suspension that whichever comes first ends (the task's end, or the test's
/// cancellation, which `.timeLimit` delivers), so it costs nothing while it waits: no polling, no
/// clock. Giving up leaves `task` running (cancel it if it should stop). A throwing task's error is
/// rethrown. Where the work runs on a ``TestClock``, ``TestClock/value(of:fileID:filePath:line:column:)``
/// fails sooner: as soon as the clock's schedule is idle.
///
/// ```swift
/// @Suite(.timeLimit(.minutes(1))) struct SearchTests {
///   @Test func collectsTheFlow() async {
///     let collected = Task { await Flow.sequence([1, 2]).reduce(into: []) { $0.append($1) } }
///     #expect(await bounded(collected, "the collected flow") == [1, 2])
///   }
/// }
/// ```
@discardableResult
public func bounded<Success: Sendable, Failure: Error>(
  _ task: Task<Success, Failure>, _ what: String = "the task", fileID: String = #fileID,
  filePath: String = #filePath, line: Int = #line, column: Int = #column
) async throws(Failure) -> Success? {
  // Which came first, the end of `task` (`ended` 1) or the waiting test's cancellation, told by a
  // wait that returns at either.
  let race = LockedState((ended: 0, watchers: CountWatchers()))
  // The watcher is the only way to see `task` end without awaiting it here; it holds no thread
  // while `task` runs. On a test clock's schedule it runs there, so settling waits for its wake-up.
  let watcher = Task(executorPreference: FlowScheduling.executor) { () async -> Result<Success, Failure> in
    let result = await task.result
    for waiter in race.withLock({ race in race.ended = 1; return race.watchers.reached(1) }) { waiter.resume() }
    return result
  }
  await race.waitUntil(count: 1, of: \.ended, watchers: \.watchers)
  // The value comes from the watcher's end (which follows its wake-up of this wait at once), not
  // through the wake-up: a continuation resumed before its task has suspended lets the task go on
  // by the runtime's fast path, with no order that ThreadSanitizer sees. Everything `task` did, and
  // the watcher's resume itself, then looked unordered with what the test did next: a data race
  // reported in the test's next wait. A task's end is ordered for it, as `await task.value` was.
  if race.withLock({ $0.ended == 1 }) { return try await watcher.value.get() }
  recordIssue(
    "\(what) did not end before the waiting test was cancelled (by its time limit?): the code under test is stuck",
    at: (fileID, filePath, line, column))
  return nil
}

/// Runs `wait` (a loop over a sequence that only the code under test ends, a barrier of a stub of
/// your own) until it returns or the waiting test is cancelled, whichever comes first: its result,
/// or `nil` and a test issue naming `what`. Giving up cancels `wait`.
///
/// `wait` runs in a task of its own, so a wait that ignores cancellation cannot hold the test past
/// its `.timeLimit`. AsyncFlowTesting's own barriers (`Gate.entered(count:)`,
/// `ControlledCalls.calls(count:)`, `TestClock.sleepers(count:)`) return when cancelled and need no
/// wrapper. A throwing `wait`'s error is rethrown.
///
/// ```swift
/// @Suite(.timeLimit(.minutes(1))) struct MergeTests {
///   @Test func theLoopEndsWithTheFlow() async {
///     let flow = Flow.sequence([1, 2, 3]).prefix(2)
///     let received = await bounded("the loop over the flow") {
///       var received: [Int] = []
///       for await value in flow { received.append(value) }
///       return received
///     }
///     #expect(received == [1, 2])
///   }
/// }
/// ```
@discardableResult
public func bounded<T: Sendable, Failure: Error>(
  _ what: String, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line,
  column: Int = #column, _ wait: @escaping @Sendable () async throws(Failure) -> T
) async throws(Failure) -> T? {
  // Where the test's own code would run it: on a test clock's schedule, if one is in effect.
  let waiter = Task(executorPreference: FlowScheduling.executor) { () async -> Result<T, Failure> in
    do throws(Failure) { return .success(try await wait()) } catch { return .failure(error) }
  }
  guard let result = await bounded(waiter, what, fileID: fileID, filePath: filePath, line: line, column: column)
  else {
    waiter.cancel()
    return nil
  }
  return try result.get()
}
