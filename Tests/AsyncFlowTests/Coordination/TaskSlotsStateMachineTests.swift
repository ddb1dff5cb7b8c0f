import Testing

@testable import AsyncFlow

/// The registry's decisions, state × event, as a table of plain values: watchers and tasks are
/// numbers (run `n`'s task is `100 × n`). States of one identity: idle (no slot), one run (of any
/// policy: the new run's policy decides), several (queued or concurrent), and the registry closed.
@Suite("TaskSlotsStateMachine", .timeLimit(.minutes(1)))
struct TaskSlotsStateMachineTests {
  typealias Machine = TaskSlotsStateMachine<String, Int, Int>

  static let policies: [SlotPolicy] = [.latestWins, .firstWins, .queue, .concurrent]

  /// `id`'s registrations as (token, task) pairs; empty when idle.
  private func slot(_ machine: Machine, _ id: String = "id") -> [Pair] {
    guard case .open(let open) = machine.state, let slot = open.slots[id] else { return [] }
    return slot.map { Pair(token: $0.token, task: $0.task) }
  }

  struct Pair: Equatable {
    var token: Int
    var task: Int?
  }

  /// A run registered under `policy` with its task (`100 × token`) attached; `nil` if ignored.
  @discardableResult
  private func register(_ machine: inout Machine, _ id: String = "id", policy: SlotPolicy) -> Int? {
    guard case .start(let token, _, _, _) = machine.reserve(id, policy: policy) else { return nil }
    guard case .attached = machine.attach(100 * token, id: id, token: token) else {
      Issue.record("run \(token) not attached")
      return token
    }
    return token
  }

  /// What `reserve` decided, as plain values.
  private func started(_ action: Machine.ReserveAction) -> (
    token: Int, superseded: [Pair], predecessors: Int, wakes: [Bool?]
  )? {
    guard case .start(let token, let superseded, let predecessors, let wakes) = action else { return nil }
    let pairs = (superseded.map { Array($0) } ?? []).map { Pair(token: $0.token, task: $0.task) }
    return (token, pairs, predecessors.count, wakes.map { $0.running })
  }

  // MARK: reserve

  @Test(arguments: policies)
  func testReserve_whenIdle_startsAndWakesWhoWatchesIt(policy: SlotPolicy) {
    var machine = Machine()
    #expect(machine.watch("id", last: false, watcher: 0, continuation: 7, isCancelled: false).isParked)
    let decision = started(machine.reserve("id", policy: policy))
    #expect(decision?.token == 1)
    #expect(decision?.superseded == [] && decision?.predecessors == 0)
    #expect(decision?.wakes == [true])
    #expect(slot(machine) == [Pair(token: 1, task: nil)])  // reserved, no task yet
    #expect(machine.runningCount == 1 && machine.watchers.isEmpty)
  }

  /// The grid: one registered run of `existing`'s policy, then a run of `new`'s. The existing
  /// run's policy never matters; the new run's decides.
  @Test(arguments: policies, policies)
  func testReserve_whenOneRunIsRegistered(existing: SlotPolicy, new: SlotPolicy) {
    var machine = Machine()
    register(&machine, policy: existing)
    let action = machine.reserve("id", policy: new)
    let decision = started(action)
    switch new {
    case .latestWins:
      #expect(decision?.superseded == [Pair(token: 1, task: 100)] && decision?.predecessors == 0)
      #expect(slot(machine) == [Pair(token: 2, task: nil)])  // the old registration left in the same step
      #expect(machine.runningCount == 1)
    case .firstWins:
      #expect(decision == nil)
      #expect(slot(machine) == [Pair(token: 1, task: 100)])
      #expect(machine.runningCount == 1)
    case .queue:
      #expect(decision?.superseded == [] && decision?.predecessors == 1)
      #expect(machine.awaitedEnds.keys.sorted() == [1])
      #expect(slot(machine).map(\.token) == [1, 2] && machine.runningCount == 2)
    default:
      #expect(decision?.superseded == [] && decision?.predecessors == 0)
      #expect(slot(machine).map(\.token) == [1, 2] && machine.runningCount == 2)
    }
    #expect(decision?.wakes ?? [] == [])  // running stays running: nothing to report
  }

