/// The storage behind ``TaskSlots``: its state machine under a lock, and the tasks it starts. What
/// the tasks hold on to, so that releasing the `TaskSlots` itself can cancel them.
@usableFromInline
final class TaskSlotsStorage<ID: Hashable & Sendable>: Sendable {
  /// A parked task or caller; a watcher is resumed with the running state (`nil`: finish).
  @usableFromInline typealias Waiter = UnsafeContinuation<Bool?, Never>
  @usableFromInline typealias Machine = TaskSlotsStateMachine<ID, Waiter, Task<Void, Never>>

  /// A run's operation as the caller wrote it, with or without its `Run`: the one without is not
  /// wrapped in a closure that takes one, which would cost an allocation and an async frame per run.
  @usableFromInline enum Operation: Sendable {
    case plain(@Sendable @isolated(any) () async throws -> Void)
    case withRun(@Sendable @isolated(any) (TaskSlots<ID>.Run) async throws -> Void)
    /// The operation of `runAndWait`, as a body that runs on `isolation` (the operation's own),
    /// leaves what the operation returned or threw in `outcome`, and says whether it threw: the body
    /// is called on that isolation, so calling the operation from it is no hop, and nothing runs
    /// between the check and the operation.
    case returning(isolation: (any Actor)?, outcome: RunOutcome, body: @Sendable (isolated (any Actor)?) async -> Bool)
    /// An operation that takes the run's request, as a body that runs on `isolation` (the
    /// operation's own) and calls it with the request: no hop, as for `returning`.
    case applying(isolation: (any Actor)?, body: @Sendable (isolated (any Actor)?) async throws -> Void)

    /// Where the operation runs: where its run checks that it may still begin.
    @inlinable var isolation: (any Actor)? {
      switch self {
      case .plain(let operation): operation.isolation
      case .withRun(let operation): operation.isolation
      case .returning(let isolation, _, _): isolation
      case .applying(let isolation, _): isolation
      }
    }
  }

  @usableFromInline let state = LockedState(Machine())
  @usableFromInline let log: RequestLog<ID>?
  /// The owner that closes this registry and awaits its runs (see ``FlowOwner``).
  @usableFromInline let owner: FlowOwner?

  init(log: RequestLog<ID>?, owner: FlowOwner?) {
    self.log = log
    self.owner = owner
    owner?.adopt(self)
  }

  deinit {
    owner?.forget(self)
  }

  /// What `start` did: started the run's task, ignored it (`firstWins` while a run is registered),
  /// found its request equal to the identity's last one, or refused it (the owner closed, the
  /// `TaskSlots` is gone, or the feeding asking is cancelled).
  @usableFromInline enum Started {
    case started(Task<Void, Never>)
    case ignored
    case repeated
    case refused
  }

  /// Registers a run and starts its task; `nil` when nothing starts (`firstWins` while a run is
  /// registered, the owner closed, or the `TaskSlots` gone). A run with a `request` makes it the
  /// identity's last.
  @inlinable func run(
    _ id: ID, policy: SlotPolicy, priority: TaskPriority?, trigger: String?, request: Machine.Request? = nil,
    operation: Operation
  ) -> Task<Void, Never>? {
    let started = start(id, policy: policy, priority: priority, trigger: trigger, request: request, operation: operation)
    guard case .started(let task) = started else { return nil }
    return task
  }

  /// Feeding `feed` of `runEach(in:id:)` asks for a run of `request`: one starts unless the
  /// request equals the identity's last one (or `firstWins` ignores it). `false` when the feeding
  /// stops: its task is cancelled, the owner closed, or the `TaskSlots` is gone.
  @inlinable func request(
    _ request: Machine.Request, id: ID, feed: Int, policy: SlotPolicy, trigger: String?, operation: Operation
  ) -> Bool {
    switch start(id, policy: policy, priority: nil, trigger: trigger, request: request, feed: feed, operation: operation) {
    case .refused: false
    case .started, .ignored, .repeated: true
    }
  }

