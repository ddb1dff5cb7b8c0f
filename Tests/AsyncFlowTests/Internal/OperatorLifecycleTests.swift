import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// A logic whose answers the test sets: `input` queues the element, `inputEnded` queues the end,
/// `timerFired` queues 99.
private struct FakeLogic: OperatorLogic {
  typealias Element = Int
  typealias InputFailure = TestError
  typealias Failure = TestError
  typealias Instant = TestClock.Instant

  var log: [String] = []
  var outputs: [OperatorOutput<Int, TestError>] = []
  var deadline: Instant?
  var wantsInput = true
  /// What `input` and `timerFired` say they let go.
  var displaced: Int?
  var refuses = false
  /// Whether `timerFired` ends the logic (as a timeout does) rather than queue 99.
  var timerEnds = false
  /// How many inputs must finish before the logic ends (as a merge does); a failure ends it at once.
  var finishesToEnd = 1
  /// Whether its end drops what the consumer took (as combineLatest's failure does).
  var endDrops = false
  var dropsTakenOutputs: Bool { endDrops }
  var isEnding: Bool { outputs.contains { if case .end = $0 { true } else { false } } || endDelivered }
  var hasOutput: Bool { !outputs.isEmpty }
  private var endDelivered = false

  mutating func start(at now: Instant) { log.append("start") }
  mutating func input(_ element: Int, at now: Instant) -> InputVerdict<Int> {
    log.append("input \(element)")
    if refuses { return .refused(element) }
    outputs.append(.element(element))
    return displaced.map { .keptDisplacing($0) } ?? .kept
  }
  mutating func inputEnded(_ failure: TestError?, from _: Int, at now: Instant) -> Int? {
    log.append("ended")
    finishesToEnd -= 1
    if failure != nil || finishesToEnd == 0 { outputs.append(.end(failure)) }
    return nil
  }
  mutating func timerFired(at now: Instant) -> Int? {
    log.append("timer")
    outputs.append(timerEnds ? .end(nil) : .element(99))
    return displaced
  }
  mutating func nextOutput(at now: Instant) -> OperatorOutput<Int, TestError>? {
    guard !outputs.isEmpty else { return nil }
    let output = outputs.removeFirst()
    if case .end = output { endDelivered = true }
    return output
  }
}

/// The waiters and the task are plain numbers: consumer 1, input 2, timer 3, task 4; the other
/// inputs of a many-input operator are 5, 6, 7.
private typealias Lifecycle = OperatorLifecycle<FakeLogic, Int, Int, Int, Int>
private let consumer = 1
private let input = 2
private let timer = 3
private let task = 4
private let now = TestClock.Instant(offset: .seconds(1))
private let deadline = TestClock.Instant(offset: .seconds(5))

private func logic(_ configure: (inout FakeLogic) -> Void = { _ in }) -> FakeLogic {
  var logic = FakeLogic()
  configure(&logic)
  return logic
}

private func idle() -> Lifecycle { Lifecycle(logic: FakeLogic()) }

private func inputs(_ children: [Lifecycle.Child<Int>]) -> Lifecycle.Inputs {
  var inputs = Lifecycle.Inputs(count: children.count)
  for (index, child) in children.enumerated() { inputs.set(index, child) }
  return inputs
}

/// Running with one input (`input`), or with several (`inputs`).
private func running(
  _ logic: FakeLogic = FakeLogic(), consumer: Int? = nil, input: Lifecycle.Child<Int> = .busy,
  inputs children: [Lifecycle.Child<Int>]? = nil, timer: Lifecycle.Child<Int> = .busy, task: Int? = 4
) -> Lifecycle {
  let children = children ?? [input]
  let running = Lifecycle.Running(consumer: consumer, timer: timer, task: task)
  var machine = Lifecycle(logic: logic, state: .running(running))
  machine.inputs = inputs(children)
  return machine
}

/// Running with every waiter parked and the task registered.
private func parked(_ logic: FakeLogic = FakeLogic()) -> Lifecycle {
  running(logic, consumer: consumer, input: .parked(input), timer: .parked(timer))
}

private func cancelled(
  task: Int? = 4, inputBusy: Bool = false, inputs children: [Lifecycle.Child<Int>]? = nil, timerBusy: Bool = false
) -> Lifecycle {
  let children = children ?? [inputBusy ? .busy : .left]
  var machine = Lifecycle(logic: nil, state: .cancelled(Lifecycle.Cancelled(task: task, timerBusy: timerBusy)))
  machine.inputs = inputs(children)
  return machine
}

