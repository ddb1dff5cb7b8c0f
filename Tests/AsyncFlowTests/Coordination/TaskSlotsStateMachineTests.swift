import Testing

@testable import AsyncFlow

/// The registry's decisions, state × event, as a table of plain values: waiters and tasks are
/// numbers (run `n`'s task is `100 × n`). States of one identity: idle (no slot), one run (of any
/// policy: the new run's policy decides), several (queued or concurrent), a run that began and left
/// before its task was attached, and the registry closed.
@Suite("TaskSlotsStateMachine", .hangGuard)
struct TaskSlotsStateMachineTests {
  typealias Machine = TaskSlotsStateMachine<String, Int, Int>

  static let policies: [SlotPolicy] = [.latestWins, .firstWins, .queue, .concurrent]

  /// `id`'s registrations as (token, task) pairs; empty when idle.
  private func slot(_ machine: Machine, _ id: String = "id") -> [Pair] {
    (machine.slots[id]?.runs ?? []).map { Pair(token: $0.token, task: $0.task) }
  }

  struct Pair: Equatable {
    var token: Int
    var task: Int?
  }

  /// What `reserve` decided, as plain values; `nil` if it started nothing.
  private func started(_ action: Machine.ReserveAction) -> (token: Int, superseded: [Pair], wakes: [Int])? {
    guard case .start(let token, _, let superseded, let wakes) = action else { return nil }
    return (token, superseded.map { Pair(token: $0.token, task: $0.task) }, wakes.map(\.waiter))
  }

  /// A run registered under `policy` with its task (`100 × token`) attached; `nil` if ignored.
  @discardableResult
  private func register(_ machine: inout Machine, _ id: String = "id", policy: SlotPolicy) -> Int? {
    guard let token = started(machine.reserve(id, policy: policy))?.token else { return nil }
    if case .attached = machine.attach(100 * token, id: id, token: token) { return token }
    Issue.record("run \(token) not attached")
    return token
  }

  private func begin(_ machine: inout Machine, _ token: Int, _ id: String = "id") -> String {
    switch machine.begin(id, token: token, isCancelled: false) {
    case .begin(let queued): queued ? "begin queued" : "begin"
    case .never: "never"
    case .wait: "wait"
    }
  }

  // MARK: reserve

  @Test(arguments: policies)
  func testReserve_whenIdle_startsAndWakesWhoWatchesIt(policy: SlotPolicy) {
    var machine = Machine()
    #expect(machine.watch("id", last: false, parked: (0, 7), isCancelled: false) == nil)
    let decision = started(machine.reserve("id", policy: policy))
    #expect(decision?.token == 1 && decision?.superseded == [] && decision?.wakes == [7])
    #expect(slot(machine) == [Pair(token: 1, task: nil)])  // reserved, no task yet
    #expect(machine.runningCount == 1 && machine.slots["id"]?.watchers.isEmpty == true)
  }

  /// The grid: one registered run of `existing`'s policy, then a run of `new`'s. The existing
  /// run's policy never matters; the new run's decides.
  @Test(arguments: policies, policies)
  func testReserve_whenOneRunIsRegistered(existing: SlotPolicy, new: SlotPolicy) {
    var machine = Machine()
    register(&machine, policy: existing)
    let decision = started(machine.reserve("id", policy: new))
    switch new {
    case .latestWins:
      #expect(decision?.superseded == [Pair(token: 1, task: 100)])
      #expect(slot(machine) == [Pair(token: 2, task: nil)])  // the old registration left in the same step
    case .firstWins:
      #expect(decision == nil && slot(machine) == [Pair(token: 1, task: 100)])
    default:
      #expect(decision?.superseded == [] && slot(machine).map(\.token) == [1, 2])
    }
    #expect(machine.runningCount == slot(machine).count)
    #expect(decision?.wakes ?? [] == [])  // running stays running: nothing to report
  }

