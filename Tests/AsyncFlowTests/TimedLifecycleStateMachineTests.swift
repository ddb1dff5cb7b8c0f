import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// A timed operator's logic whose answers the test sets: `upstreamElement` queues the element,
/// `upstreamEnded` queues the end, `timerFired` queues 99; both return `displaced`.
private struct FakeLogic: TimedStateMachine {
  typealias Element = Int
  typealias UpstreamFailure = TestError
  typealias Failure = TestError
  typealias Instant = TestClock.Instant

  var log: [String] = []
  var outputs: [TimedOutput<Int, TestError>] = []
  var deadline: Instant?
  var wantsUpstream = true
  /// What `upstreamElement` and `timerFired` say they let go.
  var displaced: Int?
  var isEnding: Bool { outputs.contains { if case .end = $0 { true } else { false } } || endDelivered }
  var hasOutput: Bool { !outputs.isEmpty }
  private var endDelivered = false

  mutating func start(at now: Instant) { log.append("start") }
  mutating func upstreamElement(_ element: Int, at now: Instant) -> Int? {
    log.append("element \(element)")
    outputs.append(.element(element))
    return displaced
  }
  mutating func upstreamEnded(_ failure: TestError?, at now: Instant) -> Int? {
    log.append("ended")
    outputs.append(.end(failure))
    return nil
  }
  mutating func timerFired(at now: Instant) -> Int? {
    log.append("timer")
    outputs.append(.element(99))
    return displaced
  }
  mutating func nextOutput(at now: Instant) -> TimedOutput<Int, TestError>? {
    guard !outputs.isEmpty else { return nil }
    let output = outputs.removeFirst()
    if case .end = output { endDelivered = true }
    return output
  }
}

/// The waiters and the task are plain numbers: consumer 1, pump 2, timer 3, task 4.
private typealias Lifecycle = TimedLifecycleStateMachine<FakeLogic, Int, Int, Int, Int>
private let consumer = 1
private let pump = 2
private let timer = 3
private let task = 4
private let now = TestClock.Instant(offset: .seconds(1))
private let deadline = TestClock.Instant(offset: .seconds(5))

private func idle(_ logic: FakeLogic = FakeLogic()) -> Lifecycle { Lifecycle(logic: logic) }

private func running(
  _ logic: FakeLogic = FakeLogic(), consumer: Int? = nil, pump: Int? = nil, timer: Int? = nil, task: Int? = 4
) -> Lifecycle {
  Lifecycle(logic: logic, state: .running(.init(consumer: consumer, pump: pump, timer: timer, task: task)))
}

/// Running with every waiter parked and the task started.
private func runningParked(_ logic: FakeLogic = FakeLogic()) -> Lifecycle {
  running(logic, consumer: consumer, pump: pump, timer: timer, task: task)
}

private func cancelled(task: Int? = 4) -> Lifecycle { Lifecycle(logic: FakeLogic(), state: .cancelled(task: task)) }
private func finished() -> Lifecycle { Lifecycle(logic: FakeLogic(), state: .finished) }

private func logic(_ configure: (inout FakeLogic) -> Void) -> FakeLogic {
  var logic = FakeLogic()
  configure(&logic)
  return logic
}

extension TimedLifecycleStateMachine where Consumer == Int, Pump == Int, Timer == Int, Work == Int {
  fileprivate var label: String {
    switch state {
    case .idle: "idle"
    case .running(let running):
      "running(consumer: \(running.consumer.map(String.init) ?? "-"), pump: \(running.pump.map(String.init) ?? "-"), "
        + "timer: \(running.timer.map(String.init) ?? "-"), task: \(running.task.map(String.init) ?? "-"))"
    case .cancelled(let task): "cancelled(task: \(task.map(String.init) ?? "-"))"
    case .finished: "finished"
    case .modifying: "modifying"
    }
  }
}

/// The wakeups as text, to compare in one expectation.
private func describe(_ wakeups: Lifecycle.Wakeups) -> String {
  var parts: [String] = []
  if let consumer = wakeups.consumer { parts.append("consumer \(consumer)") }
  if let (pump, proceed) = wakeups.pump { parts.append("pump \(pump) \(proceed ? "pull" : "leave")") }
  if let (timer, deadline) = wakeups.timer { parts.append("timer \(timer) \(deadline.map { "\($0)" } ?? "leave")") }
  if let task = wakeups.cancel { parts.append("cancel \(task)") }
  if let released = wakeups.released { parts.append("release \(released)") }
  return parts.joined(separator: ", ")
}