private func finished() -> Lifecycle { Lifecycle(logic: nil, state: .finished) }
private func modifying() -> Lifecycle { Lifecycle(logic: FakeLogic(), state: .modifying) }

extension OperatorLifecycle.Child {
  fileprivate var label: String {
    switch self {
    case .busy: "busy"
    case .parked(let waiter): "parked \(waiter)"
    case .left: "left"
    }
  }
}

extension OperatorLifecycle.Inputs {
  /// `input: busy` for one input, `inputs: busy, parked 5, left` for several.
  fileprivate var label: String {
    let labels = children.map(\.label).joined(separator: ", ")
    return children.count == 1 ? "input: \(labels)" : "inputs: \(labels)"
  }

  /// The busy inputs, in a cancelled state: `input busy` for one, `inputs 0, 2 busy` for several.
  fileprivate var busyLabel: String {
    let busy = children.indices.filter { children[$0].isBusy }
    guard !busy.isEmpty else { return "" }
    return children.count == 1 ? ", input busy" : ", inputs \(busy.map(String.init).joined(separator: ", ")) busy"
  }
}

extension OperatorLifecycle {
  fileprivate var label: String {
    switch state {
    case .idle: "idle"
    case .running(let running):
      "running(consumer: \(running.consumer.map { "\($0)" } ?? "-"), \(inputs.label), "
        + "timer: \(running.timer.label), task: \(running.task.map { "\($0)" } ?? "-"))"
    case .cancelled(let cancelled):
      "cancelled(task: \(cancelled.task.map { "\($0)" } ?? "-")\(inputs.busyLabel)"
        + "\(cancelled.timerBusy ? ", timer busy" : ""))"
    case .finished: "finished"
    case .modifying: "modifying"
    }
  }

  fileprivate var log: [String] { (logic as? FakeLogic)?.log ?? [] }
}

/// The wakeups as text, to compare in one expectation.
private func describe(_ wakeups: Lifecycle.Wakeups) -> String {
  var parts: [String] = []
  if let consumer = wakeups.consumer { parts.append("consumer \(consumer)") }
  if let (input, proceed) = wakeups.input {
    let inputs = ([input] + wakeups.moreInputs).map(String.init).joined(separator: " ")
    parts.append("input\(wakeups.moreInputs.isEmpty ? "" : "s") \(inputs) \(proceed ? "pull" : "leave")")
  }
  if let (timer, deadline) = wakeups.timer { parts.append("timer \(timer) \(deadline.map { "\($0)" } ?? "leave")") }
  if let task = wakeups.cancel { parts.append("cancel \(task)") }
  if let released = wakeups.released { parts.append("release \(released)") }
  if wakeups.dropsTakenOutputs { parts.append("drop taken outputs") }
  return parts.joined(separator: ", ")
}

private func describe(_ cancel: (wakeups: Lifecycle.Wakeups, retired: FakeLogic?)) -> String {
  [describe(cancel.wakeups), cancel.retired == nil ? "" : "retire"].filter { !$0.isEmpty }.joined(separator: ", ")
}

private func describe(_ action: Lifecycle.NextAction) -> String {
  switch action {
  case .startTask: "startTask"
  case .deliver(let element, let wakeups): "deliver \(element) [\(describe(wakeups))]"
  case .end(let failure, let wakeups, let awaiting, let retired):
    "end \(failure.map { "failure \($0.id)" } ?? "finish") [\(describe((wakeups, retired)))] "
      + "awaiting \(awaiting.map { "\($0)" } ?? "-")"
  case .suspend: "suspend"
  }
}

private func describe(_ answer: (Int, Bool)?) -> String {
  answer.map { "\($0.0) \($0.1 ? "pull" : "leave")" } ?? "parked"
}

private func describe(_ answer: (Int, TestClock.Instant?)?) -> String {
  answer.map { "\($0.0) \($0.1.map { "\($0)" } ?? "leave")" } ?? "parked"
}

/// `accepted`/`refused`, then `, proceed` when the input may pull again without waiting.
private func describe(_ answer: Lifecycle.InputAnswer) -> String {
  "\(answer.accepted ? "accepted" : "refused")\(answer.proceed ? ", proceed" : "") [\(describe(answer.wakeups))]"
}

