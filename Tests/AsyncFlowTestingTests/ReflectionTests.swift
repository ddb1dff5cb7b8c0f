import AsyncFlow
import AsyncFlowTesting
import Testing

/// One public type in one state: how to bring it there on `clock`, what its reflection must show,
/// and how to let its tasks go afterwards.
struct ReflectedCase: Sendable, CustomTestStringConvertible {
  var name: String
  var shows: [String]
  var make: @MainActor @Sendable (TestClock) async -> (value: Any, end: @MainActor () async -> Void)

  var testDescription: String { name }
}

/// An app model holding one of the library's objects: what Swift Testing reflects, children
/// included, when an expectation on the model fails.
private struct HoldingModel: Equatable {
  var held: Any
  var version: Int
  static func == (lhs: Self, rhs: Self) -> Bool { lhs.version == rhs.version }
}

private func noEnd() async {}

/// A log with entries, written by a slot's run.
@MainActor private func logWithEntries(_ clock: TestClock) async -> RequestLog<String> {
  let log = RequestLog<String>()
  let slots = TaskSlots<String>(log: log)
  await clock.onSchedule { _ = slots.run("articles", trigger: "appear") {} }
  await clock.runCurrent()
  return log
}

private let reflectedCases: [ReflectedCase] = [
  ReflectedCase(name: "RequestLog, empty", shows: ["capacity: 1000", "entries: 0 elements"]) { _ in
    (RequestLog<String>(), noEnd)
  },
  ReflectedCase(
    name: "RequestLog, with entries", shows: ["#1 articles [appear] started", "#1 articles [appear] finished"]
  ) {
    (await logWithEntries($0), noEnd)
  },
  ReflectedCase(name: "TaskSlots, idle", shows: ["runningCount: 0"]) { _ in (TaskSlots<String>(), noEnd) },
  ReflectedCase(
    name: "TaskSlots, busy, with a log", shows: ["runningCount: 1", "\"articles\"", "#1 articles [load] started"]
  ) {
    clock in
    let gate = Gate()
    let slots = TaskSlots<String>(log: RequestLog())
    await clock.onSchedule { _ = slots.run("articles", trigger: "load") { await gate.wait() } }
    await gate.entered()
    return (
      slots,
      {
        gate.release()
        await clock.runCurrent()
      }
    )
  },
  ReflectedCase(name: "SingleFlight, idle", shows: ["inFlight: 0 elements"]) { _ in
    (SingleFlight<String, Int, Never>(), noEnd)
  },
  ReflectedCase(name: "SingleFlight, one run with two callers", shows: ["token: run #1, 2 callers", "#1 token"]) {
    clock in
    let gate = Gate()
    let flight = SingleFlight<String, Int, Never>(log: RequestLog())
    let callers = (0..<2).map { _ in
      clock.task {
        await flight.run("token") {
          await gate.wait()
          return 1
        }
      }
    }
    await gate.entered()
    return (
      flight,
      {
        gate.release()
        for caller in callers { _ = await clock.value(of: caller) }
      }
    )
  },
  ReflectedCase(name: "Generation", shows: ["Generation"]) { _ in
    var generation = Generation()
    _ = generation.advance()
    return (generation, noEnd)
  },
  ReflectedCase(name: "PassthroughFlow, no subscriber", shows: ["subscriberCount: 0", "ended: \"no\""]) { _ in
    (PassthroughFlow<Int, Never>(), noEnd)
  },
  ReflectedCase(name: "PassthroughFlow, buffered elements", shows: ["subscriberCount: 1", "buffered: 3"]) { clock in
    let subject = PassthroughFlow<Int, Never>()
    var iterator: HotFlowIterator<Int, Never>? = subject.makeAsyncIterator()
    for value in 1...3 { subject.send(value) }
    return (
      subject,
      {
        iterator = nil
        _ = iterator
      }
    )
  },
  // No mirror of its own: reflected through the subject's storage, its lock and its queues.
  ReflectedCase(name: "HotFlowIterator, with buffered elements", shows: ["HotFlowIterator", "1", "2"]) { _ in
    let subject = PassthroughFlow<Int, Never>()
    let iterator = subject.makeAsyncIterator()
    subject.send(1)
    subject.send(2)
    return (iterator, noEnd)
  },
  ReflectedCase(name: "PassthroughFlow, failed", shows: ["ended: \"failed\""]) { _ in
    let subject = PassthroughFlow<Int, SampleFailure>()
    subject.fail(SampleFailure())
    return (subject, noEnd)
  },
  ReflectedCase(name: "CurrentValueFlow, with a sink", shows: ["value: 7", "subscriberCount: 1"]) { clock in
    let subject = CurrentValueFlow(7)
    let subscription = subject.sink { _ in }
    await clock.runCurrent()
    return (subject, { subscription.cancel() })
  },
  ReflectedCase(name: "CurrentValueFlow, finished", shows: ["ended: \"finished\""]) { _ in
    let subject = CurrentValueFlow(7)
    subject.finish()
    return (subject, noEnd)
  },
  ReflectedCase(name: "share, replaying", shows: ["subscriberCount: 1", "replayed: 1"]) { clock in
    let upstream = PassthroughFlow<Int, Never>()
    let share = upstream.shareFlow(replay: 1)
    let subscription = share.sink { _ in }
    await upstream.subscribers(count: 1)
    upstream.send(1)
    await clock.runCurrent()
    return (share, { subscription.cancel() })
  },
  ReflectedCase(name: "FlowSubscription, live and cancelled", shows: ["isCancelled: true", "receiver"]) { _ in
    let subscription = PassthroughFlow<Int, Never>().sink { _ in }
    subscription.cancel()
    return (subscription, noEnd)
  },
  ReflectedCase(name: "TestClock, with a sleeper", shows: ["now: \"0.0 seconds\"", "pendingSleepers: 1"]) { clock in
    let sleeper = clock.task { try? await clock.sleep(for: .seconds(5)) }
    await clock.sleepers(count: 1)
    return (
      clock,
      {
        sleeper.cancel()
        _ = await clock.value(of: sleeper)
      }
    )
  },
  ReflectedCase(name: "ControlledCalls, one call waiting", shows: ["callsMade: 1", "waiting: 1 element", "call 0"]) {
    clock in
    let calls = ControlledCalls<String, Int>()
    let caller = clock.task { await calls.call("swift") }
    await calls.calls(count: 1)
    return (
      calls,
      {
        calls.respond(toCall: 0, with: 1)
        _ = await clock.value(of: caller)
      }
    )
  },
  ReflectedCase(name: "Gate, one parked", shows: ["parkedCount: 1"]) { clock in
    let gate = Gate()
    let caller = clock.task { await gate.wait() }
    await gate.entered()
    return (
      gate,
      {
        gate.release()
        _ = await clock.value(of: caller)
      }
    )
  },
  // Its storage holds a consumer's continuation, parked in `next()` on another iterator.
  ReflectedCase(name: "HotFlowIterator, beside a parked consumer", shows: ["consumer", "some"]) { clock in
    let subject = PassthroughFlow<Int, Never>()
    let parked = clock.task { () async -> Int? in
      var iterator = subject.makeAsyncIterator()
      return await iterator.next()
    }
    await subject.subscribers(count: 1)
    await clock.runCurrent()
    return (
      subject.makeAsyncIterator(),
      {
        subject.finish()
        _ = await clock.value(of: parked)
      }
    )
  },
  ReflectedCase(name: "Flow and an operator", shows: ["AsyncTimedFlowSequence"]) { _ in
    (Flow.sequence([1, 2]).map { $0 + 1 }.debounceFlow(for: .seconds(1), clock: ContinuousClock()), noEnd)
  },
  ReflectedCase(
    name: "ExplorationRun, with a stub and a gate", shows: ["ExplorationRun", "name: \"calls\"", "parkedCount: 0"]
  ) {
    _ in
    let captured = CapturedRun()
    _ = await Exploration("capture") { run in
      let calls = ControlledCalls<Int, Int>()
      run.answer(calls, as: "calls") { $0 }
      run.gate(Gate(), as: "gate")
      captured.run = run
      return CapturedRun()
    }.explore()
    return (captured.run! as Any, noEnd)
  },
  ReflectedCase(name: "Exploration, ExplorationReport, ExplorationBudget", shows: ["Exploration", "scenario"]) { _ in
    let exploration = Exploration("scenario") { _ in CapturedRun() }.state { _ in "" }
    let report = await exploration.explore(ExplorationBudget(orders: 1))
    return ([exploration as Any, report, ExplorationBudget()], noEnd)
  },
  ReflectedCase(name: "Marbles, MarbleEvent", shows: ["Marbles", "tick: 0"]) { clock in
    ([Marbles(clock: clock) as Any, MarbleEvent(tick: 0, symbol: .finish)], noEnd)
  },
  ReflectedCase(
    name: "values: LoadState, FlowEvent, FlowCompletion, policies, clocks", shows: ["loading", "latestWins"]
  ) {
    clock in
    let values: [Any] = [
      LoadState<[String], SampleFailure>.loading, FlowEvent<Int, SampleFailure>.element(1),
      FlowCompletion<SampleFailure>.finished, SlotPolicy.latestWins, FlowBufferingPolicy.bufferingNewest(2),
      FlowReplayScope.acrossRestarts, AnyFlowClock(clock), FlowTimeoutError(), clock.now, Generation().current,
      RequestLog<String>.Entry(run: 3, id: "articles", trigger: "load", event: .superseded(by: 4)),
      ControlledCall(index: 0, argument: "swift"),
    ]
    return (values, noEnd)
  },
]

