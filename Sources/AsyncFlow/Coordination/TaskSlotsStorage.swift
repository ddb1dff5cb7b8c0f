/// The storage behind ``TaskSlots``: its state machine under a lock, and the tasks it starts. What
/// the tasks hold on to, so that releasing the `TaskSlots` itself can cancel them.
@usableFromInline
final class TaskSlotsStorage<ID: Hashable & Sendable>: Sendable {
  @usableFromInline typealias Watcher = UnsafeContinuation<Bool?, Never>
  @usableFromInline typealias Machine = TaskSlotsStateMachine<ID, Watcher, Task<Void, Never>>

  /// A run's operation as the caller wrote it, with or without its `Run`: the one without is not
  /// wrapped in a closure that takes one, which would cost an allocation and an async frame per run.
  @usableFromInline enum Operation: Sendable {
    case plain(@Sendable @isolated(any) () async -> Void)
    case withRun(@Sendable @isolated(any) (TaskSlots<ID>.Run) async -> Void)
    /// A throwing operation of `runAndWait`, as a body that runs on `isolation` (the operation's
    /// own) and keeps the failure for the caller: the body is called on that isolation, so calling
    /// the operation from it is no hop, and nothing runs between the check and the operation.
    case throwing(isolation: (any Actor)?, body: @Sendable (isolated (any Actor)?) async -> Void)

    /// Where the operation runs: where its run checks that it may still begin.
    @inlinable var isolation: (any Actor)? {
      switch self {
      case .plain(let operation): operation.isolation
      case .withRun(let operation): operation.isolation
      case .throwing(let isolation, _): isolation
      }
    }
  }

  @usableFromInline let state = LockedState(Machine())
  @usableFromInline let log: RequestLog<ID>?

  @inlinable init(log: RequestLog<ID>?) {
    self.log = log
  }

  /// What a `run` call did: started a task, or (a `firstWins` run while one is registered) nothing,
  /// with the ends to wait for when the caller joins the run in flight.
  @usableFromInline enum Started {
    case task(Task<Void, Never>)
    case ignored(inFlight: [CompletionSignal])
  }

  @inlinable func run(
    _ id: ID, policy: SlotPolicy, priority: TaskPriority?, trigger: String?, operation: Operation
  ) -> Task<Void, Never>? {
    guard case .task(let task) = start(id, policy: policy, priority: priority, trigger: trigger, operation: operation)
    else { return nil }
    return task
  }

  @inlinable func start(
    _ id: ID, policy: SlotPolicy, priority: TaskPriority?, trigger: String?, operation: Operation,
    joining: Bool = false
  ) -> Started {
    let action = state.withLock { machine in
      guard let log else { return machine.reserve(id, policy: policy, joining: joining) }
      return log.storage.withLock { entries in
        // Numbered and recorded in the step that decides, so that the log's order is the registry's.
        let token = entries.takeNumber()
        let action = machine.reserve(id, policy: policy, token: token, trigger: trigger, joining: joining)
        TaskSlotsStorage.record(action, policy: policy, token: token, id: id, trigger: trigger, in: &entries)
        return action
      }
    }
    switch consume action {
    case .ignore(let inFlight):
      return .ignored(inFlight: inFlight)
    case .start(let token, let superseded, let predecessors, let wakes):
      let isQueued = policy.storage == .queue && !predecessors.isEmpty
      // Cancelled outside the lock (cancellation handlers run synchronously and may call back in),
      // and before the new task exists.
      for registration in superseded ?? .several([]) { registration.task?.cancel() }
      resume(wakes)
      // Through FlowScheduling, so that a task started under a `TestClock` follows its schedule; by
      // the inlined form, which hands this literal to `Task {}` as it is (a closure box less per run).
      let task = FlowScheduling.startInheritingTask(priority: priority) {
        // A predecessor's wait ends early when this run is cancelled: its operation will not begin.
        for predecessor in predecessors { await predecessor.waitUnlessCancelled() }
        // Cancelled already (superseded in a burst): no call and no hop. Not cancelled yet, `begin`
        // decides, where the operation runs.
        if !Task.isCancelled {
          await self.begin(operation, id: id, token: token, isQueued: isQueued, trigger: trigger, on: operation.isolation)
        }
        // The task's captures, the operation's among them, are released when this closure returns,
        // after the lock: an operation may capture an object whose `deinit` calls back in.
        self.finished(id, token: token, trigger: trigger)
      }
      if case .cancel(let signal) = state.withLock({ $0.attach(task, id: id, token: token) }) {
        task.cancel()
        if let signal {
          signal.fire()  // after the cancellation: the successors' operations may begin
          // Pending until now, so that a run registered since the attachment waited for it too.
          state.withLock { $0.cancellationFired(token) }
        }
      }
      return .task(task)
    }
  }