/// The whole grid: 5 states (idle, running, cancelled, finished, modifying) x 11 events = 55
/// cells, one test each (a few cells have a second test for another answer of the logic). 34 cells
/// are possible; the 21 impossible ones (and 2 impossible variants of `taskStarted`) stop the
/// process, checked by exit tests. The cells where several inputs differ from one (`Many inputs`)
/// have a test of their own each, and input parked twice is an impossible variant of `inputWaits`.
@Suite("OperatorLifecycle", .hangGuard)
struct OperatorLifecycleTests {
  // MARK: next

  @Test func testNext_whenIdle() {
    var machine = idle()
    #expect(describe(machine.next(at: now)) == "startTask")
    #expect(machine.log == ["start"])
    #expect(machine.label == "running(consumer: -, input: busy, timer: busy, task: -)")
  }

  @Test func testNext_whenRunning() {
    var machine = running(logic { $0.outputs = [.element(7)] }, input: .parked(input))
    #expect(describe(machine.next(at: now)) == "deliver 7 [input 2 pull]")
    #expect(machine.label == "running(consumer: -, input: busy, timer: busy, task: 4)")
  }

  @Test func testNext_whenRunningWithNothing() {
    var machine = running(logic { $0.wantsInput = false }, input: .parked(input), timer: .parked(timer))
    #expect(describe(machine.next(at: now)) == "suspend")
    #expect(machine.label == "running(consumer: -, input: parked 2, timer: parked 3, task: 4)")
  }

  @Test func testNext_whenRunningWithTheEnd() {
    // The parked children leave; the task is not cancelled: nobody in it is busy.
    var machine = running(logic { $0.outputs = [.end(TestError(id: 3))] }, input: .parked(input), timer: .parked(timer))
    #expect(describe(machine.next(at: now)) == "end failure 3 [input 2 leave, timer 3 leave, retire] awaiting 4")
    #expect(machine.label == "finished")
  }

  @Test func testNext_whenCancelled() {
    var machine = cancelled()
    #expect(describe(machine.next(at: now)) == "end finish [] awaiting 4")
    #expect(machine.label == "finished")
  }

  @Test func testNext_whenFinished() {
    var machine = finished()
    #expect(describe(machine.next(at: now)) == "end finish [] awaiting -")
    #expect(machine.label == "finished")
  }

  // MARK: suspendConsumer

  @Test func testSuspendConsumer_whenRunning() {
    var machine = running()
    #expect(machine.suspendConsumer(consumer) == nil)
    #expect(machine.label == "running(consumer: 1, input: busy, timer: busy, task: 4)")
  }

  @Test func testSuspendConsumer_whenRunningWithAnOutput() {
    // The output arrived between `next` and the registration.
    var machine = running(logic { $0.outputs = [.element(7)] })
    #expect(machine.suspendConsumer(consumer) == consumer)
    #expect(machine.label == "running(consumer: -, input: busy, timer: busy, task: 4)")
  }

  @Test func testSuspendConsumer_whenCancelled() {
    var machine = cancelled()
    #expect(machine.suspendConsumer(consumer) == consumer)
    #expect(machine.label == "cancelled(task: 4)")
  }

  @Test func testSuspendConsumer_whenFinished() {
    var machine = finished()
    #expect(machine.suspendConsumer(consumer) == consumer)
    #expect(machine.label == "finished")
  }

  // MARK: cancel

  @Test func testCancel_whenIdle() {
    var machine = idle()
    #expect(describe(machine.cancel()) == "retire")
    #expect(machine.label == "finished")
  }

  @Test func testCancel_whenRunning() {
    // Every child parked: they are told to leave, and the task is left alone (a cleanup in it
    // must not be cancelled).
    var machine = parked()
    #expect(describe(machine.cancel()) == "consumer 1, input 2 leave, timer 3 leave, retire")
    #expect(machine.label == "cancelled(task: 4)")
  }

  @Test func testCancel_whenRunningWithABusyChild() {
    // Inside its upstream's `next()` or a setup, only a cancellation reaches the input.
    var machine = running(consumer: consumer, input: .busy, timer: .left)
    #expect(describe(machine.cancel()) == "consumer 1, cancel 4, retire")
    #expect(machine.label == "cancelled(task: 4, input busy)")
  }