  /// A running queued run and one waiting behind it, then a run of each policy.
  @Test(arguments: policies)
  func testReserve_whenSeveralAreRegistered(new: SlotPolicy) {
    var machine = Machine()
    register(&machine, policy: .queue)
    register(&machine, policy: .queue)
    let decision = started(machine.reserve("id", policy: new))
    switch new {
    case .latestWins:
      // Both leave: the waiting one is cancelled before its operation, which then never runs.
      #expect(decision?.superseded == [Pair(token: 1, task: 100), Pair(token: 2, task: 200)])
      #expect(slot(machine).map(\.token) == [3] && machine.runningCount == 1)
    case .firstWins:
      #expect(decision == nil)
      #expect(slot(machine).map(\.token) == [1, 2])
    case .queue:
      #expect(decision?.superseded == [] && decision?.predecessors == 2)
      #expect(slot(machine).map(\.token) == [1, 2, 3])
    default:
      #expect(decision?.superseded == [] && decision?.predecessors == 0)
      #expect(slot(machine).map(\.token) == [1, 2, 3] && machine.runningCount == 3)
    }
  }

  @Test(arguments: policies)
  func testReserve_whenAnotherIdentityRuns_neverTouchesIt(policy: SlotPolicy) {
    var machine = Machine()
    register(&machine, "other", policy: .firstWins)
    let decision = started(machine.reserve("id", policy: policy))
    #expect(decision?.superseded == [] && decision?.predecessors == 0)
    #expect(slot(machine, "other") == [Pair(token: 1, task: 100)])
  }

  @Test func testReserve_withALogNumber_startsThatRun() {
    var machine = Machine()
    #expect(started(machine.reserve("id", policy: .concurrent, token: 7))?.token == 7)
    #expect(started(machine.reserve("id", policy: .concurrent))?.token == 8)
  }

  /// The `TaskSlots` went during its own `run` (after its last use there): nothing starts.
  @Test(arguments: policies)
  func testReserve_whenClosed_ignores(policy: SlotPolicy) {
    var machine = Machine()
    _ = machine.close()
    #expect(started(machine.reserve("id", policy: policy)) == nil)
    #expect(machine.runningCount == 0 && !machine.isRunning("id"))
  }

  /// `runAndWait` with `firstWins` while runs are registered: nothing starts, and the call gets
  /// the ends of every registered run to wait for; without `joining`, none.
  @Test func testReserveFirstWinsJoining_whenRunsAreRegistered_handsOutTheirEnds() {
    var machine = Machine()
    register(&machine, policy: .concurrent)
    register(&machine, policy: .concurrent)
    guard case .ignore(let inFlight) = machine.reserve("id", policy: .firstWins, joining: true) else {
      Issue.record("a firstWins run on a busy identity started")
      return
    }
    #expect(inFlight.count == 2 && machine.runningCount == 2)
    guard case .ignore(let none) = machine.reserve("id", policy: .firstWins) else { return }
    #expect(none.isEmpty)
    #expect(machine.finished(id: "id", token: 1).firesSignal)
    #expect(inFlight[0].isFired && !inFlight[1].isFired)
  }

  @Test func testReserveFirstWinsJoining_whenIdle_starts() {
    var machine = Machine()
    #expect(started(machine.reserve("id", policy: .firstWins, joining: true))?.token == 1)
  }

  // MARK: mayBegin

