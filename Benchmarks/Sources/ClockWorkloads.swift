import AsyncFlow
import AsyncFlowTesting

// MARK: W8: the test clock's settling

/// The floor under settling a main-actor clock: one hop through the main actor (a task enqueued
/// there, awaited), which the clock cannot do without while the main actor's jobs are not its own.
@MainActor
func w8MainActorHop(_ n: Int) async -> (Int, String?) {
  for _ in 0..<n { await Task { @MainActor in }.value }
  return (n, nil)
}

/// `runCurrent()` on a main-actor clock with nothing to run: what every barrier, `advance` and
/// `value(of:)` pays at least once.
@MainActor
func w8RunCurrentIdle(_ n: Int) async -> (Int, String?) {
  let clock = TestClock(isolation: MainActor.shared)
  for _ in 0..<n { await clock.runCurrent() }
  return (n, nil)
}

/// One debounce step as a test writes it: a debounced search started on the clock, `advance` past
/// the debounce, then `value(of:)` for its result.
@MainActor
func w8DebounceStep(_ n: Int) async -> (Int, String?) {
  let clock = TestClock(isolation: MainActor.shared)
  var count = 0
  for _ in 0..<n {
    let results = clock.task {
      await Flow.sequence(["s", "sw", "swift"]).debounceFlow(for: .milliseconds(300), clock: clock)
        .reduce(into: [String]()) { $0.append($1) }
    }
    await clock.advance(by: .seconds(1))
    count += await clock.value(of: results)?.count ?? 0
  }
  blackHole(count)
  return (n, nil)
}