private func describe(_ action: Lifecycle.NextAction) -> String {
  switch action {
  case .startTask: "startTask"
  case .deliver(let element, let wakeups): "deliver \(element) [\(describe(wakeups))]"
  case .end(let failure, let wakeups, let awaiting):
    "end \(failure.map { "failure \($0.id)" } ?? "finish") [\(describe(wakeups))] awaiting \(awaiting.map(String.init) ?? "-")"
  case .suspend: "suspend"
  }
}

/// Every event of the machine in every state: 5 states (idle, running, cancelled, finished,
/// modifying) x 11 events = 55 cells. 34 are possible and tested below by event; the 21 impossible
/// ones (and two impossible variants of `taskStarted`) stop the process, tested with exit tests.
@Suite("TimedLifecycleStateMachine", .timeLimit(.minutes(1)))
struct TimedLifecycleStateMachineTests {
  // MARK: next (idle, running, cancelled, finished)

  @Test func testNext_whenIdle_startsTheLogicAndTheTask() {
    var machine = idle()
    #expect(describe(machine.next(at: now)) == "startTask")
    #expect(machine.logic.log == ["start"])
    #expect(machine.label == "running(consumer: -, pump: -, timer: -, task: -)")
  }

  @Test func testNext_whenRunning_deliversAnElementAndLetsTheWaitingPumpPull() {
    var machine = running(logic { $0.outputs = [.element(7)] }, pump: pump)
    #expect(describe(machine.next(at: now)) == "deliver 7 [pump 2 pull]")
    #expect(machine.label == "running(consumer: -, pump: -, timer: -, task: 4)")
  }

  @Test func testNext_whenRunningWithNothing_suspends() {
    var machine = running(logic { $0.wantsUpstream = false }, pump: pump, timer: timer)
    #expect(describe(machine.next(at: now)) == "suspend")
    #expect(machine.label == "running(consumer: -, pump: 2, timer: 3, task: 4)")
  }

  @Test func testNext_whenRunningWithTheEnd_finishesAfterTheTaskAndReleasesEveryWaiter() {
    var machine = running(logic { $0.outputs = [.end(TestError(id: 3))] }, pump: pump, timer: timer)
    #expect(describe(machine.next(at: now)) == "end failure 3 [pump 2 leave, timer 3 leave, cancel 4] awaiting 4")
    #expect(machine.label == "finished")
  }

  @Test func testNext_whenCancelled_endsAfterTheTask() {
    var machine = cancelled()
    #expect(describe(machine.next(at: now)) == "end finish [] awaiting 4")
    #expect(machine.label == "finished")
  }

  @Test func testNext_whenFinished_endsAgain() {
    var machine = finished()
    #expect(describe(machine.next(at: now)) == "end finish [] awaiting -")
    #expect(machine.label == "finished")
  }

  // MARK: suspendConsumer (running, cancelled, finished)

  @Test func testSuspendConsumer_whenRunningWithNothing_parks() {
    var machine = running()
    #expect(machine.suspendConsumer(consumer) == nil)
    #expect(machine.label == "running(consumer: 1, pump: -, timer: -, task: 4)")
  }

  @Test func testSuspendConsumer_whenRunningWithAnOutput_resumesAtOnce() {
    var machine = running(logic { $0.outputs = [.element(7)] })
    #expect(machine.suspendConsumer(consumer) == consumer)
    #expect(machine.label == "running(consumer: -, pump: -, timer: -, task: 4)")
  }

  @Test func testSuspendConsumer_whenCancelledOrFinished_resumesAtOnce() {
    var machine = cancelled()
    #expect(machine.suspendConsumer(consumer) == consumer)
    #expect(machine.label == "cancelled(task: 4)")
    machine = finished()
    #expect(machine.suspendConsumer(consumer) == consumer)
    #expect(machine.label == "finished")
  }

  // MARK: cancel (idle, running, cancelled, finished)

  @Test func testCancel_whenIdle_finishesWithoutATask() {
    var machine = idle()
    #expect(describe(machine.cancel()) == "")
    #expect(machine.label == "finished")
  }