  @Test func testCancel_whenRunningBeforeTheTaskIsRegistered() {
    var machine = running(task: nil)
    #expect(describe(machine.cancel()) == "retire")
    #expect(machine.label == "cancelled(task: -, input busy, timer busy)")
  }

  @Test func testCancel_whenCancelled() {
    var machine = cancelled()
    #expect(describe(machine.cancel()) == "")
    #expect(machine.label == "cancelled(task: 4)")
  }

  @Test func testCancel_whenFinished() {
    var machine = finished()
    #expect(describe(machine.cancel()) == "")
    #expect(machine.label == "finished")
  }

  // MARK: taskStarted

  @Test func testTaskStarted_whenRunning() {
    var machine = running(task: nil)
    #expect(machine.taskStarted(task) == nil)
    #expect(machine.label == "running(consumer: -, input: busy, timer: busy, task: 4)")
  }

  @Test func testTaskStarted_whenRunningAndTheLogicEndedWhileTheTimerIsBusy() {
    var machine = running(logic { $0.outputs = [.end(nil)] }, input: .left, timer: .busy, task: nil)
    #expect(machine.taskStarted(task) == task)
  }

  @Test func testTaskStarted_whenRunningAndTheInputEndedItDuringItsSetup() {
    // `Flow.callbacks`: `finish()` from inside the setup; the setup goes on, then its cleanup.
    var machine = running(logic { $0.outputs = [.end(nil)] }, input: .left, timer: .left, task: nil)
    #expect(machine.taskStarted(task) == nil)
  }

  @Test func testTaskStarted_whenCancelled() {
    var machine = cancelled(task: nil, inputBusy: true)
    #expect(machine.taskStarted(task) == task)
    #expect(machine.label == "cancelled(task: 4, input busy)")
  }

  @Test func testTaskStarted_whenCancelledAndEveryChildLeft() {
    // The setup returned and its cleanup runs: it is not cancelled.
    var machine = cancelled(task: nil)
    #expect(machine.taskStarted(task) == nil)
    #expect(machine.label == "cancelled(task: 4)")
  }

  // MARK: inputWaits

  @Test func testInputWaits_whenRunning() {
    var machine = running()
    #expect(describe(machine.inputWaits(input, isCancelled: false)) == "2 pull")
    #expect(machine.label == "running(consumer: -, input: busy, timer: busy, task: 4)")
  }

  @Test func testInputWaits_whenRunningAndTheLogicWantsNothing() {
    var machine = running(logic { $0.wantsInput = false })
    #expect(describe(machine.inputWaits(input, isCancelled: false)) == "parked")
    #expect(machine.label == "running(consumer: -, input: parked 2, timer: busy, task: 4)")
  }

  @Test func testInputWaits_whenRunningAndEnding() {
    var machine = running(logic { $0.outputs = [.end(nil)] })
    #expect(describe(machine.inputWaits(input, isCancelled: false)) == "2 leave")
    #expect(machine.label == "running(consumer: -, input: left, timer: busy, task: 4)")
  }

  @Test func testInputWaits_whenRunningAndItsTaskIsCancelled() {
    var machine = running()
    #expect(describe(machine.inputWaits(input, isCancelled: true)) == "2 leave")
    #expect(machine.label == "running(consumer: -, input: left, timer: busy, task: 4)")
  }

  @Test func testInputWaits_whenCancelled() {
    var machine = cancelled(task: nil, inputBusy: true)
    #expect(describe(machine.inputWaits(input, isCancelled: false)) == "2 leave")
    #expect(machine.label == "cancelled(task: -)")
  }

  @Test func testInputWaits_whenFinished() {
    var machine = finished()
    #expect(describe(machine.inputWaits(input, isCancelled: false)) == "2 leave")
  }

  // MARK: inputCancelled

  @Test func testInputCancelled_whenRunning() {
    var machine = running(input: .parked(input))
    #expect(machine.inputCancelled() == input)
    #expect(machine.label == "running(consumer: -, input: left, timer: busy, task: 4)")
    #expect(machine.inputCancelled() == nil)
  }

  @Test func testInputCancelled_whenCancelled() {
    var machine = cancelled()
    #expect(machine.inputCancelled() == nil)
  }

  @Test func testInputCancelled_whenFinished() {
    var machine = finished()
    #expect(machine.inputCancelled() == nil)
  }

  // MARK: timerWaits

