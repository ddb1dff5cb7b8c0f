import Testing

@testable import AsyncFlow

/// The waiters and the task are plain numbers: consumer 1, parked task 2, task 3.
private typealias Machine = CallbacksStateMachine<Int, TestError, Int, Int, Int>
private let consumer = 1
private let waiter = 2
private let task = 3

private func idle(_ policy: FlowBufferingPolicy = .unbounded) -> Machine { Machine(policy: policy) }

private func running(
  _ buffer: [Int] = [], end: Machine.End? = nil, consumer: Int? = nil, task: Int? = 3,
  phase: Machine.Phase = .settingUp, policy: FlowBufferingPolicy = .unbounded
) -> Machine {
  Machine(
    policy: policy,
    state: .running(.init(buffer: RingBuffer(buffer), end: end, consumer: consumer, task: task, phase: phase)))
}

/// Running with the setup returned and its task parked.
private func waiting(_ buffer: [Int] = [], consumer: Int? = nil, policy: FlowBufferingPolicy = .unbounded) -> Machine {
  running(buffer, consumer: consumer, phase: .waiting(waiter), policy: policy)
}

private func cancelled(task: Int? = 3, setupRunning: Bool = false) -> Machine {
  Machine(policy: .unbounded, state: .cancelled(.init(task: task, setupRunning: setupRunning)))
}

private func finished() -> Machine { Machine(policy: .unbounded, state: .finished) }

private func show(_ value: Int?) -> String { value.map(String.init) ?? "-" }

private func show(_ end: Machine.End?) -> String {
  switch end {
  case nil: "-"
  case .finished: "finished"
  case .failed(let error): "failed(\(error.id))"
  }
}

extension CallbacksStateMachine
where
  Element == Int, Failure == TestError, Consumer == Int, TaskWaiter == Int,
  Work == Int
{
  fileprivate var label: String {
    switch state {
    case .idle: "idle"
    case .running(let running):
      "running(buffer: \(Array(running.buffer)), end: \(show(running.end)), consumer: \(show(running.consumer)), "
        + "task: \(show(running.task)), phase: \(running.phase.label))"
    case .cancelled(let cancelled): "cancelled(task: \(show(cancelled.task)), setupRunning: \(cancelled.setupRunning))"
    case .finished: "finished"
    case .modifying: "modifying"
    }
  }
}

extension CallbacksStateMachine.Phase where TaskWaiter == Int {
  fileprivate var label: String {
    switch self {
    case .settingUp: "settingUp"
    case .waiting(let waiter): "waiting(\(waiter))"
    case .cleaningUp: "cleaningUp"
    }
  }
}

private func describe(_ action: Machine.NextAction) -> String {
  switch action {
  case .startTask: "startTask"
  case .deliver(let element): "deliver \(element)"
  case .suspend: "suspend"
  case .end(let failure, let awaiting):
    "end \(failure.map { "failure \($0.id)" } ?? "finish") awaiting \(show(awaiting))"
  }
}

private func describe(_ action: Machine.CancelAction) -> String {
  var parts: [String] = []
  if let consumer = action.resumeConsumer { parts.append("consumer \(consumer)") }
  if let waiter = action.resumeTask { parts.append("resume task \(waiter)") }
  if let task = action.cancelTask { parts.append("cancel \(task)") }
  if !action.discarded.isEmpty { parts.append("discard \(Array(action.discarded))") }
  if let end = action.discardedEnd { parts.append("discard \(show(end))") }
  return parts.joined(separator: ", ")
}

private func describe(_ action: Machine.SendAction) -> String {
  var parts = [action.accepted ? "accepted" : "rejected"]
  if let consumer = action.resumeConsumer { parts.append("consumer \(consumer)") }
  if let dropped = action.dropped { parts.append("drop \(dropped)") }
  return parts.joined(separator: ", ")
}

private func describe(_ action: Machine.EndAction) -> String {
  var parts: [String] = []
  if let consumer = action.resumeConsumer { parts.append("consumer \(consumer)") }
  if let waiter = action.resumeTask { parts.append("resume task \(waiter)") }
  return parts.joined(separator: ", ")
}

/// Every event in every state: idle, running (its phase: setting up, waiting, cleaning up; with
/// or without elements, an end, a consumer, a task), cancelled, finished and modifying, by 7
/// events. The possible cells are tested below by event; the impossible ones stop the process,
/// tested with exit tests.
@Suite("CallbacksStateMachine", .timeLimit(.minutes(1)))
struct CallbacksStateMachineTests {
  // MARK: next

  @Test func testNext_whenIdle_startsTheTask() {
    var machine = idle()
    #expect(describe(machine.next()) == "startTask")
    #expect(machine.label == "running(buffer: [], end: -, consumer: -, task: -, phase: settingUp)")
  }