  /// Runs the operation unless its run was cancelled or left the registry (superseded, cancelled,
  /// the `TaskSlots` released) before it could begin. On the operation's own isolation: a
  /// `@MainActor` operation superseded in the main-actor turn that started it is cancelled before
  /// this check can run, since the check waits for the turn to end; checked on another thread
  /// before the hop, it passed there, and the operation then began on the main actor although
  /// cancelled. Calling the operation from here is no hop (the same isolation), so nothing runs on
  /// that actor between the check and the operation's first line; a supersession from another
  /// thread is decided under the lock, before or after this check's read of the registry.
  @inlinable func begin(
    _ operation: Operation, id: ID, token: Int, isQueued: Bool, trigger: String?, on isolation: isolated (any Actor)?
  ) async {
    guard !Task.isCancelled, state.withLock({ $0.mayBegin(id, token: token) }) else { return }
    // A queued run's turn has come: "queued" was its entry so far.
    if isQueued { log?.record(.init(run: token, id: id, trigger: trigger, event: .started)) }
    switch operation {
    case .plain(let operation): await operation()
    case .withRun(let operation): await operation(TaskSlots.Run(storage: self, id: id, number: token))
    case .throwing(_, let body): await body(isolation)
    }
  }

  /// Starts a run as ``run(_:policy:priority:trigger:operation:)`` does and returns when it has
  /// ended, rethrowing its failure; the caller's cancellation cancels the run. A `firstWins` call
  /// that is ignored waits for the runs in flight instead, and leaves them alone when its caller is
  /// cancelled (they are not its own).
  @inlinable func runAndWait<Failure: Error>(
    _ id: ID, policy: SlotPolicy, priority: TaskPriority?, trigger: String?,
    operation: @escaping @Sendable @isolated(any) () async throws(Failure) -> Void
  ) async throws(Failure) {
    let failure = LockedState<Failure?>(nil)
    let body: @Sendable (isolated (any Actor)?) async -> Void = { _ in
      do throws(Failure) {
        try await operation()
      } catch {
        failure.withLock { $0 = error }
      }
    }
    let started = start(
      id, policy: policy, priority: priority, trigger: trigger,
      operation: .throwing(isolation: operation.isolation, body: body), joining: true)
    switch started {
    case .task(let task):
      // Ended, not only cancelled, when this returns: what the run writes is written by then.
      await withTaskCancellationHandler { await task.value } onCancel: { task.cancel() }
      if let error = failure.withLock({ $0.take() }) { throw error }
    case .ignored(let inFlight):
      for end in inFlight { await end.waitUnlessCancelled() }
    }
  }

  @inlinable func finished(_ id: ID, token: Int, trigger: String?) {
    let log = self.log
    let action = state.withLock { machine in
      let action = machine.finished(id: id, token: token)
      log?.record(.init(run: token, id: id, trigger: trigger, event: Task.isCancelled ? .cancelled : .finished))
      return action
    }
    guard case .wake(let wakes, let signal) = action else { return }
    resume(wakes)
    signal?.fire()
  }

  /// What a `run` call decided, as the request log records it: each superseded run, then the new one.
  @inlinable static func record(
    _ action: Machine.ReserveAction, policy: SlotPolicy, token: Int, id: ID, trigger: String?,
    in entries: inout RequestLog<ID>.Storage
  ) {
    switch action {
    case .ignore:
      entries.append(.init(run: token, id: id, trigger: trigger, event: .ignored))
    case .start(_, let superseded, let predecessors, _):
      for old in superseded ?? .several([]) {
        entries.append(.init(run: old.token, id: id, trigger: old.trigger, event: .superseded(by: token)))
      }
      let isQueued = policy.storage == .queue && !predecessors.isEmpty
      entries.append(.init(run: token, id: id, trigger: trigger, event: isQueued ? .queued : .started))
    }
  }

  @inlinable func resume(_ wakes: [Machine.Wake]) {
    for wake in wakes { wake.watcher.resume(returning: wake.running) }
  }

  @inlinable func cancel(_ id: ID) {
    perform(state.withLock { $0.cancel(id) })
  }

  @inlinable func cancelAll() {
    perform(state.withLock { $0.cancelAll() })
  }

  func close() {
    perform(state.withLock { $0.close() })
  }

  /// After the lock: the watchers' code runs as soon as they are resumed, and cancellation
  /// handlers run synchronously in `cancel()`. Inlinable, as `cancel(_:)` and `cancelAll()` are:
  /// unspecialized, the registry's dictionary costs about 1 µs per cancel (measured: 1.4 µs against
  /// 0.06 µs for a dictionary of plain tasks in the `TaskSlots.cancel.identities` curve).
  @inlinable func perform(_ action: Machine.CancelAction) {
    switch action {
    case .none:
      break
    case .cancel(let slot, let wakes):
      resume(wakes)
      for registration in slot { registration.task?.cancel() }
    case .cancelAll(let slots, let wakes):
      resume(wakes)
      for slot in slots.values { for registration in slot { registration.task?.cancel() } }
    }
  }

  func isRunningFlow(_ id: ID) -> Flow<Bool, Never> {
    Flow {
      // One iteration's memory: what it delivered last, so that it delivers changes only.
      let last = RunningStateMemory()
      return .async { (actor: isolated (any Actor)?) async -> Bool? in
        let watcher = self.state.withLock { $0.makeWatcherID() }
        let running = await withTaskCancellationHandler {
          await withOrderedContinuation(isolation: actor) { (continuation: Watcher) in
            let action = self.state.withLock {
              $0.watch(
                id, last: last.value, watcher: watcher, continuation: continuation, isCancelled: Task.isCancelled)
            }
            if case .resume(let running) = action { continuation.resume(returning: running) }
          }
        } onCancel: {
          self.state.withLock { $0.cancelWatcher(watcher) }?.resume(returning: nil)
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