  @Test func testTimerWaits_whenRunning() {
    var machine = running(logic { $0.deadline = deadline })
    #expect(describe(machine.timerWaits(timer, isCancelled: false)) == "3 5.0 seconds")
    #expect(machine.label == "running(consumer: -, input: busy, timer: busy, task: 4)")
  }

  @Test func testTimerWaits_whenRunningWithoutADeadline() {
    var machine = running()
    #expect(describe(machine.timerWaits(timer, isCancelled: false)) == "parked")
    #expect(machine.label == "running(consumer: -, input: busy, timer: parked 3, task: 4)")
  }

  @Test func testTimerWaits_whenRunningAndEnding() {
    var machine = running(logic { $0.outputs = [.end(nil)] })
    #expect(describe(machine.timerWaits(timer, isCancelled: false)) == "3 leave")
    #expect(machine.label == "running(consumer: -, input: busy, timer: left, task: 4)")
  }

  @Test func testTimerWaits_whenCancelled() {
    var machine = cancelled(task: nil, timerBusy: true)
    #expect(describe(machine.timerWaits(timer, isCancelled: false)) == "3 leave")
    #expect(machine.label == "cancelled(task: -)")
  }

  @Test func testTimerWaits_whenFinished() {
    var machine = finished()
    #expect(describe(machine.timerWaits(timer, isCancelled: false)) == "3 leave")
  }

  // MARK: timerCancelled

  @Test func testTimerCancelled_whenRunning() {
    var machine = running(timer: .parked(timer))
    #expect(machine.timerCancelled() == timer)
    #expect(machine.label == "running(consumer: -, input: busy, timer: left, task: 4)")
    #expect(machine.timerCancelled() == nil)
  }

  @Test func testTimerCancelled_whenCancelled() {
    var machine = cancelled()
    #expect(machine.timerCancelled() == nil)
  }

  @Test func testTimerCancelled_whenFinished() {
    var machine = finished()
    #expect(machine.timerCancelled() == nil)
  }

  // MARK: input

  @Test func testInput_whenRunning() {
    var machine = parked()
    #expect(describe(machine.input(7, at: now)) == "accepted [consumer 1, input 2 pull]")
    #expect(machine.log == ["input 7"])
    #expect(machine.label == "running(consumer: -, input: busy, timer: parked 3, task: 4)")
  }

  @Test func testInput_whenRunningAndTheLogicHoldsItWithADeadline() {
    var machine = parked(
      logic {
        $0.wantsInput = false
        $0.deadline = deadline
      })
    #expect(describe(machine.input(7, at: now)) == "accepted [consumer 1, timer 3 5.0 seconds]")
    #expect(machine.label == "running(consumer: -, input: parked 2, timer: busy, task: 4)")
  }

  @Test func testInput_whenRunningAndTheLogicDisplacesOne() {
    var machine = running(logic { $0.displaced = 5 })
    #expect(describe(machine.input(7, at: now)) == "accepted, proceed [release 5]")
  }

  @Test func testInput_whenRunningAndTheLogicRefusesIt() {
    var machine = running(logic { $0.refuses = true })
    #expect(describe(machine.input(7, at: now)) == "refused, proceed [release 7]")
  }

  @Test func testInput_whenRunningAfterTheInputEnded() {
    // What a callback sends after `finish()` is ignored, and the logic not asked.
    var machine = running(input: .left)
    #expect(describe(machine.input(7, at: now)) == "refused [release 7]")
    #expect(machine.log.isEmpty)
  }

  @Test func testInput_whenCancelled() {
    var machine = cancelled()
    #expect(describe(machine.input(7, at: now)) == "refused [release 7]")
    #expect(machine.label == "cancelled(task: 4)")
  }

  @Test func testInput_whenFinished() {
    var machine = finished()
    #expect(describe(machine.input(7, at: now)) == "refused [release 7]")
  }

  // MARK: inputEnded

  @Test func testInputEnded_whenRunning() {
    // The input reported its end: it is not interrupted; the sleeping timer is.
    var machine = running(consumer: consumer, input: .busy, timer: .busy)
    #expect(describe(machine.inputEnded(TestError(id: 1), at: now)) == "consumer 1, cancel 4")
    #expect(machine.log == ["ended"])
    #expect(machine.label == "running(consumer: -, input: left, timer: busy, task: 4)")
    #expect(describe(machine.next(at: now)) == "end failure 1 [cancel 4, retire] awaiting 4")
  }