  @Test func testNext_whenRunningWithElements_deliversTheOldest() {
    var machine = waiting([1, 2])
    #expect(describe(machine.next()) == "deliver 1")
    #expect(machine.label == "running(buffer: [2], end: -, consumer: -, task: 3, phase: waiting(2))")
  }

  @Test func testNext_whenRunningWithNothing_suspends() {
    var machine = waiting()
    #expect(describe(machine.next()) == "suspend")
    #expect(machine.label == "running(buffer: [], end: -, consumer: -, task: 3, phase: waiting(2))")
  }

  @Test func testNext_whenRunningEndedWithElements_deliversThemBeforeTheEnd() {
    var machine = running([1], end: .failed(TestError(id: 5)), phase: .cleaningUp)
    #expect(describe(machine.next()) == "deliver 1")
    #expect(describe(machine.next()) == "end failure 5 awaiting 3")
    #expect(machine.label == "finished")
  }

  @Test func testNext_whenRunningEndedWhileTheSetupRuns_endsAwaitingTheTask() {
    // The task will find the end when the setup returns, and run the cleanup: wait for it.
    var machine = running(end: .finished, phase: .settingUp)
    #expect(describe(machine.next()) == "end finish awaiting 3")
    #expect(machine.label == "finished")
  }

  @Test func testNext_whenCancelled_endsAwaitingTheTask() {
    var machine = cancelled()
    #expect(describe(machine.next()) == "end finish awaiting 3")
    #expect(machine.label == "finished")
  }

  @Test func testNext_whenFinished_endsAgainAwaitingNothing() {
    var machine = finished()
    #expect(describe(machine.next()) == "end finish awaiting -")
    #expect(machine.label == "finished")
  }

  // MARK: suspendConsumer

  @Test func testSuspendConsumer_whenRunningWithNothing_parks() {
    var machine = waiting()
    #expect(machine.suspendConsumer(consumer) == nil)
    #expect(machine.label == "running(buffer: [], end: -, consumer: 1, task: 3, phase: waiting(2))")
  }

  @Test func testSuspendConsumer_whenRunningWithAnElementOrTheEnd_resumesAtOnce() {
    var machine = waiting([1])
    #expect(machine.suspendConsumer(consumer) == consumer)
    #expect(machine.label == "running(buffer: [1], end: -, consumer: -, task: 3, phase: waiting(2))")
    machine = running(end: .finished, phase: .cleaningUp)
    #expect(machine.suspendConsumer(consumer) == consumer)
  }

  @Test func testSuspendConsumer_whenCancelledOrFinished_resumesAtOnce() {
    var machine = cancelled()
    #expect(machine.suspendConsumer(consumer) == consumer)
    #expect(machine.label == "cancelled(task: 3, setupRunning: false)")
    machine = finished()
    #expect(machine.suspendConsumer(consumer) == consumer)
    #expect(machine.label == "finished")
  }

  // MARK: cancel

  @Test func testCancel_whenIdle_finishesWithoutATask() {
    var machine = idle()
    #expect(describe(machine.cancel()) == "")
    #expect(machine.label == "finished")
  }

  @Test func testCancel_whenSettingUp_cancelsTheTaskAndDiscardsTheBuffer() {
    var machine = running([1, 2], consumer: nil, phase: .settingUp)
    #expect(describe(machine.cancel()) == "cancel 3, discard [1, 2]")
    #expect(machine.label == "cancelled(task: 3, setupRunning: true)")
  }

  @Test func testCancel_whenSettingUpBeforeTheTaskIsRegistered_remembersToCancelIt() {
    var machine = running(task: nil, phase: .settingUp)
    #expect(describe(machine.cancel()) == "")
    #expect(machine.label == "cancelled(task: -, setupRunning: true)")
  }

  @Test func testCancel_whenWaiting_resumesTheTaskForTheCleanupWithoutCancellingIt() {
    var machine = waiting(consumer: consumer)
    #expect(describe(machine.cancel()) == "consumer 1, resume task 2")
    #expect(machine.label == "cancelled(task: 3, setupRunning: false)")
  }

  @Test func testCancel_whenCleaningUp_leavesTheCleanupAloneAndDiscardsTheEnd() {
    var machine = running([4], end: .failed(TestError(id: 1)), phase: .cleaningUp)
    #expect(describe(machine.cancel()) == "discard [4], discard failed(1)")
    #expect(machine.label == "cancelled(task: 3, setupRunning: false)")
  }

  @Test func testCancel_whenCancelledOrFinished_doesNothing() {
    var machine = cancelled()
    #expect(describe(machine.cancel()) == "")
    #expect(machine.label == "cancelled(task: 3, setupRunning: false)")
    machine = finished()
    #expect(describe(machine.cancel()) == "")
    #expect(machine.label == "finished")
  }