  @Test(arguments: policies)
  func testReserve_whenAnotherIdentityRuns_neverTouchesIt(policy: SlotPolicy) {
    var machine = Machine()
    register(&machine, "other", policy: .firstWins)
    #expect(started(machine.reserve("id", policy: policy))?.superseded == [])
    #expect(slot(machine, "other") == [Pair(token: 1, task: 100)])
  }

  @Test func testReserve_withALogNumber_startsThatRun() {
    var machine = Machine()
    #expect(started(machine.reserve("id", policy: .concurrent, token: 7))?.token == 7)
    #expect(started(machine.reserve("id", policy: .concurrent))?.token == 8)
  }

  /// The `TaskSlots` went during its own `run` (after its last use there): nothing starts.
  @Test(arguments: policies)
  func testReserve_whenClosed_refuses(policy: SlotPolicy) {
    var machine = Machine()
    _ = machine.cancelAll(closing: true)
    guard case .refuse = machine.reserve("id", policy: policy) else {
      Issue.record("a closed registry started a run")
      return
    }
    #expect(machine.runningCount == 0 && !machine.isRunning("id"))
  }

  // MARK: begin: the one check that decides whether an operation begins

  @Test func testBegin_whenRegisteredOrLeft() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    register(&machine, policy: .latestWins)
    #expect(begin(&machine, 1) == "never")  // superseded
    #expect(begin(&machine, 2) == "begin")
    #expect(machine.begin("id", token: 2, isCancelled: true).isNever)  // its task was cancelled
    _ = machine.cancel("id")
    #expect(begin(&machine, 2) == "never")
    register(&machine, policy: .latestWins)
    _ = machine.cancelAll(closing: true)
    #expect(begin(&machine, 3) == "never")
  }

  /// A queued run waits until every run registered before it has ended, then begins (and is
  /// logged `started` then); a concurrent one registered after it never holds it back.
  @Test func testBegin_whenQueued_waitsForItsTurn() {
    var machine = Machine()
    register(&machine, policy: .concurrent)
    register(&machine, policy: .queue)
    register(&machine, policy: .concurrent)
    #expect(begin(&machine, 2) == "wait" && begin(&machine, 3) == "begin")
    #expect(machine.park("id", token: 2, waiter: 20, isCancelled: false) == nil)
    #expect(machine.finished("id", token: 3, isCancelled: false).wakes.isEmpty)
    #expect(machine.finished("id", token: 1, isCancelled: false).wakes.map(\.waiter) == [20])
    #expect(begin(&machine, 2) == "begin queued")
  }

  /// A run that begins, then leaves before its caller (on another thread) attached its task, runs
  /// uncancelled until the attachment: no later run of its identity begins until the caller
  /// reports the cancellation, except a concurrent one.
  @Test func testBegin_whenAnOlderRunMayRunUncancelled_waitsForItsCancellation() {
    var machine = Machine()
    _ = machine.reserve("id", policy: .latestWins)  // run 1: its caller is not back yet
    #expect(begin(&machine, 1) == "begin")
    register(&machine, policy: .latestWins)
    register(&machine, "other", policy: .latestWins)
    #expect(begin(&machine, 2) == "wait" && begin(&machine, 3, "other") == "begin")
    #expect(machine.park("id", token: 2, waiter: 20, isCancelled: false) == nil)
    register(&machine, policy: .concurrent)
    #expect(begin(&machine, 4) == "begin")
    guard case .cancelAndReport = machine.attach(100, id: "id", token: 1) else {
      Issue.record("run 1's attachment must cancel it and report")
      return
    }
    #expect(begin(&machine, 2) == "wait")  // between the attachment and the cancellation
    #expect(machine.cancelled([1], of: "id").map(\.waiter) == [20])
    #expect(begin(&machine, 2) == "begin")
  }

  /// A run that began with its task attached leaves in a step whose caller cancels the task after
  /// the lock: until it reports that, a run registered by another caller waits, whichever step
  /// took the begun run out (a new run, a cancel, a feeding's cancel, a cancel of everything).
  @Test(arguments: ["supersede", "cancel", "cancelFeed", "cancelAll"])
  func testBegin_whenABegunRunIsBeingCancelled_waitsForTheCancellation(by event: String) {
    var machine = Machine()
    guard let first = started(machine.reserve("id", policy: .latestWins, feed: (id: 7, isCancelled: false))) else {
      Issue.record("run 1 not started")
      return
    }
    _ = machine.attach(100, id: "id", token: first.token)
    #expect(begin(&machine, 1) == "begin")
    let removed: Machine.Removed
    switch event {
    case "supersede":
      guard case .start(_, _, let superseded, _) = machine.reserve("id", policy: .latestWins) else { return }
      removed = superseded
    case "cancel": removed = machine.cancel("id").removed
    case "cancelFeed": removed = machine.cancel("id", feed: 7).removed
    default: removed = machine.cancelAll().removed
    }
    #expect(removed.uncancelled == [1])
    let waiting = register(&machine, policy: .latestWins)!
    #expect(begin(&machine, waiting) == "wait")
    #expect(machine.park("id", token: waiting, waiter: 20, isCancelled: false) == nil)
    let id: String? = event == "cancelAll" ? nil : "id"
    #expect(machine.cancelled(removed.uncancelled, of: id).map(\.waiter) == [20])
    #expect(begin(&machine, waiting) == "begin")
  }

  /// A run that left before it began needs no cancellation to wait for: its check will fail.
  @Test func testBegin_whenAnOlderRunLeftBeforeItBegan_doesNotWait() {
    var machine = Machine()
    _ = machine.reserve("id", policy: .latestWins)
    register(&machine, policy: .latestWins)
    #expect(begin(&machine, 2) == "begin")
    guard case .cancel = machine.attach(100, id: "id", token: 1) else {
      Issue.record("run 1's attachment must cancel it")
      return
    }
  }

  /// An uncancelled run that ends before its attachment frees the runs waiting for it.
  @Test func testFinished_whenAnUncancelledRunEnds_freesWhoWaitsForIt() {
    var machine = Machine()
    _ = machine.reserve("id", policy: .latestWins)
    #expect(begin(&machine, 1) == "begin")
    register(&machine, policy: .latestWins)
    #expect(machine.park("id", token: 2, waiter: 20, isCancelled: false) == nil)
    let end = machine.finished("id", token: 1, isCancelled: false)
    #expect(!end.delivered && end.wakes.map(\.waiter) == [20])
    #expect(begin(&machine, 2) == "begin")
  }

  /// Parking re-checks, so that a change between `begin` and `park` is not lost; a cancelled
  /// task is handed back, and a parked one taken out when its task is cancelled.
  @Test func testPark() {
    var machine = Machine()
    register(&machine, policy: .queue)
    register(&machine, policy: .queue)
    #expect(machine.park("id", token: 2, waiter: 20, isCancelled: true)?.waiter == 20)
    _ = machine.finished("id", token: 1, isCancelled: false)
    #expect(machine.park("id", token: 2, waiter: 20, isCancelled: false)?.waiter == 20)  // its turn came meanwhile
    register(&machine, policy: .queue)
    #expect(machine.park("id", token: 3, waiter: 30, isCancelled: false) == nil)
    #expect(machine.unpark("id", token: 3) == 30 && machine.unpark("id", token: 3) == nil)
  }

  /// A parked run that leaves is woken, to check again and not begin.
  @Test(arguments: ["cancel", "supersede", "close"])
  func testPark_whenTheParkedRunLeaves_wakesIt(by event: String) {
    var machine = Machine()
    register(&machine, policy: .queue)
    register(&machine, policy: .queue)
    #expect(machine.park("id", token: 2, waiter: 20, isCancelled: false) == nil)
    let wakes: [Int] =
      switch event {
      case "cancel": machine.cancel("id").wakes.map(\.waiter)
      case "supersede": started(machine.reserve("id", policy: .latestWins))?.wakes ?? []
      default: machine.cancelAll(closing: true).wakes.map(\.waiter)
      }
    #expect(wakes == [20])
    #expect(begin(&machine, 2) == "never")
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
  @Test(arguments: ["cancel", "supersede", "close"])
  func testAttach_whenTheRunLeft_cancels(by event: String) {
    var machine = Machine()
    _ = machine.reserve("id", policy: .queue)
    switch event {
    case "cancel": _ = machine.cancel("id")
    case "supersede": _ = machine.reserve("id", policy: .latestWins)
    default: _ = machine.cancelAll(closing: true)
    }
    #expect(!machine.attach(100, id: "id", token: 1).isAttached)
  }

  // MARK: finished

  @Test func testFinished_whenTheOnlyRun_makesTheIdentityIdleAndWakesItsWatchers() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    _ = machine.watch("id", last: true, parked: (0, 7), isCancelled: false)
    _ = machine.watch("other", last: false, parked: (1, 8), isCancelled: false)
    let end = machine.finished("id", token: 1, isCancelled: false)
    #expect(end.delivered && end.wakes.map(\.waiter) == [7] && end.wakes.map(\.running) == [false])
    #expect(machine.slots["id"] == nil && machine.runningCount == 0)
    #expect(machine.slots["other"]?.watchers.map(\.waiter) == [8])
  }

  /// A run whose task was cancelled (its caller's cancellation) leaves, and is not delivered.
  @Test func testFinished_whenItsTaskWasCancelled_isNotDelivered() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    let end = machine.finished("id", token: 1, isCancelled: true)
    #expect(!end.delivered && machine.runningCount == 0 && machine.slots.isEmpty)
  }

  @Test func testFinished_whenSuperseded_leavesTheSuccessor() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    register(&machine, policy: .latestWins)
    let end = machine.finished("id", token: 1, isCancelled: false)
    #expect(!end.delivered && end.wakes.isEmpty)
    #expect(slot(machine) == [Pair(token: 2, task: 200)] && machine.runningCount == 1)
  }

  @Test func testFinished_whenOneOfSeveral_keepsTheOthers() {
    var machine = Machine()
    for _ in 1...3 { register(&machine, policy: .concurrent) }
    #expect(machine.finished("id", token: 2, isCancelled: false).wakes.isEmpty)
    #expect(slot(machine).map(\.token) == [1, 3] && machine.runningCount == 2)
  }

  // MARK: joiners

  /// A joined `firstWins` caller waits for the runs registered up to the one it found, not for a
  /// later one; it leaves when its caller is cancelled.
  @Test func testJoin() {
    var machine = Machine()
    register(&machine, policy: .concurrent)
    #expect(machine.join("id", parked: (0, 7), isCancelled: false) == nil)
    #expect(machine.join("id", parked: (1, 8), isCancelled: false) == nil)
    #expect(machine.join("id", parked: (2, 9), isCancelled: true)?.waiter == 9)
    register(&machine, policy: .concurrent)
    #expect(machine.leave("id", waiterID: 1) == 8 && machine.leave("id", waiterID: 1) == nil)
    #expect(machine.finished("id", token: 1, isCancelled: false).wakes.map(\.waiter) == [7])
    _ = machine.finished("id", token: 2, isCancelled: false)
    #expect(machine.join("id", parked: (3, 10), isCancelled: false)?.waiter == 10)  // ended meanwhile
  }

  // MARK: cancel, cancelAll, close

  @Test func testCancel_whenIdle_doesNothing() {
    var machine = Machine()
    register(&machine, "other", policy: .latestWins)
    #expect(machine.cancel("id").removed.count == 0 && machine.runningCount == 1)
  }

  @Test func testCancel_whenSeveralAreRegistered_removesThemAll() {
    var machine = Machine()
    register(&machine, policy: .queue)
    register(&machine, policy: .queue)
    _ = machine.watch("id", last: true, parked: (0, 7), isCancelled: false)
    let (removed, wakes) = machine.cancel("id")
    #expect(removed.map(\.task) == [100, 200])
    #expect(wakes.map(\.waiter) == [7] && wakes.map(\.running) == [false])
    #expect(slot(machine) == [] && machine.runningCount == 0)
  }

  @Test func testCancelAll_whenRunning_removesEveryIdentity() {
    var machine = Machine()
    register(&machine, "a", policy: .latestWins)
    register(&machine, "b", policy: .latestWins)
    _ = machine.watch("a", last: true, parked: (0, 7), isCancelled: false)
    let (removed, wakes) = machine.cancelAll()
    #expect(removed.compactMap(\.task).sorted() == [100, 200])
    #expect(wakes.map(\.waiter) == [7] && wakes.map(\.running) == [false])
    #expect(machine.runningCount == 0 && !machine.isRunning("a") && machine.slots.isEmpty)
    #expect(register(&machine, "a", policy: .latestWins) != nil)  // still open
  }

  @Test func testClose_whenAWatcherSawRunning_reportsFalseThenFinishes() {
    var machine = Machine()
    register(&machine, policy: .latestWins)
    _ = machine.watch("id", last: true, parked: (0, 7), isCancelled: false)
    let (removed, wakes) = machine.cancelAll(closing: true)
    #expect(removed.count == 1 && wakes.map(\.running) == [false])
    let next = machine.watch("id", last: false, parked: (1, 8), isCancelled: false)
    #expect(next?.waiter == 8 && next?.running == nil)  // a closed registry finishes its watchers
  }

  @Test func testClose_whenAWatcherOrAJoinerWaits_resumesIt() {
    var machine = Machine()
    _ = machine.watch("idle", last: false, parked: (0, 7), isCancelled: false)
    register(&machine, policy: .firstWins)
    #expect(machine.join("id", parked: (1, 8), isCancelled: false) == nil)
    let wakes = machine.cancelAll(closing: true).wakes
    #expect(wakes.map(\.waiter).sorted() == [7, 8] && wakes.allSatisfy { $0.running == nil })
    #expect(machine.slots.isEmpty)
    #expect(machine.cancelAll(closing: true).removed.count == 0 && machine.isLatest("id", token: 1))
  }

  // MARK: isLatest

  @Test(arguments: [SlotPolicy.latestWins, .queue, .concurrent])
  func testIsLatest_whenANewerRunIsRegistered_isFalseUntilItEnds(policy: SlotPolicy) {
    var machine = Machine()
    let old = register(&machine, policy: .latestWins)!
    #expect(machine.isLatest("id", token: old))
    let new = register(&machine, policy: policy)!
    #expect(!machine.isLatest("id", token: old) && machine.isLatest("id", token: new))
    _ = machine.finished("id", token: new, isCancelled: false)
    // Nothing newer runs: a late cleanup of the old run may turn the spinner off.
    #expect(machine.isLatest("id", token: old))
  }

  /// "Latest", not "last": the newest of two concurrent runs is latest though the older one still
  /// runs; the guide binds the running state for a spinner over concurrent runs.
  @Test func testIsLatest_whenAnOlderConcurrentRunOutlivesIt_isTrue() {
    var machine = Machine()
    let old = register(&machine, policy: .concurrent)!
    let new = register(&machine, policy: .concurrent)!
    _ = machine.finished("id", token: new, isCancelled: false)
    #expect(machine.isLatest("id", token: new) && machine.isLatest("id", token: old) && machine.isRunning("id"))
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
    switch (machine.watch("id", last: last, parked: (0, 7), isCancelled: isCancelled), resumedWith) {
    case (nil, nil):
      #expect(machine.slots["id"]?.watchers.map(\.waiter) == [7])
    case (let wake?, let expected?):
      #expect(wake.waiter == 7 && wake.running == expected && machine.slots["id"]?.watchers.isEmpty ?? true)
    case (let wake, _):
      Issue.record("running \(running), last \(String(describing: last)): \(String(describing: wake))")
    }
  }

  @Test func testWatch_whenClosed_reportsIdleOnceThenFinishes() {
    var machine = Machine()
    _ = machine.cancelAll(closing: true)
    #expect(machine.watch("id", last: nil, parked: (0, 7), isCancelled: false)?.running == false)
    #expect(machine.watch("id", last: false, parked: (0, 7), isCancelled: false).map { $0.running == nil } == true)
    #expect(machine.slots.isEmpty)
  }

  @Test func testLeave_whenParked_returnsItsWaiterAndDropsTheEmptySlot() {
    var machine = Machine()
    _ = machine.watch("id", last: false, parked: (3, 7), isCancelled: false)
    #expect(machine.leave("id", waiterID: 4) == nil)
    #expect(machine.leave("id", waiterID: 3) == 7)
    #expect(machine.slots.isEmpty && machine.leave("id", waiterID: 3) == nil)
  }

  // MARK: requests

  /// The identity's last request, as a plain value.
  private func lastRequest(_ machine: Machine, _ id: String = "id") -> String? {
    machine.slots[id]?.lastRequest.map { $0.value as! String }
  }

  private func forgotten(_ requests: [Machine.Request]) -> [String] { requests.map { $0 as! String } }

  @Test func testReserve_withARequest_remembersIt_andAFeedsEqualRequestIsRepeated() {
    var machine = Machine()
    _ = machine.reserve("id", policy: .latestWins, request: "a")
    #expect(lastRequest(machine) == "a")
    guard case .repeated = machine.reserve("id", policy: .latestWins, request: "a", feed: (1, false)) else {
      Issue.record("a feed's repeat started a run")
      return
    }
    #expect(slot(machine).map(\.token) == [1] && machine.nextToken == 2)  // nothing registered, no number
    // An explicit run compares nothing; a feed's different request runs.
    #expect(started(machine.reserve("id", policy: .latestWins, request: "a")) != nil)
    let next = machine.reserve("id", policy: .latestWins, request: "b", feed: (1, false))
    guard case .start(_, _, let superseded, _) = next else {
      Issue.record("a feed's new request started nothing")
      return
    }
    #expect(forgotten(superseded.forgotten) == ["a"] && lastRequest(machine) == "b")
    #expect(machine.slots["id"]?.runs.last?.feed == 1)
  }

  @Test func testReserve_whenTheFeedIsCancelled_stopsAndRegistersNothing() {
    var machine = Machine()
    guard case .stopped = machine.reserve("id", policy: .latestWins, request: "a", feed: (1, true)) else {
      Issue.record("a cancelled feed registered a run")
      return
    }
    #expect(machine.slots["id"] == nil && machine.runningCount == 0)
  }

  @Test func testReserve_withoutARequest_forgetsTheLastOne() {
    var machine = Machine()
    _ = machine.reserve("id", policy: .concurrent, request: "a")
    guard case .start(_, _, let superseded, _) = machine.reserve("id", policy: .concurrent) else {
      Issue.record("nothing started")
      return
    }
    #expect(forgotten(superseded.forgotten) == ["a"] && lastRequest(machine) == nil)
  }

  @Test func testReserve_whenFirstWinsIgnoresIt_keepsTheLastRequest() {
    var machine = Machine()
    _ = machine.reserve("id", policy: .latestWins, request: "a")
    guard case .ignore = machine.reserve("id", policy: .firstWins, request: "b", feed: (1, false)) else {
      Issue.record("not ignored")
      return
    }
    #expect(lastRequest(machine) == "a")
  }

  @Test(arguments: [false, true])
  func testFinished_keepsADeliveredRequest_andForgetsACancelledOne(cancelled: Bool) {
    var machine = Machine()
    _ = machine.reserve("id", policy: .latestWins, request: "a")
    let end = machine.finished("id", token: 1, isCancelled: cancelled)
    #expect(forgotten(end.forgotten) == (cancelled ? ["a"] : []))
    #expect(lastRequest(machine) == (cancelled ? nil : "a"))
    #expect((machine.slots["id"] == nil) == cancelled)  // a remembered request keeps the slot
  }

  @Test func testCancel_forgetsTheRequestOfARunItRemoves_notOfAnEndedOne() {
    var machine = Machine()
    _ = machine.reserve("id", policy: .latestWins, request: "a")
    #expect(forgotten(machine.cancel("id").removed.forgotten) == ["a"] && lastRequest(machine) == nil)
    _ = machine.reserve("id", policy: .latestWins, request: "b")
    _ = machine.finished("id", token: 2, isCancelled: false)
    #expect(machine.cancel("id").removed.forgotten.isEmpty && lastRequest(machine) == "b")
  }

  @Test func testCancelFeed_removesItsRunsOnly() {
    var machine = Machine()
    _ = machine.reserve("id", policy: .concurrent, request: "appear")
    _ = machine.reserve("id", policy: .concurrent, request: "typed", feed: (7, false))
    _ = machine.reserve("other", policy: .concurrent, request: "typed", feed: (7, false))
    let action = machine.cancel("id", feed: 7)
    #expect(action.removed.map(\.token) == [2] && forgotten(action.removed.forgotten) == ["typed"])
    #expect(slot(machine).map(\.token) == [1] && slot(machine, "other").map(\.token) == [3])
    #expect(machine.runningCount == 2)
  }

  @Test func testClose_handsOutTheRememberedRequests() {
    var machine = Machine()
    _ = machine.reserve("id", policy: .latestWins, request: "a")
    _ = machine.finished("id", token: 1, isCancelled: false)
    _ = machine.reserve("other", policy: .latestWins, request: "b")
    let action = machine.cancelAll(closing: true)
    #expect(Set(forgotten(action.removed.forgotten)) == ["a", "b"] && machine.slots.isEmpty)
  }
}