/// Holds the run the explorer hands to a scenario's `model` closure, and is that closure's model.
@MainActor private final class CapturedRun {
  var run: ExplorationRun?
}

struct SampleFailure: Error {}

@Suite("Every public type reflects", .hangGuard)
@MainActor
struct ReflectionTests {
  /// `Mirror`, `dump`, `String(describing:)` and `String(reflecting:)` on the value, in its state:
  /// they return, and `dump` shows the counts and state the case names.
  @Test(arguments: reflectedCases)
  func reflectsWithoutCrashingAndShowsItsState(_ reflected: ReflectedCase) async {
    let clock = TestClock()
    let (value, end) = await reflected.make(clock)
    _ = Mirror(reflecting: value).children.map { "\($0.label ?? "") \($0.value)" }
    var dumped = ""
    dump(value, to: &dumped)
    _ = String(describing: value)
    _ = String(reflecting: value)
    // What each type shows, for the record.
    print("\(reflected.name):\n\(dumped)")
    for shown in reflected.shows {
      #expect(dumped.contains(shown), "\(reflected.name): \(dumped)")
    }
    await end()
  }

  /// A failing `#expect` on a model that holds the value: Swift Testing reflects the operands and
  /// their children, and the failure is recorded (the known issue) instead of stopping the process.
  @Test(arguments: reflectedCases)
  func aFailingExpectationOnAModelHoldingItIsRecorded(_ reflected: ReflectedCase) async {
    let clock = TestClock()
    let (value, end) = await reflected.make(clock)
    let model = HoldingModel(held: value, version: 1)
    withKnownIssue {
      #expect(model == HoldingModel(held: value, version: 2))
    }
    await end()
  }
}