  @Test func testInputEnded_whenRunningWithAnEndThatDropsTakenOutputs() {
    // The consumer may be serving a batch out of the lock: the wakeups tell it to stop.
    var machine = running(logic { $0.endDrops = true }, input: .busy, timer: .left)
    #expect(describe(machine.inputEnded(TestError(id: 1), at: now)) == "drop taken outputs")
    #expect(describe(machine.next(at: now)) == "end failure 1 [drop taken outputs, retire] awaiting 4")
  }

  @Test func testInputEnded_whenRunningWithTheChildrenParkedOrAbsent() {
    // `Flow.callbacks` ended: the parked task runs its cleanup, uncancelled.
    var machine = running(consumer: consumer, input: .parked(input), timer: .left)
    #expect(describe(machine.inputEnded(nil, at: now)) == "consumer 1, input 2 leave")
    #expect(machine.label == "running(consumer: -, input: left, timer: left, task: 4)")
  }

  @Test func testInputEnded_whenRunningAndAlreadyEnded() {
    // The first end wins.
    var machine = running(input: .left)
    #expect(describe(machine.inputEnded(nil, at: now)) == "")
    #expect(machine.log.isEmpty)
  }

  @Test func testInputEnded_whenCancelled() {
    var machine = cancelled()
    #expect(describe(machine.inputEnded(nil, at: now)) == "")
    #expect(machine.label == "cancelled(task: 4)")
  }

  @Test func testInputEnded_whenFinished() {
    var machine = finished()
    #expect(describe(machine.inputEnded(nil, at: now)) == "")
  }

  // MARK: timerFired

  @Test func testTimerFired_whenRunning() {
    var machine = running(logic { $0.wantsInput = false }, consumer: consumer, input: .parked(input))
    #expect(describe(machine.timerFired(at: deadline)) == "consumer 1")
    #expect(machine.log == ["timer"])
    #expect(machine.label == "running(consumer: -, input: parked 2, timer: busy, task: 4)")
  }

  @Test func testTimerFired_whenRunningAndAConflationDisplacesOne() {
    var machine = running(logic { $0.displaced = 5 })
    #expect(describe(machine.timerFired(at: deadline)) == "release 5")
  }

  @Test func testTimerFired_whenCancelled() {
    var machine = cancelled()
    #expect(describe(machine.timerFired(at: deadline)) == "")
  }

  @Test func testTimerFired_whenFinished() {
    var machine = finished()
    #expect(describe(machine.timerFired(at: deadline)) == "")
  }

  @Test func testTimerFired_whenRunningAndItEndsTheLogicWhileTheInputIsBusy() {
    // `timeoutFlow`: the input is inside its upstream's `next()`; only a cancellation reaches it.
    var machine = running(logic { $0.timerEnds = true }, consumer: consumer, input: .busy, timer: .busy)
    #expect(describe(machine.timerFired(at: deadline)) == "consumer 1, cancel 4")
    #expect(describe(machine.timerFired(at: deadline)) == "")  // once ending, the logic is not asked
    #expect(machine.log == ["timer"])
  }

  // MARK: Many inputs (Flow.merge): input 0 is 2, input 1 is 5, input 2 is 6

  @Test func testNext_whenIdleWithManyInputs() {
    var machine = Lifecycle(logic: FakeLogic(), inputs: 3)
    #expect(describe(machine.next(at: now)) == "startTask")
    #expect(machine.label == "running(consumer: -, inputs: busy, busy, busy, timer: busy, task: -)")
  }

  @Test func testNext_whenRunningWithManyInputsParked() {
    // The consumer took what made room: every parked input goes on, in one event.
    var machine = running(logic { $0.outputs = [.element(7)] }, inputs: [.parked(2), .busy, .parked(6)], timer: .left)
    #expect(describe(machine.next(at: now)) == "deliver 7 [inputs 2 6 pull]")
    #expect(machine.label == "running(consumer: -, inputs: busy, busy, busy, timer: left, task: 4)")
  }

  @Test func testCancel_whenRunningWithManyInputs() {
    var machine = running(consumer: consumer, inputs: [.parked(2), .busy, .left], timer: .left)
    #expect(describe(machine.cancel()) == "consumer 1, input 2 leave, cancel 4, retire")
    #expect(machine.label == "cancelled(task: 4, inputs 1 busy)")
  }