  @Test func testCancel_whenRunning_releasesEveryWaiterAndCancelsTheTask() {
    var machine = runningParked()
    #expect(describe(machine.cancel()) == "consumer 1, pump 2 leave, timer 3 leave, cancel 4")
    #expect(machine.label == "cancelled(task: 4)")
  }

  @Test func testCancel_whenRunningBeforeTheTaskStarted_remembersThatThereIsNoTaskYet() {
    var machine = running(task: nil)
    #expect(describe(machine.cancel()) == "")
    #expect(machine.label == "cancelled(task: -)")
  }

  @Test func testCancel_whenCancelledOrFinished_doesNothing() {
    var machine = cancelled()
    #expect(describe(machine.cancel()) == "")
    #expect(machine.label == "cancelled(task: 4)")
    machine = finished()
    #expect(describe(machine.cancel()) == "")
    #expect(machine.label == "finished")
  }

  // MARK: taskStarted (running, cancelled)

  @Test func testTaskStarted_whenRunning_keepsTheTask() {
    var machine = running(task: nil)
    #expect(machine.taskStarted(task) == nil)
    #expect(machine.label == "running(consumer: -, pump: -, timer: -, task: 4)")
  }

  @Test func testTaskStarted_whenRunningAndTheEndWaits_cancelsItAtOnce() {
    var machine = running(logic { $0.outputs = [.end(nil)] }, task: nil)
    #expect(machine.taskStarted(task) == task)
    #expect(machine.label == "running(consumer: -, pump: -, timer: -, task: 4)")
  }

  @Test func testTaskStarted_whenCancelled_cancelsItAtOnceAndKeepsItToAwait() {
    var machine = cancelled(task: nil)
    #expect(machine.taskStarted(task) == task)
    #expect(machine.label == "cancelled(task: 4)")
  }

  // MARK: pumpWaits (running, cancelled, finished)

  @Test func testPumpWaits_whenRunning_pullsParksOrLeaves() {
    var machine = running()
    #expect(machine.pumpWaits(pump, isCancelled: false).map { "\($0.continuation) \($0.proceed)" } == "2 true")
    machine = running(logic { $0.wantsUpstream = false })
    #expect(machine.pumpWaits(pump, isCancelled: false) == nil)
    #expect(machine.label == "running(consumer: -, pump: 2, timer: -, task: 4)")
    machine = running()
    #expect(machine.pumpWaits(pump, isCancelled: true).map { "\($0.continuation) \($0.proceed)" } == "2 false")
    machine = running(logic { $0.outputs = [.end(nil)] })
    #expect(machine.pumpWaits(pump, isCancelled: false).map { "\($0.continuation) \($0.proceed)" } == "2 false")
    #expect(machine.label == "running(consumer: -, pump: -, timer: -, task: 4)")
  }

  @Test func testPumpWaits_whenCancelledOrFinished_leaves() {
    var machine = cancelled()
    #expect(machine.pumpWaits(pump, isCancelled: false).map { "\($0.continuation) \($0.proceed)" } == "2 false")
    machine = finished()
    #expect(machine.pumpWaits(pump, isCancelled: false).map { "\($0.continuation) \($0.proceed)" } == "2 false")
  }

  // MARK: pumpCancelled (running, cancelled, finished)

  @Test func testPumpCancelled_whenRunning_takesTheParkedPump() {
    var machine = running(pump: pump)
    #expect(machine.pumpCancelled() == pump)
    #expect(machine.label == "running(consumer: -, pump: -, timer: -, task: 4)")
    #expect(machine.pumpCancelled() == nil)
  }

  @Test func testPumpCancelled_whenCancelledOrFinished_hasNothingToTake() {
    var machine = cancelled()
    #expect(machine.pumpCancelled() == nil)
    machine = finished()
    #expect(machine.pumpCancelled() == nil)
  }

  // MARK: timerWaits (running, cancelled, finished)