  // MARK: taskStarted

  @Test func testTaskStarted_whenRunning_registersIt() {
    var machine = running(task: nil)
    #expect(machine.taskStarted(task) == nil)
    #expect(machine.label == "running(buffer: [], end: -, consumer: -, task: 3, phase: settingUp)")
  }

  @Test func testTaskStarted_whenRunningAndTheSetupAlreadyReturned_registersIt() {
    // The task may run its setup on another thread before the consumer registers it.
    var machine = running(task: nil, phase: .waiting(waiter))
    #expect(machine.taskStarted(task) == nil)
    #expect(machine.label == "running(buffer: [], end: -, consumer: -, task: 3, phase: waiting(2))")
  }

  @Test func testTaskStarted_whenCancelledWhileTheSetupRuns_cancelsIt() {
    var machine = cancelled(task: nil, setupRunning: true)
    #expect(machine.taskStarted(task) == task)
    #expect(machine.label == "cancelled(task: 3, setupRunning: true)")
  }

  @Test func testTaskStarted_whenCancelledAfterTheSetupReturned_letsTheCleanupRun() {
    var machine = cancelled(task: nil, setupRunning: false)
    #expect(machine.taskStarted(task) == nil)
    #expect(machine.label == "cancelled(task: 3, setupRunning: false)")
  }

  // MARK: taskWaits

  @Test func testTaskWaits_whenSettingUp_parks() {
    var machine = running([1])
    #expect(machine.taskWaits(waiter) == nil)
    #expect(machine.label == "running(buffer: [1], end: -, consumer: -, task: 3, phase: waiting(2))")
  }

  @Test func testTaskWaits_whenTheEndCameDuringTheSetup_resumesAtOnceForTheCleanup() {
    var machine = running([1], end: .finished)
    #expect(machine.taskWaits(waiter) == waiter)
    #expect(machine.label == "running(buffer: [1], end: finished, consumer: -, task: 3, phase: cleaningUp)")
  }

  @Test func testTaskWaits_whenCancelled_resumesAtOnceForTheCleanup() {
    var machine = cancelled(setupRunning: true)
    #expect(machine.taskWaits(waiter) == waiter)
    #expect(machine.label == "cancelled(task: 3, setupRunning: false)")
  }

  @Test func testTaskWaits_whenFinished_resumesAtOnceForTheCleanup() {
    var machine = finished()
    #expect(machine.taskWaits(waiter) == waiter)
    #expect(machine.label == "finished")
  }

  // MARK: send

  @Test func testSend_whenRunning_buffersAndWakesTheConsumer() {
    var machine = waiting(consumer: consumer)
    #expect(describe(machine.send(7)) == "accepted, consumer 1")
    #expect(machine.label == "running(buffer: [7], end: -, consumer: -, task: 3, phase: waiting(2))")
  }

  /// The buffer's storage stays where it is: an append that copied the buffer (as one under a
  /// guarded `case ... where` pattern does) would make every `send` cost the whole backlog.
  @Test func testSend_whenRunning_appendsInPlaceWithoutCopyingTheBuffer() {
    var machine = waiting([1, 2, 3])
    guard case .running(let before) = machine.state else { return }
    let address = before.buffer.storageAddress
    #expect(before.buffer.capacity == 4)  // room for one more: no growth below
    _ = consume before
    #expect(describe(machine.send(4)) == "accepted")
    guard case .running(let after) = machine.state else { return }
    #expect(after.buffer.storageAddress == address)
  }

  @Test func testSend_whenSettingUp_buffers() {
    // `setup` may send at once, before it returns.
    var machine = running()
    #expect(describe(machine.send(7)) == "accepted")
    #expect(machine.label == "running(buffer: [7], end: -, consumer: -, task: 3, phase: settingUp)")
  }

  @Test func testSend_whenBufferingOldestIsFull_rejectsTheNewElement() {
    var machine = waiting([1, 2], policy: .bufferingOldest(2))
    #expect(describe(machine.send(3)) == "rejected")
    #expect(machine.label == "running(buffer: [1, 2], end: -, consumer: -, task: 3, phase: waiting(2))")
  }

  @Test func testSend_whenBufferingNewestIsFull_dropsTheOldestForTheNewElement() {
    var machine = waiting([1, 2], policy: .bufferingNewest(2))
    #expect(describe(machine.send(3)) == "accepted, drop 1")
    #expect(machine.label == "running(buffer: [2, 3], end: -, consumer: -, task: 3, phase: waiting(2))")
  }