  @Test func testTaskStarted_whenCancelledWithManyInputs() {
    var machine = cancelled(task: nil, inputs: [.left, .busy, .left])
    #expect(machine.taskStarted(task) == task)
  }

  @Test func testInputWaits_whenRunningWithManyInputs() {
    var machine = running(logic { $0.wantsInput = false }, inputs: [.busy, .busy, .busy])
    #expect(describe(machine.inputWaits(5, index: 1, isCancelled: false)) == "parked")
    #expect(machine.label == "running(consumer: -, inputs: busy, parked 5, busy, timer: busy, task: 4)")
  }

  @Test func testInputWaits_whenCancelledWithManyInputs() {
    var machine = cancelled(task: nil, inputs: [.busy, .busy])
    #expect(describe(machine.inputWaits(5, index: 1, isCancelled: false)) == "5 leave")
    #expect(machine.label == "cancelled(task: -, inputs 0 busy)")
    #expect(machine.taskStarted(task) == task)  // input 0 is still busy
  }

  @Test func testInputCancelled_whenRunningWithManyInputs() {
    var machine = running(inputs: [.parked(2), .parked(5)])
    #expect(machine.inputCancelled(index: 1) == 5)
    #expect(machine.label == "running(consumer: -, inputs: parked 2, left, timer: busy, task: 4)")
  }

  @Test func testInput_whenRunningWithManyInputs() {
    // Input 0 ended: what it still sends is ignored. Input 1 goes on at once; the parked input 2
    // is woken, the logic wanting more.
    var machine = running(consumer: consumer, inputs: [.left, .busy, .parked(6)])
    #expect(describe(machine.input(7, from: 0, at: now)) == "refused [release 7]")
    #expect(describe(machine.input(8, from: 1, at: now)) == "accepted, proceed [consumer 1, input 6 pull]")
    #expect(machine.log == ["input 8"])
  }

  @Test func testInputEnded_whenRunningWithManyInputs() {
    // Only the last finish ends the logic; each input's first end counts, once.
    var machine = running(logic { $0.finishesToEnd = 2 }, consumer: consumer, inputs: [.busy, .busy], timer: .left)
    #expect(describe(machine.inputEnded(nil, from: 0, at: now)) == "")
    #expect(machine.label == "running(consumer: 1, inputs: left, busy, timer: left, task: 4)")
    #expect(describe(machine.inputEnded(nil, from: 0, at: now)) == "")
    #expect(describe(machine.inputEnded(nil, from: 1, at: now)) == "consumer 1")
    #expect(machine.log == ["ended", "ended"])
  }

  @Test func testInputEnded_whenRunningWithManyInputsAndOneFails() {
    // The first failure ends it: the parked input leaves, the busy one is cancelled with the task.
    var machine = running(
      logic { $0.finishesToEnd = 3 }, consumer: consumer, inputs: [.busy, .parked(5), .busy], timer: .left)
    #expect(describe(machine.inputEnded(TestError(id: 2), from: 0, at: now)) == "consumer 1, input 5 leave, cancel 4")
    #expect(machine.label == "running(consumer: -, inputs: left, left, busy, timer: left, task: 4)")
  }

  // MARK: Impossible cells

  /// A cell that cannot happen: the machine stops the process, naming the state and the event.
  enum ImpossibleCell: String, Codable, Sendable, CaseIterable {
    case suspendConsumerWhenIdle, taskStartedWhenIdle, inputWaitsWhenIdle, inputCancelledWhenIdle, timerWaitsWhenIdle
    case timerCancelledWhenIdle, inputWhenIdle, inputEndedWhenIdle, timerFiredWhenIdle
    case taskStartedWhenFinished
    case taskStartedWhenRunningWithATask, taskStartedWhenCancelledWithATask
    case nextWhenModifying, suspendConsumerWhenModifying, cancelWhenModifying, taskStartedWhenModifying
    case inputWaitsWhenModifying, inputCancelledWhenModifying, timerWaitsWhenModifying, timerCancelledWhenModifying
    case inputWhenModifying, inputEndedWhenModifying, timerFiredWhenModifying
    case inputWaitsWhenRunningAndThatInputIsParked

