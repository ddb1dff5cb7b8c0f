import Testing

@testable import AsyncFlow

/// The single flight's decisions, state × event, as a table of plain values: waiters are names,
/// tasks are numbers. States of one identity: idle (no entry), starting (decided, no task yet),
/// running (task attached); each with one or two waiters where that matters.
@Suite("SingleFlightStateMachine", .hangGuard)
struct SingleFlightStateMachineTests {
  typealias Machine = SingleFlightStateMachine<String, String, Int>

  /// The identity's state as plain values: `nil` when idle.
  private func flight(_ machine: Machine, _ id: String = "id") -> (run: Int, task: Int?, waiters: [String])? {
    switch machine.flights[id] {
    case nil: nil
    case .starting(let run, _, let waiters)?: (run, nil, waiters.map(\.waiter))
    case .running(let run, let task, _, let waiters)?: (run, task, waiters.map(\.waiter))
    }
  }

  /// `waiters` callers (named a, b, ...) asked for "id"; the first started run 1.
  private func starting(waiters: Int) -> Machine {
    var machine = Machine()
    for index in 0..<waiters {
      let name = String(UnicodeScalar(UInt8(97 + index)))
      _ = machine.join("id", waiterID: index, waiter: name, priority: .medium, isCancelled: false)
    }
    return machine
  }

  /// As `starting`, with run 1's task (number 100) attached.
  private func running(waiters: Int) -> Machine {
    var machine = starting(waiters: waiters)
    guard case .attached = machine.attach("id", run: 1, task: 100) else {
      Issue.record("run 1 not attached")
      return machine
    }
    return machine
  }

  // MARK: join

  @Test func testJoin_whenIdle_startsARun() {
    var machine = Machine()
    guard case .start(let run) = machine.join("id", waiterID: 0, waiter: "a", priority: .medium, isCancelled: false) else {
      Issue.record("expected start")
      return
    }
    #expect(run == 1)
    #expect(flight(machine)! == (1, nil, ["a"]))
  }

  @Test func testJoin_whenIdle_withALogNumber_startsThatRun() {
    var machine = Machine()
    guard case .start(let run) = machine.join("id", waiterID: 0, waiter: "a", number: 7, priority: .medium, isCancelled: false) else {
      Issue.record("expected start")
      return
    }
    #expect(run == 7)
    #expect(flight(machine)!.run == 7)
  }

  @Test func testJoin_whenStarting_joins() {
    var machine = starting(waiters: 1)
    guard case .join(let run) = machine.join("id", waiterID: 1, waiter: "b", priority: .medium, isCancelled: false) else {
      Issue.record("expected join")
      return
    }
    #expect(run == 1)
    #expect(flight(machine)! == (1, nil, ["a", "b"]))
  }

  @Test func testJoin_whenRunning_joins() {
    var machine = running(waiters: 1)
    guard case .join(let run) = machine.join("id", waiterID: 1, waiter: "b", priority: .medium, isCancelled: false) else {
      Issue.record("expected join")
      return
    }
    #expect(run == 1)
    #expect(flight(machine)! == (1, 100, ["a", "b"]))
  }

  @Test func testJoin_whenRunningAnotherIdentity_startsItsOwnRun() {
    var machine = running(waiters: 1)
    guard case .start(let run) = machine.join("other", waiterID: 1, waiter: "b", priority: .medium, isCancelled: false) else {
      Issue.record("expected start")
      return
    }
    #expect(run == 2)
    #expect(flight(machine, "other")! == (2, nil, ["b"]))
    #expect(flight(machine)! == (1, 100, ["a"]))
  }

  @Test(arguments: [0, 1, 2])
  func testJoinCancelled_inEveryState_resumesAtOnceAndChangesNothing(state: Int) {
    var machine = [Machine(), starting(waiters: 1), running(waiters: 1)][state]
    let before = flight(machine)
    guard case .cancelled = machine.join("id", waiterID: 9, waiter: "z", priority: .medium, isCancelled: true) else {
      Issue.record("expected cancelled")
      return
    }
    #expect(flight(machine).map { "\($0)" } == before.map { "\($0)" })
  }

