import AsyncFlowTesting
import Synchronization
import Testing

@testable import AsyncFlow

/// "A run superseded or cancelled before its operation begins never begins it": the check that
/// decides runs where the operation runs, after the hop to its actor. Found by a user: two entry
/// points in one main-actor turn (`category = "b"; retry()`) sent the request twice. The slot's task
/// began on another thread while the turn still ran, passed a nonisolated `Task.isCancelled` check
/// there, and then hopped to the main actor, where the operation began although the same turn had
/// cancelled it (78 of 500 rounds of the first test with the check put back).
@Suite("TaskSlots: a superseded run never begins", .timeLimit(.minutes(1)))
struct TaskSlotsBeginTests {
  /// In an app, with no test clock: a fresh `TaskSlots` each round, both runs in one main-actor turn.
  @Test @MainActor func aRunSupersededInTheSameMainActorTurnNeverBegins() async {
    var doubled = 0
    for _ in 0..<1_000 {
      let ran = Mutex<[Int]>([])
      let slots = TaskSlots<String>()
      let first = slots.run("a") { @MainActor in ran.withLock { $0.append(1) } }
      let second = slots.run("a") { @MainActor in ran.withLock { $0.append(2) } }
      await bounded(run: first, "the superseded run")
      await bounded(run: second, "the latest run")
      if ran.withLock({ $0 }) != [2] { doubled += 1 }
    }
    #expect(doubled == 0, "\(doubled) of 1,000 rounds began the superseded operation")
  }

  /// The same with the run token, and with a run cancelled by `cancel(_:)` in the turn that started it.
  @Test @MainActor func aRunCancelledInTheTurnThatStartedItNeverBegins() async {
    var begun = 0
    for _ in 0..<1_000 {
      let ran = Mutex(0)
      let slots = TaskSlots<String>()
      let task = slots.run("a") { @MainActor _ in ran.withLock { $0 += 1 } }
      slots.cancel("a")
      await bounded(run: task, "the cancelled run")
      begun += ran.withLock { $0 }
    }
    #expect(begun == 0, "\(begun) of 1,000 cancelled runs began their operation")
  }

  /// A global actor other than the main actor: the check runs on that actor too.
  @Test @ScreenActor func aRunSupersededOnItsOwnActorNeverBegins() async {
    var doubled = 0
    for _ in 0..<1_000 {
      let ran = Mutex<[Int]>([])
      let slots = TaskSlots<String>()
      let first = slots.run("a") { @ScreenActor in ran.withLock { $0.append(1) } }
      let second = slots.run("a") { @ScreenActor in ran.withLock { $0.append(2) } }
      await bounded(run: first, "the superseded run")
      await bounded(run: second, "the latest run")
      if ran.withLock({ $0 }) != [2] { doubled += 1 }
    }
    #expect(doubled == 0, "\(doubled) of 1,000 rounds began the superseded operation")
  }
}

@globalActor actor ScreenActor {
  static let shared = ScreenActor()
}

/// The same promise on the test clock, where the slot's tasks run on the clock's executor.
@Suite("TaskSlots on the clock: a superseded run never begins", .onTestClock, .timeLimit(.minutes(1)))
@MainActor
struct TaskSlotsBeginOnClockTests {
  @Test func aRunSupersededInTheSameMainActorTurnSendsNoRequest() async {
    var doubled = 0
    for _ in 0..<1_000 {
      let clock = TestClock.current
      let calls = ControlledCalls<Int, Void>()
      let slots = TaskSlots<String>()
      slots.run("a") { @MainActor in await calls.call(1) }
      slots.run("a") { @MainActor in await calls.call(2) }
      await calls.calls(count: 1)
      await clock.runCurrent()
      if calls.arguments != [2] { doubled += 1 }
      for call in calls.waitingCalls { calls.respond(toCall: call.index, with: ()) }
      await clock.runCurrent()
    }
    #expect(doubled == 0, "\(doubled) of 1,000 rounds sent the superseded request")
  }
}
