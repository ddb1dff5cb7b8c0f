import Testing

@testable import AsyncFlow

/// The registry's decisions, event by event, with no task running: what a new run does to the
/// runs registered under its identity, whatever their policies (the grid), and who watches a
/// running state.
@Suite("TaskSlotsStateMachine", .timeLimit(.minutes(1)))
struct TaskSlotsStateMachineTests {
  typealias Machine = TaskSlotsStateMachine<String>

  static let policies: [SlotPolicy] = [.latestWins, .firstWins, .queue, .concurrent]

  /// A registered run with its task attached; the task is a placeholder, never awaited.
  private func register(_ machine: inout Machine, _ id: String, policy: SlotPolicy) -> (
    token: Int, task: Task<Void, Never>
  )? {
    guard case .start(let token, _, _, _) = machine.reserve(id, policy: policy) else { return nil }
    let task = Task<Void, Never> {}
    let attached = machine.attach(task, id: id, token: token)
    #expect(attached)
    return (token, task)
  }

  /// The grid: one registered run of `existing`'s policy, then a run of `new`'s. The existing
  /// run's policy never matters; the new run's decides.
  @Test(arguments: policies, policies)
  func testReserve_whenARunOfAnyPolicyIsRegistered(existing: SlotPolicy, new: SlotPolicy) {
    var machine = Machine()
    let first = register(&machine, "id", policy: existing)!
    let decision = machine.reserve("id", policy: new)
    switch (new, decision) {
    case (.latestWins, .start(let token, let superseded, let predecessors, _)):
      #expect(superseded.count == 1 && superseded.first?.task == first.task)
      #expect(predecessors.isEmpty)
      #expect(machine.slots["id"]!.map(\.token) == [token])  // the old registration left in the same step
      #expect(machine.runningCount == 1)
    case (.firstWins, .ignore):
      #expect(machine.slots["id"]!.map(\.token) == [first.token])
      #expect(machine.runningCount == 1)
    case (.queue, .start(let token, let superseded, let predecessors, _)):
      #expect(superseded.isEmpty)
      #expect(predecessors.count == 1 && predecessors.first === machine.awaitedEnds[first.token])
      #expect(machine.slots["id"]!.map(\.token) == [first.token, token])
    case (.concurrent, .start(let token, let superseded, let predecessors, _)):
      #expect(superseded.isEmpty && predecessors.isEmpty)
      #expect(machine.slots["id"]!.map(\.token) == [first.token, token])
    default:
      Issue.record("\(new) after \(existing): unexpected \(decision)")
    }
  }

  /// A running queued run and one waiting behind it, then a run of each policy.
  @Test(arguments: policies)
  func testReserve_whenAQueueRunsWithOneWaiting(new: SlotPolicy) {
    var machine = Machine()
    let running = register(&machine, "id", policy: .queue)!
    let waiting = register(&machine, "id", policy: .queue)!
    let decision = machine.reserve("id", policy: new)
    switch (new, decision) {
    case (.latestWins, .start(let token, let superseded, _, _)):
      // Both leave: the waiting one is cancelled before its operation, which then never runs.
      #expect(superseded.map(\.task) == [running.task, waiting.task])
      #expect(machine.slots["id"]!.map(\.token) == [token])
    case (.firstWins, .ignore):
      #expect(machine.slots["id"]!.count == 2)
    case (.queue, .start(_, let superseded, let predecessors, _)):
      #expect(superseded.isEmpty && predecessors.count == 2)
    case (.concurrent, .start(_, let superseded, let predecessors, _)):
      #expect(superseded.isEmpty && predecessors.isEmpty)
      #expect(machine.slots["id"]!.count == 3)
    default:
      Issue.record("\(new) after two queued runs: unexpected \(decision)")
    }
  }

  @Test func testReserve_whenAnotherIdentityRuns_neverTouchesIt() {
    for policy in Self.policies {
      var machine = Machine()
      let other = register(&machine, "other", policy: .firstWins)!
      guard case .start(_, let superseded, let predecessors, _) = machine.reserve("id", policy: policy) else {
        Issue.record("\(policy) on a free identity was ignored")
        continue
      }
      #expect(superseded.isEmpty && predecessors.isEmpty)
      #expect(machine.slots["other"]!.map(\.token) == [other.token])
    }
  }

  @Test func testFinished_whenSuperseded_leavesTheSuccessor() {
    var machine = Machine()
    let old = register(&machine, "id", policy: .latestWins)!
    let new = register(&machine, "id", policy: .latestWins)!
    _ = machine.finished(id: "id", token: old.token)
    #expect(machine.slots["id"]!.map(\.token) == [new.token])
    #expect(machine.runningCount == 1)
  }

  // MARK: isLatest

  @Test func testIsLatest_whenANewerRunIsRegistered_isFalseUntilItEnds() {
    for policy in [SlotPolicy.latestWins, .queue, .concurrent] {
      var machine = Machine()
      let old = register(&machine, "id", policy: .latestWins)!
      #expect(machine.isLatest("id", token: old.token))
      let new = register(&machine, "id", policy: policy)!
      #expect(!machine.isLatest("id", token: old.token), "\(policy)")
      #expect(machine.isLatest("id", token: new.token))
      _ = machine.finished(id: "id", token: new.token)
      // Nothing newer runs: a late cleanup of the old run may turn the spinner off.
      #expect(machine.isLatest("id", token: old.token), "\(policy)")
    }
  }