  /// Registers a run and starts its task. With an owner, the call holds a ticket from before the
  /// registry decides until the run's task holds its own, so that a shutdown racing the call
  /// either refuses it or awaits its task.
  @inlinable func start(
    _ id: ID, policy: SlotPolicy, priority: TaskPriority?, trigger: String?, request: Machine.Request?,
    feed: Int? = nil, operation: Operation
  ) -> Started {
    if let owner, !owner.admit(.call) { return .refused }
    defer { owner?.release(.call) }
    let action = state.withLock { machine in
      // Read under the lock: a feeding's cancellation handler takes its runs out under it, so
      // either it finds this run registered, or this step finds the feeding cancelled.
      let feed = feed.map { (id: $0, isCancelled: Task.isCancelled) }
      guard let log else { return machine.reserve(id, policy: policy, trigger: trigger, request: request, feed: feed) }
      return log.storage.withLock { entries in
        // Numbered and recorded in the step that decides, so that the log's order is the registry's;
        // a repeated request, which is not a run, takes no number.
        let token = entries.nextNumber
        let action = machine.reserve(id, policy: policy, token: token, trigger: trigger, request: request, feed: feed)
        TaskSlotsStorage.record(action, token: token, id: id, trigger: trigger, in: &entries)
        return action
      }
    }
    let token: Int
    let superseded: Machine.Removed
    let wakes: [Machine.Wake]
    switch consume action {
    case .start(let started, _, let removed, let woken): (token, superseded, wakes) = (started, removed, woken)
    case .ignore: return .ignored
    case .repeated: return .repeated
    case .refuse, .stopped: return .refused
    }
    // Cancelled outside the lock (cancellation handlers run synchronously and may call back in),
    // and before the new task exists.
    cancelTasks(of: superseded, id: id)
    resume(wakes)
    // Through FlowScheduling, so that a task started under a `TestClock` follows its schedule; by
    // the inlined form, which hands this literal to `Task {}` as it is (a closure box less per run).
    // Under the call's ticket: the task holds one of its own before the call's goes.
    if let owner {
      owner.decided?()
      owner.retain(.run)
    }
    let task = FlowScheduling.startInheritingTask(priority: priority) {
      // Cancelled already (superseded in a burst): no call and no hop. Not cancelled yet, `begin`
      // decides, where the operation runs.
      let cancelled = Task.isCancelled
      let failed =
        cancelled ? false : await self.begin(operation, id: id, token: token, trigger: trigger, on: operation.isolation)
      // The task's captures, the operation's among them, are released when this closure returns,
      // after the lock: an operation may capture an object whose `deinit` calls back in.
      let delivered = self.finished(id, token: token, trigger: trigger, failed: failed, cancelled: cancelled)
      if case .returning(_, let outcome, _) = operation { outcome.isDelivered = delivered }
      // The last step: a shutdown returns once every run's task has come here.
      self.owner?.release(.run)
    }
    switch state.withLock({ $0.attach(task, id: id, token: token) }) {
    case .attached: break
    case .cancel: task.cancel()
    case .cancelAndReport:
      task.cancel()
      resume(state.withLock { $0.cancelled([token], of: id) })
    }
    return .started(task)
  }

  /// Runs the operation if the machine's check lets it begin (see `TaskSlotsStateMachine`), parked
  /// while it answers `wait`; returns whether the operation threw. On the operation's own
  /// isolation: a `@MainActor` operation superseded in the main-actor turn that started it is
  /// cancelled before this check can run, since the check waits for the turn to end; checked on
  /// another thread before the hop, it passed there, and the operation then began on the main
  /// actor although cancelled. Calling the operation from here is no hop (the same isolation), so
  /// nothing runs on that actor between the check and the operation's first line.
  @inlinable func begin(
    _ operation: Operation, id: ID, token: Int, trigger: String?, on isolation: isolated (any Actor)?
  ) async -> Bool {
    while true {
      switch state.withLock({ $0.begin(id, token: token, isCancelled: Task.isCancelled) }) {
      case .never:
        return false
      case .wait:
        _ = await wait {
          $0.park(id, token: token, waiter: $1, isCancelled: $2)
        } leave: {
          $0.unpark(id, token: token)
        }
      case .begin(let queued):
        // A queued run's turn has come: "queued" was its entry so far.
        if queued { log?.record(.init(run: token, id: id, trigger: trigger, event: .started)) }
        do {
          switch operation {
          case .plain(let operation): try await operation()
          case .withRun(let operation): try await operation(TaskSlots.Run(storage: self, id: id, number: token))
          case .returning(_, _, let body): return await body(isolation)
          case .applying(_, let body): try await body(isolation)
          }
        } catch {
          return true
        }
        return false
      }
    }
  }