  // MARK: attach

  @Test func testAttach_whenStarting_runs() {
    var machine = starting(waiters: 2)
    guard case .attached = machine.attach("id", run: 1, task: 100) else {
      Issue.record("expected attached")
      return
    }
    #expect(flight(machine)! == (1, 100, ["a", "b"]))
  }

  @Test func testAttach_whenIdle_cancelsTheTask() {
    var machine = starting(waiters: 1)
    _ = machine.leave("id", waiterID: 0)  // the only caller left before the task existed
    guard case .cancel = machine.attach("id", run: 1, task: 100) else {
      Issue.record("expected cancel")
      return
    }
    #expect(flight(machine) == nil)
  }

  @Test func testAttach_whenStartingAnotherRun_cancelsTheTaskAndKeepsTheNewRun() {
    var machine = starting(waiters: 1)
    _ = machine.leave("id", waiterID: 0)
    _ = machine.join("id", waiterID: 1, waiter: "b", priority: .medium, isCancelled: false)  // run 2
    guard case .cancel = machine.attach("id", run: 1, task: 100) else {
      Issue.record("expected cancel")
      return
    }
    #expect(flight(machine)! == (2, nil, ["b"]))
  }

  // MARK: leave

  @Test func testLeave_whenIdle_doesNothing() {
    var machine = Machine()
    guard case .none = machine.leave("id", waiterID: 0) else {
      Issue.record("expected none")
      return
    }
  }

  @Test(arguments: [false, true])
  func testLeave_ofAnUnknownWaiter_doesNothing(attached: Bool) {
    var machine = attached ? running(waiters: 1) : starting(waiters: 1)
    guard case .none = machine.leave("id", waiterID: 5) else {
      Issue.record("expected none")
      return
    }
    #expect(flight(machine)!.waiters == ["a"])
  }

  @Test func testLeave_whenStartingWithOthers_resumesTheCallerOnly() {
    var machine = starting(waiters: 2)
    guard case .resume(let waiter) = machine.leave("id", waiterID: 0) else {
      Issue.record("expected resume")
      return
    }
    #expect(waiter == "a")
    #expect(flight(machine)! == (1, nil, ["b"]))
  }

  @Test func testLeave_whenRunningWithOthers_resumesTheCallerOnly() {
    var machine = running(waiters: 2)
    guard case .resume(let waiter) = machine.leave("id", waiterID: 1) else {
      Issue.record("expected resume")
      return
    }
    #expect(waiter == "b")
    #expect(flight(machine)! == (1, 100, ["a"]))
  }

  @Test func testLeave_whenStartingAlone_freesTheIdentityAndLeavesTheCancelToTheAttachment() {
    var machine = starting(waiters: 1)
    guard case .resumeAndCancel(let waiter, let run, let task) = machine.leave("id", waiterID: 0) else {
      Issue.record("expected resumeAndCancel")
      return
    }
    #expect(waiter == "a" && run == 1 && task == nil)
    #expect(flight(machine) == nil)
  }

  @Test func testLeave_whenRunningAlone_freesTheIdentityAndCancelsTheTask() {
    var machine = running(waiters: 1)
    guard case .resumeAndCancel(let waiter, let run, let task) = machine.leave("id", waiterID: 0) else {
      Issue.record("expected resumeAndCancel")
      return
    }
    #expect(waiter == "a" && run == 1 && task == 100)
    #expect(flight(machine) == nil)
    // Free at once: the next caller starts a new run instead of joining the dying one.
    guard case .start(let next) = machine.join("id", waiterID: 1, waiter: "b", priority: .medium, isCancelled: false) else {
      Issue.record("expected start")
      return
    }
    #expect(next == 2)
  }

  @Test func testLeave_whenTheLastOfTwoLeaves_cancels() {
    var machine = running(waiters: 2)
    _ = machine.leave("id", waiterID: 0)
    guard case .resumeAndCancel(let waiter, _, let task) = machine.leave("id", waiterID: 1) else {
      Issue.record("expected resumeAndCancel")
      return
    }
    #expect(waiter == "b" && task == 100)
  }