  /// A run's task asks, on the operation's isolation, right before the operation: only a run still
  /// registered begins.
  @Test func testMayBegin_whenRegisteredOrLeft() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    #expect(machine.mayBegin("id", token: 1))
    register(&machine, policy: .latestWins)
    #expect(!machine.mayBegin("id", token: 1))  // superseded
    #expect(machine.mayBegin("id", token: 2))
    register(&machine, policy: .queue)
    #expect(machine.mayBegin("id", token: 3))  // queued: registered, its turn checked by its task
    _ = machine.cancel("id")
    #expect(!machine.mayBegin("id", token: 2) && !machine.mayBegin("id", token: 3))
    register(&machine, policy: .latestWins)
    _ = machine.close()
    #expect(!machine.mayBegin("id", token: 4))
  }

  // MARK: attach

  @Test func testAttach_whenSeveralAreRegistered_attachesToItsOwn() {
    var machine = Machine()
    register(&machine, policy: .concurrent)
    _ = machine.reserve("id", policy: .concurrent)
    #expect(machine.attach(200, id: "id", token: 2).isAttached)
    #expect(slot(machine) == [Pair(token: 1, task: 100), Pair(token: 2, task: 200)])
  }

  /// Every way a run can leave before its task exists: the task is cancelled at once.
  @Test func testAttach_whenTheRunLeft_cancels() {
    var cancelled = Machine()
    _ = cancelled.reserve("id", policy: .latestWins)
    _ = cancelled.cancel("id")
    #expect(!cancelled.attach(100, id: "id", token: 1).isAttached)

    var superseded = Machine()
    _ = superseded.reserve("id", policy: .latestWins)
    _ = superseded.reserve("id", policy: .latestWins)
    #expect(!superseded.attach(100, id: "id", token: 1).isAttached)
    #expect(slot(superseded) == [Pair(token: 2, task: nil)])

    var dropped = Machine()
    register(&dropped, policy: .queue)
    _ = dropped.reserve("id", policy: .queue)
    _ = dropped.reserve("id", policy: .latestWins)
    #expect(!dropped.attach(200, id: "id", token: 2).isAttached)

    var closed = Machine()
    _ = closed.reserve("id", policy: .latestWins)
    _ = closed.close()
    #expect(!closed.attach(100, id: "id", token: 1).isAttached)
  }

  /// A run superseded before its caller (on another thread) attached its task: every later
  /// `latestWins` run of its identity waits for its cancellation, until the caller reports it fired.
  @Test func testReserveLatestWins_whenARunWasSupersededBeforeItsTaskWasAttached_waitsForItsCancellation() {
    var machine = Machine()
    _ = machine.reserve("id", policy: .latestWins)  // run 1: its caller is not back yet
    #expect(started(machine.reserve("id", policy: .latestWins))?.predecessors == 1)
    #expect(machine.attach(200, id: "id", token: 2).isAttached)
    #expect(started(machine.reserve("id", policy: .latestWins))?.predecessors == 1)  // run 1 still pending
    #expect(machine.attach(300, id: "id", token: 3).isAttached)
    #expect(started(machine.reserve("other", policy: .latestWins))?.predecessors == 0)
    #expect(started(machine.reserve("id", policy: .queue))?.predecessors == 1)  // behind run 3 only
    #expect(machine.attach(500, id: "id", token: 5).isAttached)
    guard case .cancel(let signal?) = machine.attach(100, id: "id", token: 1) else {
      Issue.record("run 1's attachment did not hand out its cancellation")
      return
    }
    #expect(!signal.isFired)
    // Between the attachment and the cancellation, a new run still waits.
    #expect(started(machine.reserve("id", policy: .latestWins))?.predecessors == 1)
    #expect(machine.attach(600, id: "id", token: 6).isAttached)
    machine.cancellationFired(1)
    #expect(started(machine.reserve("id", policy: .latestWins))?.predecessors == 0)
  }

  // MARK: finished

  @Test func testFinished_whenTheOnlyRun_makesTheIdentityIdleAndWakesItsWatchers() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    _ = machine.watch("id", last: true, watcher: 0, continuation: 7, isCancelled: false)
    _ = machine.watch("other", last: false, watcher: 1, continuation: 8, isCancelled: false)
    guard case .wake(let wakes, let signal) = machine.finished(id: "id", token: 1) else {
      Issue.record("the watcher of \"id\" is woken")
      return
    }
    #expect(wakes.map(\.watcher) == [7] && wakes.map(\.running) == [false] && signal == nil)
    #expect(slot(machine) == [] && machine.runningCount == 0)
    #expect(machine.watchers.map(\.watcher) == [8])
  }

  @Test func testFinished_whenSuperseded_leavesTheSuccessor() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    register(&machine, policy: .latestWins)
    #expect(machine.finished(id: "id", token: 1).isNone)
    #expect(slot(machine) == [Pair(token: 2, task: 200)])
    #expect(machine.runningCount == 1)
  }

  @Test func testFinished_whenOneOfSeveral_keepsTheOthers() {
    var machine = Machine()
    for _ in 1...3 { register(&machine, policy: .concurrent) }
    #expect(machine.finished(id: "id", token: 2).isNone)
    #expect(slot(machine).map(\.token) == [1, 3] && machine.runningCount == 2)
    #expect(machine.finished(id: "id", token: 1).isNone)
    #expect(slot(machine) == [Pair(token: 3, task: 300)])
  }

  /// The signal a queued run waits for fires when the task really ends, in every state: after its
  /// registration left, and after the registry closed.
  @Test(arguments: [false, true])
  func testFinished_whenAQueuedRunWaits_firesItsSignal(closedFirst: Bool) {
    var machine = Machine()
    register(&machine, policy: .queue)
    register(&machine, policy: .queue)
    _ = closedFirst ? machine.close() : machine.cancel("id")
    let awaited = machine.awaitedEnds[1]
    guard case .wake(let wakes, let signal?) = machine.finished(id: "id", token: 1) else {
      Issue.record("the end of run 1 is awaited")
      return
    }
    #expect(wakes.isEmpty && signal === awaited)
    #expect(machine.awaitedEnds.isEmpty)
    #expect(machine.finished(id: "id", token: 2).isNone)
  }

  // MARK: cancel, cancelAll, close

  @Test func testCancel_whenIdle_doesNothing() {
    var machine = Machine()
    register(&machine, "other", policy: .latestWins)
    #expect(machine.cancel("id").isNone)
    #expect(machine.runningCount == 1)
  }

  @Test func testCancel_whenSeveralAreRegistered_removesThemAll() {
    var machine = Machine()
    register(&machine, policy: .queue)
    register(&machine, policy: .queue)
    _ = machine.watch("id", last: true, watcher: 0, continuation: 7, isCancelled: false)
    guard case .cancel(let removed, let wakes) = machine.cancel("id") else {
      Issue.record("expected cancel")
      return
    }
    #expect(removed.map(\.task) == [100, 200])
    #expect(wakes.map(\.watcher) == [7] && wakes.map(\.running) == [false])
    #expect(slot(machine) == [] && machine.runningCount == 0)
  }

  @Test func testCancelAll_whenRunning_removesEveryIdentity() {
    var machine = Machine()
    register(&machine, "a", policy: .latestWins)
    register(&machine, "b", policy: .latestWins)
    _ = machine.watch("a", last: true, watcher: 0, continuation: 7, isCancelled: false)
    guard case .cancelAll(let removed, let wakes) = machine.cancelAll() else {
      Issue.record("expected cancelAll")
      return
    }
    #expect(removed.values.flatMap { $0.compactMap(\.task) }.sorted() == [100, 200])
    #expect(wakes.map(\.watcher) == [7] && wakes.map(\.running) == [false])
    #expect(machine.runningCount == 0 && !machine.isRunning("a"))
    #expect(machine.cancelAll().isNone)
    register(&machine, "a", policy: .latestWins)  // still open
  }

  @Test func testClose_whenAWatcherSawRunning_reportsFalseThenFinishes() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    _ = machine.watch("id", last: true, watcher: 0, continuation: 7, isCancelled: false)
    guard case .cancelAll(let removed, let wakes) = machine.close() else {
      Issue.record("expected cancelAll")
      return
    }
    #expect(removed.count == 1)
    #expect(wakes.map(\.running) == [false])
    // Its next question finishes it.
    guard case .resume(nil) = machine.watch("id", last: false, watcher: 1, continuation: 8, isCancelled: false) else {
      Issue.record("a closed registry finishes its watchers")
      return
    }
  }

  @Test func testClose_whenAWatcherSawIdle_finishesIt() {
    var machine = Machine()
    _ = machine.watch("id", last: false, watcher: 0, continuation: 7, isCancelled: false)
    guard case .cancelAll(_, let wakes) = machine.close() else {
      Issue.record("expected cancelAll")
      return
    }
    #expect(wakes.map(\.watcher) == [7] && wakes.map(\.running) == [nil])
    #expect(machine.watchers.isEmpty)
  }

  @Test func testClose_whenClosed_doesNothing() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    _ = machine.close()
    #expect(machine.close().isNone && machine.cancel("id").isNone && machine.cancelAll().isNone)
    #expect(machine.runningCount == 0 && !machine.isRunning("id") && machine.isLatest("id", token: 1))
  }

  // MARK: isLatest

  @Test(arguments: [SlotPolicy.latestWins, .queue, .concurrent])
  func testIsLatest_whenANewerRunIsRegistered_isFalseUntilItEnds(policy: SlotPolicy) {
    var machine = Machine()
    let old = register(&machine, policy: .latestWins)!
    #expect(machine.isLatest("id", token: old))
    let new = register(&machine, policy: policy)!
    #expect(!machine.isLatest("id", token: old))
    #expect(machine.isLatest("id", token: new))
    _ = machine.finished(id: "id", token: new)
    // Nothing newer runs: a late cleanup of the old run may turn the spinner off.
    #expect(machine.isLatest("id", token: old))
  }

  /// "Latest", not "last": the newest of two concurrent runs is latest though the older one still
  /// runs; the guide binds the running state for a spinner over concurrent runs.
  @Test func testIsLatest_whenAnOlderConcurrentRunOutlivesIt_isTrue() {
    var machine = Machine()
    let old = register(&machine, policy: .concurrent)!
    let new = register(&machine, policy: .concurrent)!
    #expect(machine.isLatest("id", token: new))
    _ = machine.finished(id: "id", token: new)
    #expect(machine.isLatest("id", token: new) && machine.isLatest("id", token: old))
    #expect(machine.isRunning("id"))
  }

  @Test func testIsLatest_whenCancelledWithNothingAfter_isTrue() {
    var machine = Machine()
    let run = register(&machine, policy: .latestWins)!
    _ = machine.cancel("id")
    #expect(machine.isLatest("id", token: run))
    register(&machine, policy: .latestWins)
    #expect(!machine.isLatest("id", token: run))
  }

  @Test func testIsLatest_whenAFirstWinsRunWasIgnored_isTrue() {
    var machine = Machine()
    let run = register(&machine, policy: .firstWins)!
    #expect(register(&machine, policy: .firstWins) == nil)
    #expect(machine.isLatest("id", token: run))
  }

  // MARK: Running-state watchers

  /// What a watcher asking for `id`'s next state gets, by the state it delivered last.
  @Test(arguments: [
    // (running, last delivered, cancelled) → resumed with, or `nil` for parked
    (false, Bool?.none, false, Bool??.some(false)),
    (true, nil, false, true),
    (false, true, false, false),
    (true, false, false, true),
    (false, false, false, nil),
    (true, true, false, nil),
    (true, true, true, .some(nil)),
  ])
  func testWatch_whenOpen(running: Bool, last: Bool?, isCancelled: Bool, resumedWith: Bool??) {
    var machine = Machine()
    if running { register(&machine, policy: .latestWins) }
    let action = machine.watch("id", last: last, watcher: 0, continuation: 7, isCancelled: isCancelled)
    switch (action, resumedWith) {
    case (.parked, nil):
      #expect(machine.watchers.map(\.watcher) == [7])
    case (.resume(let state), let expected?):
      #expect(state == expected)
      #expect(machine.watchers.isEmpty)
    default:
      Issue.record("running \(running), last \(String(describing: last)): \(action)")
    }
  }

  @Test func testWatch_whenClosed_reportsIdleOnceThenFinishes() {
    var machine = Machine()
    _ = machine.close()
    guard case .resume(false?) = machine.watch("id", last: nil, watcher: 0, continuation: 7, isCancelled: false),
      case .resume(nil) = machine.watch("id", last: false, watcher: 0, continuation: 7, isCancelled: false)
    else {
      Issue.record("a watcher of a closed registry gets false, then finishes")
      return
    }
    #expect(machine.watchers.isEmpty)
  }

  @Test func testReserve_whenTheIdentityRunsAlready_wakesNobody() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    _ = machine.watch("id", last: true, watcher: 0, continuation: 7, isCancelled: false)
    #expect(started(machine.reserve("id", policy: .latestWins))?.wakes == [])
    #expect(machine.watchers.map(\.watcher) == [7])
  }

  @Test func testCancelWatcher_whenParked_returnsItsContinuation() {
    var machine = Machine()
    _ = machine.watch("id", last: false, watcher: 3, continuation: 7, isCancelled: false)
    #expect(machine.cancelWatcher(4) == nil)
    #expect(machine.cancelWatcher(3) == 7)
    #expect(machine.watchers.isEmpty && machine.cancelWatcher(3) == nil)
  }
}

extension TaskSlotsStateMachine.WatchAction {
  fileprivate var isParked: Bool {
    if case .parked = self { true } else { false }
  }
}

extension TaskSlotsStateMachine.AttachAction {
  fileprivate var isAttached: Bool {
    if case .attached = self { true } else { false }
  }
}

extension TaskSlotsStateMachine.EndAction {
  fileprivate var isNone: Bool {
    if case .none = self { true } else { false }
  }

  /// Fires the signal it hands out (a queued or joined caller waits for this end), as the storage does.
  fileprivate var firesSignal: Bool {
    guard case .wake(_, let signal?) = self else { return false }
    signal.fire()
    return true
  }
}

extension TaskSlotsStateMachine.CancelAction {
  fileprivate var isNone: Bool {
    if case .none = self { true } else { false }
  }
}
