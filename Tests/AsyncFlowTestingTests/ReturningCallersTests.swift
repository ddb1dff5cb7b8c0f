import AsyncFlow
import AsyncFlowTesting
import Testing

/// A task executor that runs each job as it comes, except while held: it stands for the global
/// executor, through which a resumed continuation passes before it hops to its caller's actor, on a
/// machine that leaves that hop waiting for a thread. A task that prefers it takes that hop here
/// instead, so the test decides how late it comes.
private final class HeldHops: TaskExecutor, Sendable {
  private struct State {
    var isHeld = false
    var held: [UnownedJob] = []
  }

  private let state = LockedState(State())

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let runNow = state.withLock { state in
      if state.isHeld { state.held.append(job) }
      return !state.isHeld
    }
    if runNow { run(job) }
  }

  func hold() { state.withLock { $0.isHeld = true } }

  func release() {
    let held = state.withLock { state in
      state.isHeld = false
      defer { state.held = [] }
      return state.held
    }
    for job in held { run(job) }
  }

  private func run(_ job: UnownedJob) {
    Task.detached { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
  }
}

/// What a `@MainActor` model shows: written by the caller once it has its answer.
@MainActor
private final class Shown {
  var value: String?
  var settled = false

  func show(_ calls: ControlledCalls<String, String>) async { value = await calls.call("s") }

  func show(after gate: Gate) async {
    await gate.wait()
    value = "released"
  }

  func show(afterSleepingOn clock: TestClock) async {
    do {
      try await clock.sleep(for: .seconds(1))
      value = "woke"
    } catch {
      value = "cancelled"
    }
  }
}

/// Holds the way back of the caller that `letGo` answers while `runCurrent()` runs, and frees it
/// once three idle clocks on the same main actor have settled after it, one after the other: the
/// bound is counted in the settling rule's own rounds (eight quiet main-actor rounds each), so a
/// clock that did not count the caller on its way back has returned by then however loaded the
/// machine is, and a clock that does keeps waiting. Returns whether the clock returned while the
/// way back was held, and what the caller had when it returned.
@MainActor
private func settleWhileHeld(_ hops: HeldHops, _ shown: Shown, letGo: () -> Void) async -> Settled {
  let clock = TestClock.current
  hops.hold()
  letGo()
  let settling = Task { @MainActor in
    await clock.runCurrent()
    shown.settled = true
    return shown.value
  }
  // From a task of its own, off the clock's executor: the test's own task prefers it, so each of
  // its hops would be a job there, and the clock never settles while jobs keep coming.
  await Task { @MainActor in
    for _ in 0..<3 where !shown.settled { await TestClock().runCurrent() }
  }.value
  let returnedWhileHeld = shown.settled
  hops.release()
  return Settled(returnedWhileHeld: returnedWhileHeld, shown: await bounded(settling, "runCurrent()") ?? nil)
}

private struct Settled {
  var returnedWhileHeld: Bool
  /// What the caller had written when `runCurrent()` returned.
  var shown: String?
}

/// `runCurrent()` returns once an answer (or a gate's release) has reached its caller, however late
/// the caller's way back runs. A `@MainActor` caller that is not on the clock's executor (a
/// model's own `Task { }`) gets its answer through one hop on the global executor, which settling
/// does not see: under load the clock returned before the model had written the answer, and the
/// explorer replayed a failing order differently (4 replays in 10 with two busy cores).
@Suite("Answers on their way back", .hangGuard)
@MainActor
struct ReturningCallersTests {
  @Test(.onTestClock) func runCurrentWaitsUntilAnAnsweredCallIsBackWithItsCaller() async {
    let hops = HeldHops()
    let calls = ControlledCalls<String, String>()
    let shown = Shown()
    let caller = Task(executorPreference: hops) { await shown.show(calls) }
    await calls.parked(count: 1)
    let settled = await settleWhileHeld(hops, shown) {
      calls.respond(toCall: 0, with: "results for s")
    }
    #expect(!settled.returnedWhileHeld, "runCurrent() returned while the answer was on its way to its caller")
    #expect(settled.shown == "results for s")
    await bounded(caller, "the caller")
  }

  @Test(.onTestClock) func runCurrentWaitsUntilACallAnsweredByItsCancellationIsBack() async {
    let hops = HeldHops()
    let calls = ControlledCalls<String, String>(whenCancelled: "cancelled")
    let shown = Shown()
    let caller = Task(executorPreference: hops) { await shown.show(calls) }
    await calls.parked(count: 1)
    let settled = await settleWhileHeld(hops, shown) { caller.cancel() }
    #expect(!settled.returnedWhileHeld, "runCurrent() returned while the cancelled call was on its way to its caller")
    #expect(settled.shown == "cancelled")
    await bounded(caller, "the caller")
  }

  @Test(.onTestClock) func runCurrentWaitsUntilAReleasedCallerIsBack() async {
    let hops = HeldHops()
    let gate = Gate()
    let shown = Shown()
    let caller = Task(executorPreference: hops) { await shown.show(after: gate) }
    await gate.entered()
    let settled = await settleWhileHeld(hops, shown) { gate.release() }
    #expect(!settled.returnedWhileHeld, "runCurrent() returned while the released caller was on its way back")
    #expect(settled.shown == "released")
    await bounded(caller, "the caller")
  }

  /// A sleeper is a wait of the clock's own: cancelled, its task is on its way back until it runs
  /// again, wherever that is.
  @Test(.onTestClock) func runCurrentWaitsUntilACancelledSleeperIsBack() async {
    let hops = HeldHops()
    let clock = TestClock.current
    let shown = Shown()
    let sleeper = Task(executorPreference: hops) { await shown.show(afterSleepingOn: clock) }
    // Off the clock until it sleeps: the clock cannot see a task on its way to its first wait, so
    // `sleepers(count:)` would give up once the clock is idle, which it may be before then.
    await bounded(
      Task.detached { while clock.pendingSleepers == 0, !Task.isCancelled { await Task.yield() } }, "the sleep")
    let settled = await settleWhileHeld(hops, shown) { sleeper.cancel() }
    #expect(!settled.returnedWhileHeld, "runCurrent() returned while the cancelled sleeper was on its way back")
    #expect(settled.shown == "cancelled")
    await bounded(sleeper, "the sleeper")
  }
}