  /// "Latest", not "last": the newest of two concurrent runs is latest though the older one still
  /// runs; the guide binds the running state for a spinner over concurrent runs.
  @Test func testIsLatest_whenAnOlderConcurrentRunOutlivesIt_isTrue() {
    var machine = Machine()
    let old = register(&machine, "id", policy: .concurrent)!
    let new = register(&machine, "id", policy: .concurrent)!
    #expect(machine.isLatest("id", token: new.token))
    #expect(machine.isRunning("id"))
    _ = machine.finished(id: "id", token: new.token)
    #expect(machine.isLatest("id", token: new.token))
    #expect(machine.isLatest("id", token: old.token))
    #expect(machine.isRunning("id"))
  }

  @Test func testIsLatest_whenCancelledWithNothingAfter_isTrue() {
    var machine = Machine()
    let run = register(&machine, "id", policy: .latestWins)!
    _ = machine.cancel("id")
    #expect(machine.isLatest("id", token: run.token))
    _ = register(&machine, "id", policy: .latestWins)!
    #expect(!machine.isLatest("id", token: run.token))
  }

  @Test func testIsLatest_whenAFirstWinsRunWasIgnored_isTrue() {
    var machine = Machine()
    let run = register(&machine, "id", policy: .firstWins)!
    #expect(register(&machine, "id", policy: .firstWins) == nil)
    #expect(machine.isLatest("id", token: run.token))
  }

  // MARK: Running-state watchers

  /// Runs `body` with a real continuation for the machine to hold; resumed afterwards with
  /// `resumeWith` unless the body resumed it (`true` returned).
  private func withWatcher(_ body: (UnsafeContinuation<Bool?, Never>) -> Bool) async {
    _ = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool?, Never>) in
      if !body(continuation) { continuation.resume(returning: nil) }
    }
  }

  @Test func testWatch_whenTheStateDiffersFromTheLastDelivered_resumesAtOnce() async {
    var machine = Machine()
    await withWatcher { continuation in
      guard
        case .resume(false?) = machine.watch(
          "id", last: nil, watcher: 0, continuation: continuation, isCancelled: false)
      else {
        Issue.record("the first state is delivered at once")
        return false
      }
      return false
    }
    #expect(machine.watchers.isEmpty)
  }

  @Test func testWatch_whenUnchanged_parksUntilTheStateChanges() async {
    var machine = Machine()
    await withWatcher { continuation in
      guard case .parked = machine.watch("id", last: false, watcher: 7, continuation: continuation, isCancelled: false)
      else {
        Issue.record("expected parked")
        return false
      }
      #expect(machine.wake("other", running: true).isEmpty)  // another identity: stays parked
      guard case .start(_, _, _, let wakes) = machine.reserve("id", policy: .latestWins) else { return false }
      #expect(wakes.count == 1 && wakes.first?.running == true)
      #expect(machine.watchers.isEmpty)
      for wake in wakes { wake.resume() }
      return true
    }
  }

  @Test func testReserve_whenTheIdentityRunsAlready_wakesNobody() async {
    var machine = Machine()
    _ = register(&machine, "id", policy: .latestWins)
    await withWatcher { continuation in
      _ = machine.watch("id", last: true, watcher: 0, continuation: continuation, isCancelled: false)
      guard case .start(let token, _, _, let wakes) = machine.reserve("id", policy: .latestWins) else { return false }
      #expect(wakes.isEmpty)  // true stays true across a replacement: nothing to report
      let ended = machine.finished(id: "id", token: token)
      #expect(ended.wakes.count == 1 && ended.wakes.first?.running == false)
      ended.perform()
      return true
    }
  }

  @Test func testCancelWatcher_whenParked_returnsItsContinuation() async {
    var machine = Machine()
    await withWatcher { continuation in
      _ = machine.watch("id", last: false, watcher: 3, continuation: continuation, isCancelled: false)
      #expect(machine.cancelWatcher(4) == nil)
      let cancelled = machine.cancelWatcher(3)
      #expect(cancelled != nil && machine.watchers.isEmpty)
      cancelled?.resume(returning: nil)
      return true
    }
  }

  @Test func testWatch_whenCancelled_finishes() async {
    var machine = Machine()
    await withWatcher { continuation in
      guard
        case .resume(nil) = machine.watch("id", last: nil, watcher: 0, continuation: continuation, isCancelled: true)
      else {
        Issue.record("a cancelled consumer finishes")
        return false
      }
      return false
    }
  }

  @Test func testClose_whenAWatcherSawRunning_reportsFalseThenFinishes() async {
    var machine = Machine()
    _ = register(&machine, "id", policy: .latestWins)
    await withWatcher { continuation in
      _ = machine.watch("id", last: true, watcher: 0, continuation: continuation, isCancelled: false)
      let closing = machine.close()
      #expect(closing.tasks.count == 1)
      #expect(closing.wakes.map(\.running) == [false])
      closing.perform()
      return true
    }
    await withWatcher { continuation in
      guard
        case .resume(nil) = machine.watch("id", last: false, watcher: 1, continuation: continuation, isCancelled: false)
      else {
        Issue.record("a closed registry finishes its watchers")
        return false
      }
      return false
    }
  }

  @Test func testClose_whenAWatcherSawIdle_finishesIt() async {
    var machine = Machine()
    await withWatcher { continuation in
      _ = machine.watch("id", last: false, watcher: 0, continuation: continuation, isCancelled: false)
      let closing = machine.close()
      #expect(closing.wakes.map(\.running) == [nil])
      #expect(machine.watchers.isEmpty)
      closing.perform()
      return true
    }
  }
}