  // MARK: finished

  @Test func testFinished_whenRunning_resumesEveryWaiterInJoinOrderAndFreesTheIdentity() {
    var machine = running(waiters: 2)
    guard case .resume(let waiters) = machine.finished("id", run: 1) else {
      Issue.record("expected resume")
      return
    }
    #expect(waiters == ["a", "b"])
    #expect(flight(machine) == nil)
    #expect(!machine.isRunning("id"))
  }

  @Test func testFinished_whenStarting_resumesEveryWaiter() {
    var machine = starting(waiters: 2)  // the task ended before the caller attached it
    guard case .resume(let waiters) = machine.finished("id", run: 1) else {
      Issue.record("expected resume")
      return
    }
    #expect(waiters == ["a", "b"])
    #expect(flight(machine) == nil)
    guard case .cancel = machine.attach("id", run: 1, task: 100) else {
      Issue.record("a late attachment of an ended run must not register it")
      return
    }
  }

  @Test func testFinished_whenIdle_isAbandoned() {
    var machine = running(waiters: 1)
    _ = machine.leave("id", waiterID: 0)
    guard case .abandoned = machine.finished("id", run: 1) else {
      Issue.record("expected abandoned")
      return
    }
  }

  @Test func testFinished_whenRunningAnotherRun_isAbandonedAndLeavesTheNewRun() {
    var machine = running(waiters: 1)
    _ = machine.leave("id", waiterID: 0)
    _ = machine.join("id", waiterID: 1, waiter: "b", priority: .medium, isCancelled: false)  // run 2
    guard case .abandoned = machine.finished("id", run: 1) else {
      Issue.record("expected abandoned")
      return
    }
    #expect(flight(machine)! == (2, nil, ["b"]))
  }

  // MARK: priority

  /// The priority the run's task has, or is to start with.
  private func priority(_ machine: Machine, _ id: String = "id") -> TaskPriority? {
    switch machine.flights[id] {
    case nil: nil
    case .starting(_, let priority, _)?, .running(_, _, let priority, _)?: priority
    }
  }

  @Test func testJoin_whenRunning_moreUrgent_escalatesTheTask() {
    var machine = running(waiters: 1)  // a: .medium
    guard case .joinAndEscalate(let run, let task, let to) =
      machine.join("id", waiterID: 1, waiter: "b", priority: .high, isCancelled: false)
    else {
      Issue.record("expected joinAndEscalate")
      return
    }
    #expect(run == 1 && task == 100 && to == .high)
    #expect(flight(machine)! == (1, 100, ["a", "b"]))
    #expect(priority(machine) == .high)
  }

  @Test(arguments: [TaskPriority.medium, .low])
  func testJoin_whenRunning_notMoreUrgent_joins(caller: TaskPriority) {
    var machine = running(waiters: 1)
    guard case .join(1) = machine.join("id", waiterID: 1, waiter: "b", priority: caller, isCancelled: false) else {
      Issue.record("expected join")
      return
    }
    #expect(priority(machine) == .medium)
  }

  @Test func testJoin_whenStarting_moreUrgent_joinsAndAttachEscalates() {
    var machine = starting(waiters: 1)
    guard case .join(1) = machine.join("id", waiterID: 1, waiter: "b", priority: .high, isCancelled: false) else {
      Issue.record("expected join: no task to escalate yet")
      return
    }
    #expect(priority(machine) == .medium)  // the task starts with the first caller's
    guard case .attachedAndEscalate(let to) = machine.attach("id", run: 1, task: 100) else {
      Issue.record("expected attachedAndEscalate")
      return
    }
    #expect(to == .high)
    #expect(flight(machine)! == (1, 100, ["a", "b"]))
    #expect(priority(machine) == .high)
  }