  @Test func testSend_whenTheBoundIsZero_keepsNothingAndWakesNobody() {
    var machine = waiting(consumer: consumer, policy: .bufferingNewest(0))
    #expect(describe(machine.send(3)) == "rejected")
    machine = waiting(consumer: consumer, policy: .bufferingOldest(0))
    #expect(describe(machine.send(3)) == "rejected")
    #expect(machine.label == "running(buffer: [], end: -, consumer: 1, task: 3, phase: waiting(2))")
  }

  @Test func testSend_whenEndedCancelledOrFinished_isIgnored() {
    var machine = running([1], end: .finished, phase: .cleaningUp)
    #expect(describe(machine.send(2)) == "rejected")
    #expect(machine.label == "running(buffer: [1], end: finished, consumer: -, task: 3, phase: cleaningUp)")
    machine = cancelled()
    #expect(describe(machine.send(2)) == "rejected")
    machine = finished()
    #expect(describe(machine.send(2)) == "rejected")
    #expect(machine.label == "finished")
  }

  // MARK: end

  @Test func testEnd_whenWaiting_wakesTheConsumerAndResumesTheTaskForTheCleanup() {
    var machine = waiting(consumer: consumer)
    #expect(describe(machine.end(.failed(TestError(id: 9)))) == "consumer 1, resume task 2")
    #expect(machine.label == "running(buffer: [], end: failed(9), consumer: -, task: 3, phase: cleaningUp)")
  }

  @Test func testEnd_whenSettingUp_waitsForTheSetupToReturn() {
    var machine = running([1])
    #expect(describe(machine.end(.finished)) == "")
    #expect(machine.label == "running(buffer: [1], end: finished, consumer: -, task: 3, phase: settingUp)")
  }

  @Test func testEnd_whenAlreadyEndedCancelledOrFinished_isIgnored() {
    var machine = running(end: .finished, phase: .cleaningUp)
    #expect(describe(machine.end(.failed(TestError(id: 1)))) == "")
    #expect(machine.label == "running(buffer: [], end: finished, consumer: -, task: 3, phase: cleaningUp)")
    machine = cancelled()
    #expect(describe(machine.end(.finished)) == "")
    machine = finished()
    #expect(describe(machine.end(.finished)) == "")
    #expect(machine.label == "finished")
  }

  // MARK: Impossible transitions

  /// A cell that cannot happen: the machine stops the process.
  enum ImpossibleCell: String, Codable, Sendable, CaseIterable {
    case suspendConsumerWhenIdle, taskStartedWhenIdle, taskWaitsWhenIdle, sendWhenIdle, endWhenIdle
    case taskStartedWhenFinished, taskStartedWhenRunningWithATask, taskStartedWhenCancelledWithATask
    case taskWaitsWhenWaiting, taskWaitsWhenCleaningUp
    case nextWhenModifying, suspendConsumerWhenModifying, cancelWhenModifying, taskStartedWhenModifying
    case taskWaitsWhenModifying, sendWhenModifying, endWhenModifying
    case twoConsumersSuspended

    func run() {
      var machine: Machine
      switch self {
      case .suspendConsumerWhenIdle, .taskStartedWhenIdle, .taskWaitsWhenIdle, .sendWhenIdle, .endWhenIdle:
        machine = idle()
      case .taskStartedWhenFinished: machine = finished()
      case .taskStartedWhenRunningWithATask: machine = running(task: task)
      case .taskStartedWhenCancelledWithATask: machine = cancelled(task: task)
      case .taskWaitsWhenWaiting: machine = waiting()
      case .taskWaitsWhenCleaningUp: machine = running(end: .finished, phase: .cleaningUp)
      case .twoConsumersSuspended: machine = waiting(consumer: consumer)
      default: machine = Machine(policy: .unbounded, state: .modifying)
      }
      switch self {
      case .nextWhenModifying: _ = machine.next()
      case .suspendConsumerWhenIdle, .suspendConsumerWhenModifying, .twoConsumersSuspended:
        _ = machine.suspendConsumer(consumer)
      case .cancelWhenModifying: _ = machine.cancel()
      case .taskStartedWhenIdle, .taskStartedWhenFinished, .taskStartedWhenRunningWithATask,
        .taskStartedWhenCancelledWithATask, .taskStartedWhenModifying:
        _ = machine.taskStarted(task)
      case .taskWaitsWhenIdle, .taskWaitsWhenWaiting, .taskWaitsWhenCleaningUp, .taskWaitsWhenModifying:
        _ = machine.taskWaits(waiter)
      case .sendWhenIdle, .sendWhenModifying: _ = machine.send(7)
      case .endWhenIdle, .endWhenModifying: _ = machine.end(.finished)
      }
    }
  }

  @Test(arguments: ImpossibleCell.allCases)
  func testImpossibleTransition_stopsTheProcess(cell: ImpossibleCell) async {
    await #expect(processExitsWith: .failure) { [cell] in cell.run() }
  }
}