  /// Starts a run as ``run(_:policy:priority:trigger:operation:)`` does and returns what its
  /// operation returned or threw once it has ended, if the run was delivered (see `finished`); the
  /// caller's cancellation cancels the run. A `firstWins` call that is ignored waits for the runs in
  /// flight to leave instead, and leaves them alone when its caller is cancelled (they are not its
  /// own).
  @inlinable func runAndWait<Success: Sendable, Failure: Error>(
    _ id: ID, policy: SlotPolicy, priority: TaskPriority?, trigger: String?,
    operation: @escaping @Sendable @isolated(any) () async throws(Failure) -> Success
  ) async throws(Failure) -> Success? {
    // Checked before the run is registered: its task does not inherit the caller's cancellation,
    // which reaches it only through the handler below, installed after the task has started and
    // may have begun the operation on another thread.
    if Task.isCancelled { return nil }
    let outcome = RunResult<Success, Failure>()
    let body: @Sendable (isolated (any Actor)?) async -> Bool = { _ in
      do throws(Failure) {
        outcome.result = .success(try await operation())
        return false
      } catch {
        outcome.result = .failure(error)
        return true
      }
    }
    let started = start(
      id, policy: policy, priority: priority, trigger: trigger, request: nil,
      operation: .returning(isolation: operation.isolation, outcome: outcome, body: body))
    let task: Task<Void, Never>
    switch started {
    case .started(let started): task = started
    case .refused, .repeated: return nil  // no request: never repeated
    case .ignored:
      // Ignored: a `firstWins` caller joins the runs in flight, without their outcome.
      let waiterID = state.withLock { $0.makeWaiterID() }
      _ = await wait {
        $0.join(id, parked: (waiterID, $1), isCancelled: $2)
      } leave: {
        $0.leave(id, waiterID: waiterID)
      }
      return nil
    }
    // Ended, not only cancelled, when this returns: what the run writes is written by then.
    await withTaskCancellationHandler {
      await task.value
    } onCancel: {
      task.cancel()
    }
    guard outcome.isDelivered, let result = outcome.result.take() else { return nil }
    return try result.get()
  }

  /// Parks the calling task with `park` (given its waiter and whether it is cancelled, it returns
  /// what to resume at once, if anything), until it is resumed, or its cancellation takes it out
  /// with `leave`.
  @inlinable func wait(
    isolation: isolated (any Actor)? = #isolation, _ park: (inout Machine, Waiter, Bool) -> Machine.Wake?,
    leave: @escaping @Sendable (inout Machine) -> Waiter?
  ) async -> Bool? {
    await withTaskCancellationHandler {
      await withOrderedContinuation { (waiter: Waiter) in
        if let wake = state.withLock({ park(&$0, waiter, Task.isCancelled) }) {
          wake.waiter.resume(returning: wake.running)
        }
      }
    } onCancel: {
      state.withLock(leave)?.resume(returning: nil)
    }
  }

  /// Run `token`'s task ends: whether the run was delivered (ended registered and not cancelled),
  /// which the log records as `finished` or `failed`, and `runAndWait` hands its caller.
  /// `cancelled`: the task was seen cancelled before it could begin (cancellation sticks, so the
  /// task is not asked again: one `Task.isCancelled` per superseded run, as before the rewrite).
  @inlinable func finished(_ id: ID, token: Int, trigger: String?, failed: Bool, cancelled: Bool) -> Bool {
    let log = self.log
    // The forgotten request is released here, after the lock.
    let (delivered, wakes, _) = state.withLock { machine in
      let action = machine.finished(id, token: token, isCancelled: cancelled || Task.isCancelled)
      let event: RequestLog<ID>.Event = action.delivered ? (failed ? .failed : .finished) : .cancelled
      log?.record(.init(run: token, id: id, trigger: trigger, event: event))
      return action
    }
    resume(wakes)
    return delivered
  }