  @Test func testEscalated_whenRunning_escalatesTheTask_once() {
    var machine = running(waiters: 2)
    guard case .escalate(let task, let to) = machine.escalated("id", waiterID: 1, to: .high) else {
      Issue.record("expected escalate")
      return
    }
    #expect(task == 100 && to == .high)
    #expect(priority(machine) == .high)
    // Another caller escalated to the same priority, or less: the run is already there.
    guard case .none = machine.escalated("id", waiterID: 0, to: .high) else {
      Issue.record("expected none")
      return
    }
    #expect(flight(machine)! == (1, 100, ["a", "b"]))
  }

  @Test func testEscalated_aCallerNoLongerWaiting_doesNothing() {
    var machine = running(waiters: 2)
    _ = machine.leave("id", waiterID: 1)
    guard case .none = machine.escalated("id", waiterID: 1, to: .high) else {
      Issue.record("expected none")
      return
    }
    #expect(priority(machine) == .medium)
    var idle = Machine()
    guard case .none = idle.escalated("id", waiterID: 0, to: .high) else {
      Issue.record("expected none")
      return
    }
    #expect(flight(idle) == nil)
  }

  @Test func testEscalated_whenStarting_isWeighedWhenTheTaskIsAttached() {
    var machine = starting(waiters: 2)
    guard case .none = machine.escalated("id", waiterID: 1, to: .high) else {
      Issue.record("expected none: no task to escalate yet")
      return
    }
    guard case .attachedAndEscalate(let to) = machine.attach("id", run: 1, task: 100) else {
      Issue.record("expected attachedAndEscalate")
      return
    }
    #expect(to == .high)
    #expect(priority(machine) == .high)
  }

  @Test func testLeave_theMostUrgentCaller_doesNotLowerTheRun() {
    var machine = running(waiters: 1)
    _ = machine.join("id", waiterID: 1, waiter: "b", priority: .high, isCancelled: false)
    _ = machine.leave("id", waiterID: 1)
    #expect(priority(machine) == .high)
    // A caller at .high joins again: nothing to escalate.
    guard case .join(1) = machine.join("id", waiterID: 2, waiter: "c", priority: .high, isCancelled: false) else {
      Issue.record("expected join")
      return
    }
  }

  // MARK: queries

  @Test func testIsRunning_inEveryState() {
    #expect(!Machine().isRunning("id"))
    #expect(starting(waiters: 1).isRunning("id"))
    #expect(running(waiters: 1).isRunning("id"))
    #expect(!running(waiters: 1).isRunning("other"))
  }

  @Test func testMakeWaiterID_isUnique() {
    var machine = Machine()
    #expect((0..<3).map { _ in machine.makeWaiterID() } == [0, 1, 2])
  }
}

/// The owner's events: `close` refuses every call; `cancelAll` hands out every caller and task.
@Suite("SingleFlightStateMachine: owner")
struct SingleFlightStateMachineOwnerTests {
  typealias Machine = SingleFlightStateMachine<String, Int, String>

  @Test func joinWhenClosedIsRefusedLikeACancelledCall() {
    var machine = Machine()
    machine.close()
    guard case .cancelled = machine.join("a", waiterID: 0, waiter: 1, priority: .medium, isCancelled: false) else {
      Issue.record("a call after close must be refused")
      return
    }
    #expect(!machine.isRunning("a"))
  }

  @Test func cancelAllHandsOutEveryCallerAndEveryAttachedTask() {
    var machine = Machine()
    _ = machine.join("a", waiterID: 0, waiter: 1, priority: .medium, isCancelled: false)
    _ = machine.join("a", waiterID: 1, waiter: 2, priority: .medium, isCancelled: false)
    _ = machine.join("b", waiterID: 2, waiter: 3, priority: .medium, isCancelled: false)
    _ = machine.attach("a", run: 1, task: "task a")
    let (waiters, tasks) = machine.cancelAll()
    #expect(Set(waiters) == [1, 2, 3])
    #expect(tasks == ["task a"])
    guard case .cancel = machine.attach("b", run: 3, task: "task b") else {
      Issue.record("a run attached after cancelAll must be cancelled")
      return
    }
    guard case .abandoned = machine.finished("a", run: 1) else {
      Issue.record("a cancelled run's result reaches no one")
      return
    }
  }
}