extension TaskSlotsStateMachine.AttachAction {
  fileprivate var isAttached: Bool {
    if case .attached = self { true } else { false }
  }
}

extension TaskSlotsStateMachine.BeginAction {
  fileprivate var isNever: Bool {
    if case .never = self { true } else { false }
  }
}

/// The owner's close: nothing registers and no caller joins from then on; what is registered runs
/// on, and a watcher is not finished by it.
@Suite("TaskSlotsStateMachine: owner closed")
struct TaskSlotsStateMachineOwnerTests {
  typealias Machine = TaskSlotsStateMachine<String, Int, Int>

  @Test(arguments: [SlotPolicy.latestWins, .firstWins, .queue, .concurrent])
  func reserveWhenClosedIsRefusedAndTheRegisteredRunGoesOn(policy: SlotPolicy) {
    var machine = Machine()
    guard case .start(let token, _, _, _) = machine.reserve("id", policy: .latestWins) else {
      Issue.record("the first run must start")
      return
    }
    machine.close()
    guard case .refuse = machine.reserve("id", policy: policy) else {
      Issue.record("a run after close must be refused")
      return
    }
    #expect(machine.runningCount == 1)
    let watched = machine.watch("id", last: true, parked: (id: 1, waiter: 10), isCancelled: false)
    #expect(watched == nil)  // parked: the run is still registered, the state unchanged
    let joined = machine.join("id", parked: (id: 2, waiter: 20), isCancelled: false)
    #expect(joined?.waiter == 20)  // refused at once
    guard case .begin = machine.begin("id", token: token, isCancelled: false) else {
      Issue.record("a run registered before close begins")
      return
    }
    let end = machine.finished("id", token: token, isCancelled: false)
    #expect(end.delivered)
    #expect(end.wakes.map(\.waiter) == [10])
    #expect(end.wakes.map(\.running) == [false])
  }
}