  /// What a `run` call decided, as the request log records it under `token` (the log's next number,
  /// taken here when the call is a run): each superseded run, then the new one.
  @inlinable static func record(
    _ action: Machine.ReserveAction, token: Int, id: ID, trigger: String?, in entries: inout RequestLog<ID>.Storage
  ) {
    switch action {
    case .repeated, .stopped:
      return  // not a run: no number taken
    case .refuse, .ignore:
      _ = entries.takeNumber()
      entries.append(.init(run: token, id: id, trigger: trigger, event: .ignored))
    case .start(_, let queued, let superseded, _):
      _ = entries.takeNumber()
      if let old = superseded.first {
        entries.append(.init(run: old.token, id: id, trigger: old.trigger, event: .superseded(by: token)))
      }
      for old in superseded.rest {
        entries.append(.init(run: old.token, id: id, trigger: old.trigger, event: .superseded(by: token)))
      }
      entries.append(.init(run: token, id: id, trigger: trigger, event: queued ? .queued : .started))
    }
  }

  @inlinable func resume(_ wakes: [Machine.Wake]) {
    for wake in wakes { wake.waiter.resume(returning: wake.running) }
  }

  /// Cancels the tasks of the runs that left `id` (`nil`: any identity), then tells the machine
  /// which of them had begun, so that the runs waiting for that may begin. By the run held alone
  /// and the array, not by the iterator, which copies the runs out.
  @inlinable func cancelTasks(of removed: borrowing Machine.Removed, id: ID?) {
    removed.first?.task?.cancel()
    for run in removed.rest { run.task?.cancel() }
    if !removed.uncancelled.isEmpty { resume(state.withLock { $0.cancelled(removed.uncancelled, of: id) }) }
  }

  @inlinable func cancel(_ id: ID) {
    perform(state.withLock { $0.cancel(id) }, id: id)
  }

  @inlinable func cancelAll() {
    perform(state.withLock { $0.cancelAll() }, id: nil)
  }

  /// Feeding `feed` was cancelled: its runs of `id` leave and their tasks are cancelled.
  @inlinable func cancel(_ id: ID, feed: Int) {
    perform(state.withLock { $0.cancel(id, feed: feed) }, id: id)
  }

  func close() {
    perform(state.withLock { $0.cancelAll(closing: true) }, id: nil)
  }
}

extension TaskSlotsStorage: FlowOwnedMember {
  /// Nothing registers from now on; what is registered runs on.
  func ownerClosed() {
    state.withLock { $0.close() }
  }

  /// Every run is cancelled, as when the `TaskSlots` is released.
  func ownerShutdown() {
    close()
  }
}

extension TaskSlotsStorage {

  /// After the lock: the waiters' code runs as soon as they are resumed, and cancellation
  /// handlers run synchronously in `cancel()`. Inlinable, as `cancel(_:)` and `cancelAll()` are:
  /// unspecialized, the registry's dictionary costs about 1 µs per cancel (measured: 1.4 µs against
  /// 0.06 µs for a dictionary of plain tasks in the `TaskSlots.cancel.identities` curve).
  @inlinable func perform(_ action: Machine.CancelAction, id: ID?) {
    resume(action.wakes)
    cancelTasks(of: action.removed, id: id)
  }

  func isRunningFlow(_ id: ID) -> Flow<Bool, Never> {
    Flow {
      // One iteration's memory: what it delivered last, so that it delivers changes only.
      let last = RunningStateMemory()
      return .async { (actor: isolated (any Actor)?) async -> Bool? in
        let watcher = self.state.withLock { $0.makeWaiterID() }
        let running = await self.wait {
          $0.watch(id, last: last.value, parked: (watcher, $1), isCancelled: $2)
        } leave: {
          $0.leave(id, waiterID: watcher)
        }
        last.value = running
        return running
      }
    }
  }
}

/// What one iteration of `isRunningFlow` delivered last; touched only by that iteration.
final class RunningStateMemory {
  var value: Bool?
}

/// What a run of `runAndWait` leaves for its caller: written by the run's task, read by the caller
/// once it has awaited that task (the task's end orders the two), so never by two at once.
@usableFromInline
class RunOutcome: @unchecked Sendable {
  /// Whether the run ended registered and not cancelled: only then does its caller get the outcome.
  @usableFromInline var isDelivered = false

  @inlinable init() {}
}

@usableFromInline
final class RunResult<Success, Failure: Error>: RunOutcome, @unchecked Sendable {
  @usableFromInline var result: Result<Success, Failure>?

  @inlinable override init() {}
}
