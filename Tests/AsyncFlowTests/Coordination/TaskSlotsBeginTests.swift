import AsyncFlowTesting
import Synchronization
import Testing

@testable import AsyncFlow

/// "A run superseded or cancelled before its operation begins never begins it": the check that
/// decides runs where the operation runs, after the hop to its actor. Found by a user: two entry
/// points in one main-actor turn (`category = "b"; retry()`) sent the request twice. The slot's task
/// began on another thread while the turn still ran, passed a nonisolated `Task.isCancelled` check
/// there, and then hopped to the main actor, where the operation began although the same turn had
/// cancelled it. With that check put back, the first test below saw 332 and 561 of 1,000 rounds
/// begin the superseded operation, the second 457 and 717 cancelled runs begin, the third 36 and
/// 87; the clock's test failed 65 of 1,000 rounds before the clock ran its jobs in turn with the
/// test body, and cannot fail that way since.
@Suite("TaskSlots: a superseded run never begins", .hangGuard)
struct TaskSlotsBeginTests {
  /// In an app, with no test clock: a fresh `TaskSlots` each round, both runs in one main-actor
  /// turn. Rounds come in batches of 100 per turn, each batch's runs awaited at its end, so that
  /// the test stays well inside its minute under ThreadSanitizer.
  @Test @MainActor func aRunSupersededInTheSameMainActorTurnNeverBegins() async {
    let doubled = await supersededRounds { ran, slots in
      [
        slots.run("a") { @MainActor in ran.append(1) },
        slots.run("a") { @MainActor in ran.append(2) },
      ]
    }
    #expect(doubled == 0, "\(doubled) of 1,000 rounds began the superseded operation")
  }

  /// The same with the run token, and with a run cancelled by `cancel(_:)` in the turn that started it.
  @Test @MainActor func aRunCancelledInTheTurnThatStartedItNeverBegins() async {
    let began = await supersededRounds(expecting: []) { ran, slots in
      defer { slots.cancel("a") }
      return [slots.run("a") { @MainActor _ in ran.append(1) }]
    }
    #expect(began == 0, "\(began) of 1,000 cancelled runs began their operation")
  }

  /// A global actor other than the main actor: the check runs on that actor too.
  @Test @ScreenActor func aRunSupersededOnItsOwnActorNeverBegins() async {
    let doubled = await supersededRounds { ran, slots in
      [
        slots.run("a") { @ScreenActor in ran.append(1) },
        slots.run("a") { @ScreenActor in ran.append(2) },
      ]
    }
    #expect(doubled == 0, "\(doubled) of 1,000 rounds began the superseded operation")
  }

  /// 1,000 rounds in 10 batches of one turn each: `start` makes a round's runs on a fresh
  /// `TaskSlots` (kept until the batch ends: releasing it would cancel them), and a round counts
  /// when its operations did not run exactly `expected`.
  private func supersededRounds(
    isolation: isolated (any Actor)? = #isolation, expecting expected: [Int] = [2],
    _ start: (EventLog<Int>, TaskSlots<String>) -> [Task<Void, Never>?]
  ) async -> Int {
    var wrong = 0
    for _ in 0..<10 {
      var rounds: [(ran: EventLog<Int>, slots: TaskSlots<String>, runs: [Task<Void, Never>?])] = []
      for _ in 0..<100 {
        let (ran, slots) = (EventLog<Int>(), TaskSlots<String>())
        rounds.append((ran, slots, start(ran, slots)))
      }
      let tasks = rounds.flatMap { $0.runs }.compactMap { $0 }
      // Bounded: the suite's time limit ends a wait for a run that hangs.
      await bounded("the batch's runs") { for task in tasks { await task.value } }
      wrong += rounds.count { $0.ran.all != expected }
    }
    return wrong
  }
}

@globalActor actor ScreenActor {
  static let shared = ScreenActor()
}

/// The same promise on the test clock, where the slot's tasks run on the clock's executor: 1,000
/// fresh `TaskSlots`, each with two runs in the same turn, then one barrier for the 1,000 requests.
@Suite("TaskSlots on the clock: a superseded run never begins", .onTestClock, .hangGuard)
@MainActor
struct TaskSlotsBeginOnClockTests {
  @Test func aRunSupersededInTheSameMainActorTurnSendsNoRequest() async {
    let clock = TestClock.current
    let calls = ControlledCalls<Int, Void>()
    var slots: [TaskSlots<String>] = []
    for _ in 0..<1_000 {
      let pair = TaskSlots<String>()
      pair.run("a") { @MainActor in await calls.call(1) }
      pair.run("a") { @MainActor in await calls.call(2) }
      slots.append(pair)
    }
    await calls.calls(count: 1_000)
    await clock.runCurrent()
    let superseded = calls.arguments.count { $0 == 1 }
    #expect(superseded == 0 && calls.arguments.count == 1_000, "\(superseded) of 1,000 rounds sent the superseded request")
    for call in calls.waitingCalls { calls.respond(toCall: call.index, with: ()) }
    await clock.runCurrent()
    #expect(slots.allSatisfy { $0.runningCount == 0 })
  }
}