  @Test func testTimerWaits_whenRunning_sleepsParksOrLeaves() {
    var machine = running(logic { $0.deadline = deadline })
    #expect(
      machine.timerWaits(timer, isCancelled: false).map { "\($0.continuation) \($0.deadline!)" } == "3 5.0 seconds")
    machine = running()
    #expect(machine.timerWaits(timer, isCancelled: false) == nil)
    #expect(machine.label == "running(consumer: -, pump: -, timer: 3, task: 4)")
    machine = running(logic { $0.deadline = deadline })
    #expect(machine.timerWaits(timer, isCancelled: true).map { "\($0.continuation) \($0.deadline == nil)" } == "3 true")
    machine = running(logic { $0.outputs = [.end(nil)] })
    #expect(
      machine.timerWaits(timer, isCancelled: false).map { "\($0.continuation) \($0.deadline == nil)" } == "3 true")
  }

  @Test func testTimerWaits_whenCancelledOrFinished_leaves() {
    var machine = cancelled()
    #expect(
      machine.timerWaits(timer, isCancelled: false).map { "\($0.continuation) \($0.deadline == nil)" } == "3 true")
    machine = finished()
    #expect(
      machine.timerWaits(timer, isCancelled: false).map { "\($0.continuation) \($0.deadline == nil)" } == "3 true")
  }

  // MARK: timerCancelled (running, cancelled, finished)

  @Test func testTimerCancelled_whenRunning_takesTheParkedTimer() {
    var machine = running(timer: timer)
    #expect(machine.timerCancelled() == timer)
    #expect(machine.label == "running(consumer: -, pump: -, timer: -, task: 4)")
    #expect(machine.timerCancelled() == nil)
  }

  @Test func testTimerCancelled_whenCancelledOrFinished_hasNothingToTake() {
    var machine = cancelled()
    #expect(machine.timerCancelled() == nil)
    machine = finished()
    #expect(machine.timerCancelled() == nil)
  }

  // MARK: upstreamElement (running, cancelled, finished)

  @Test func testUpstreamElement_whenRunning_wakesTheConsumerAndLetsThePumpPullAgain() {
    var machine = runningParked()
    #expect(describe(machine.upstreamElement(7, at: now)) == "consumer 1, pump 2 pull")
    #expect(machine.logic.log == ["element 7"])
    #expect(machine.label == "running(consumer: -, pump: -, timer: 3, task: 4)")
  }

  @Test func testUpstreamElement_whenRunningAndTheLogicHoldsIt_keepsThePumpParkedAndWakesTheTimer() {
    var machine = runningParked(
      logic {
        $0.wantsUpstream = false
        $0.deadline = deadline
      })
    #expect(describe(machine.upstreamElement(7, at: now)) == "consumer 1, timer 3 5.0 seconds")
    #expect(machine.label == "running(consumer: -, pump: 2, timer: -, task: 4)")
  }

  @Test func testUpstreamElement_whenRunningAndTheLogicDisplacesOne_handsItOutToBeReleasedAfterTheLock() {
    var machine = running(logic { $0.displaced = 5 })
    #expect(describe(machine.upstreamElement(7, at: now)) == "release 5")
  }

  @Test func testUpstreamElement_whenCancelledOrFinished_isIgnoredAndHandedBack() {
    var machine = cancelled()
    #expect(describe(machine.upstreamElement(7, at: now)) == "release 7")
    #expect(machine.logic.log.isEmpty && machine.label == "cancelled(task: 4)")
    machine = finished()
    #expect(describe(machine.upstreamElement(7, at: now)) == "release 7")
    #expect(machine.logic.log.isEmpty && machine.label == "finished")
  }

  // MARK: upstreamEnded (running, cancelled, finished)

  @Test func testUpstreamEnded_whenRunning_wakesTheConsumerReleasesTheRestAndCancelsTheTask() {
    var machine = runningParked()
    #expect(
      describe(machine.upstreamEnded(TestError(id: 1), at: now)) == "consumer 1, pump 2 leave, timer 3 leave, cancel 4")
    #expect(machine.logic.log == ["ended"])
    #expect(machine.label == "running(consumer: -, pump: -, timer: -, task: 4)")
    // The consumer takes the end once the task has ended.
    #expect(describe(machine.next(at: now)) == "end failure 1 [cancel 4] awaiting 4")
  }

  @Test func testUpstreamEnded_whenCancelledOrFinished_isIgnored() {
    var machine = cancelled()
    #expect(describe(machine.upstreamEnded(nil, at: now)) == "")
    #expect(machine.logic.log.isEmpty && machine.label == "cancelled(task: 4)")
    machine = finished()
    #expect(describe(machine.upstreamEnded(nil, at: now)) == "")
    #expect(machine.logic.log.isEmpty && machine.label == "finished")
  }

  // MARK: timerFired (running, cancelled, finished)

  @Test func testTimerFired_whenRunning_tellsTheLogicAndWakesTheConsumer() {
    var machine = running(logic { $0.wantsUpstream = false }, consumer: consumer, pump: pump)
    #expect(describe(machine.timerFired(at: deadline)) == "consumer 1")
    #expect(machine.logic.log == ["timer"])
    #expect(machine.label == "running(consumer: -, pump: 2, timer: -, task: 4)")
  }

  @Test func testTimerFired_whenRunningAndAConflationDisplacesOne_handsItOutToBeReleasedAfterTheLock() {
    var machine = running(logic { $0.displaced = 5 })
    #expect(describe(machine.timerFired(at: deadline)) == "release 5")
  }

  @Test func testTimerFired_whenCancelledOrFinished_isIgnored() {
    var machine = cancelled()
    #expect(describe(machine.timerFired(at: deadline)) == "")
    #expect(machine.logic.log.isEmpty)
    machine = finished()
    #expect(describe(machine.timerFired(at: deadline)) == "")
    #expect(machine.logic.log.isEmpty)
  }

  // MARK: Impossible transitions

  /// A cell that cannot happen: the machine stops the process.
  enum ImpossibleCell: String, Codable, Sendable, CaseIterable {
    case suspendConsumerWhenIdle, taskStartedWhenIdle, pumpWaitsWhenIdle, pumpCancelledWhenIdle, timerWaitsWhenIdle
    case timerCancelledWhenIdle, upstreamElementWhenIdle, upstreamEndedWhenIdle, timerFiredWhenIdle
    case taskStartedWhenFinished
    case taskStartedWhenRunningWithATask, taskStartedWhenCancelledWithATask
    case nextWhenModifying, suspendConsumerWhenModifying, cancelWhenModifying, taskStartedWhenModifying
    case pumpWaitsWhenModifying, pumpCancelledWhenModifying, timerWaitsWhenModifying, timerCancelledWhenModifying
    case upstreamElementWhenModifying, upstreamEndedWhenModifying, timerFiredWhenModifying

    func run() {
      var machine: Lifecycle
      switch self {
      case .suspendConsumerWhenIdle, .taskStartedWhenIdle, .pumpWaitsWhenIdle, .pumpCancelledWhenIdle,
        .timerWaitsWhenIdle, .timerCancelledWhenIdle, .upstreamElementWhenIdle, .upstreamEndedWhenIdle,
        .timerFiredWhenIdle:
        machine = idle()
      case .taskStartedWhenFinished: machine = finished()
      case .taskStartedWhenRunningWithATask: machine = running(task: task)
      case .taskStartedWhenCancelledWithATask: machine = cancelled(task: task)
      default: machine = Lifecycle(logic: FakeLogic(), state: .modifying)
      }
      switch self {
      case .nextWhenModifying: _ = machine.next(at: now)
      case .suspendConsumerWhenIdle, .suspendConsumerWhenModifying: _ = machine.suspendConsumer(consumer)
      case .cancelWhenModifying: _ = machine.cancel()
      case .taskStartedWhenIdle, .taskStartedWhenFinished, .taskStartedWhenRunningWithATask,
        .taskStartedWhenCancelledWithATask, .taskStartedWhenModifying:
        _ = machine.taskStarted(task)
      case .pumpWaitsWhenIdle, .pumpWaitsWhenModifying: _ = machine.pumpWaits(pump, isCancelled: false)
      case .pumpCancelledWhenIdle, .pumpCancelledWhenModifying: _ = machine.pumpCancelled()
      case .timerWaitsWhenIdle, .timerWaitsWhenModifying: _ = machine.timerWaits(timer, isCancelled: false)
      case .timerCancelledWhenIdle, .timerCancelledWhenModifying: _ = machine.timerCancelled()
      case .upstreamElementWhenIdle, .upstreamElementWhenModifying: _ = machine.upstreamElement(7, at: now)
      case .upstreamEndedWhenIdle, .upstreamEndedWhenModifying: _ = machine.upstreamEnded(nil, at: now)
      case .timerFiredWhenIdle, .timerFiredWhenModifying: _ = machine.timerFired(at: now)
      }
    }
  }

  @Test(arguments: ImpossibleCell.allCases)
  func testImpossibleTransition_stopsTheProcess(cell: ImpossibleCell) async {
    await #expect(processExitsWith: .failure) { [cell] in cell.run() }
  }
}