    func run() {
      var machine: Lifecycle
      switch self {
      case .suspendConsumerWhenIdle, .taskStartedWhenIdle, .inputWaitsWhenIdle, .inputCancelledWhenIdle,
        .timerWaitsWhenIdle, .timerCancelledWhenIdle, .inputWhenIdle, .inputEndedWhenIdle, .timerFiredWhenIdle:
        machine = idle()
      case .taskStartedWhenFinished: machine = finished()
      case .taskStartedWhenRunningWithATask: machine = running(task: task)
      case .taskStartedWhenCancelledWithATask: machine = cancelled(task: task)
      case .inputWaitsWhenRunningAndThatInputIsParked:
        machine = running(logic { $0.wantsInput = false }, inputs: [.busy, .parked(5)])
      default: machine = modifying()
      }
      switch self {
      case .nextWhenModifying: _ = machine.next(at: now)
      case .suspendConsumerWhenIdle, .suspendConsumerWhenModifying: _ = machine.suspendConsumer(consumer)
      case .cancelWhenModifying: _ = machine.cancel()
      case .taskStartedWhenIdle, .taskStartedWhenFinished, .taskStartedWhenRunningWithATask,
        .taskStartedWhenCancelledWithATask, .taskStartedWhenModifying:
        _ = machine.taskStarted(task)
      case .inputWaitsWhenIdle, .inputWaitsWhenModifying: _ = machine.inputWaits(input, isCancelled: false)
      case .inputWaitsWhenRunningAndThatInputIsParked: _ = machine.inputWaits(7, index: 1, isCancelled: false)
      case .inputCancelledWhenIdle, .inputCancelledWhenModifying: _ = machine.inputCancelled()
      case .timerWaitsWhenIdle, .timerWaitsWhenModifying: _ = machine.timerWaits(timer, isCancelled: false)
      case .timerCancelledWhenIdle, .timerCancelledWhenModifying: _ = machine.timerCancelled()
      case .inputWhenIdle, .inputWhenModifying: _ = machine.input(7, at: now)
      case .inputEndedWhenIdle, .inputEndedWhenModifying: _ = machine.inputEnded(nil, at: now)
      case .timerFiredWhenIdle, .timerFiredWhenModifying: _ = machine.timerFired(at: now)
      }
    }
  }

  @Test(arguments: ImpossibleCell.allCases)
  func testImpossibleCell_stopsTheProcess(cell: ImpossibleCell) async {
    await #expect(processExitsWith: .failure) { [cell] in cell.run() }
  }
}

/// The two events of an input that pushes (a `Flow` body's `emit`): an element where nobody can
/// need waking is taken with no wakeups, and every other case is left to `input`.
@Suite("OperatorLifecycle: an input that pushes")
struct OperatorLifecyclePushingInputTests {
  typealias Logic = EmitterLogic<Int, TestError, NumberedWaiter>
  typealias Machine = OperatorLifecycle<Logic, Int, Int, Int, Int>

  func machine(consumer: Int? = nil, input: Machine.Child<Int> = .busy, ending: Bool = false) -> Machine {
    var logic = Logic(bufferSize: 4)
    if ending { _ = logic.inputEnded(nil, from: 0, at: .init()) }
    var machine = Machine(logic: logic, state: .running(Machine.Running(consumer: consumer, timer: .left, task: 4)))
    var inputs = Machine.Inputs(count: 1)
    inputs.set(0, input)
    machine.inputs = inputs
    return machine
  }

  @Test func anElementWhereNobodyCanNeedWakingIsTakenWithNoWakeups() {
    var running = machine()
    #expect(running.inputWakingNobody(7, at: .init(), then: { $0.buffer }) == [7])
  }

  @Test(arguments: ["consumer parked", "input parked", "ending", "cancelled", "finished"])
  func everyOtherCaseIsLeftToInput(_ situation: String) {
    var other: Machine =
      switch situation {
      case "consumer parked": machine(consumer: 1)
      case "input parked": machine(input: .parked(2))
      case "ending": machine(ending: true)
      case "cancelled": Machine(logic: nil, state: .cancelled(Machine.Cancelled(task: 4, timerBusy: false)))
      default: Machine(logic: nil, state: .finished)
      }
    #expect(other.inputWakingNobody(7, at: .init(), then: { $0.buffer }) == nil)
    // The element is not in the logic; a retired logic has no event of its own.
    let isRetired = situation == "cancelled" || situation == "finished"
    #expect(other.withLogic { $0.buffer } == (isRetired ? nil : []))
  }
}
