/// An owner-scoped registry of tasks with one slot per identity, and a rule for what a new task
/// does to the one in flight: the single entry point that app code needs when work starts from
/// many places (appear, refresh, retry, typing).
///
/// Tasks end with their owner: releasing the `TaskSlots` cancels every task it started.
///
/// ```swift
/// @MainActor final class SearchModel {
///   enum Work: Hashable { case search, details(Int), submit }
///   private let slots = TaskSlots<Work>()
///   var results: [Item] = []
///
///   func queryChanged(_ query: String) {
///     slots.run(.search) { @MainActor in              // latest wins
///       let found = await api.search(query)
///       guard !Task.isCancelled else { return }       // a cancelled search writes nothing
///       self.results = found
///     }
///   }
/// }
/// ```
public final class TaskSlots<ID: Hashable & Sendable>: Sendable {
  @usableFromInline let registry = TaskSlotsRegistry<ID>()

  /// Creates an empty registry; keep it in the object whose lifetime the tasks share.
  ///
  /// ```swift
  /// private let slots = TaskSlots<String>()
  /// ```
  public init() {}

  deinit {
    registry.cancelAll()
  }

  /// Starts `operation` under `id`, related to the task in flight there by `policy`.
  ///
  /// - `latestWins` (the default): the task in flight is cancelled and leaves the slot in the same
  ///   step under the lock as the new one is registered, so there is never a moment with two live
  ///   registrations for one identity; the new task starts after the old one was cancelled, and the
  ///   old task's completion never removes its successor. The old task is cancelled, not awaited:
  ///   it may still run (until its next cancellation check, or through cleanup) while the new one
  ///   starts. When its end matters, because it holds a resource or writes what the new one reads,
  ///   await the task that `run` returned for it at the start of the new operation:
  ///
  ///   ```swift
  ///   private var reload: Task<Void, Never>?
  ///   func refresh() {
  ///     let previous = reload
  ///     reload = slots.run(.reload) { @MainActor in
  ///       await previous?.value   // the cancelled reload has ended, its cleanup done
  ///       await self.reloadFeed()
  ///     }
  ///   }
  ///   ```
  /// - `firstWins`: while a task runs, nothing starts and `run` returns `nil`.
  /// - `queue`: the new task runs after the ones before it, in call order.
  /// - `concurrent`: no relation.
  ///
  /// The closure runs on its own isolation: a `@MainActor` closure may write main-actor state.
  ///
  /// ```swift
  /// slots.run(.refresh) { @MainActor in await self.reload() }
  /// ```
  @inlinable @discardableResult
  public func run(
    _ id: ID, policy: SlotPolicy = .latestWins, priority: TaskPriority? = nil,
    operation: @escaping @Sendable @isolated(any) () async -> Void
  ) -> Task<Void, Never>? {
    registry.run(id, policy: policy, priority: priority, operation: operation)
  }

  /// Cancels every task under `id`: the running one, and the queued ones, which then never run.
  ///
  /// ```swift
  /// slots.cancel(.details(row.id))   // the row scrolled away
  /// ```
  public func cancel(_ id: ID) {
    registry.cancel(id)
  }

  /// Cancels every task; releasing the `TaskSlots` does the same.
  ///
  /// ```swift
  /// slots.cancelAll()   // the screen closed
  /// ```
  public func cancelAll() {
    registry.cancelAll()
  }

  /// Whether a task is registered under `id`.
  ///
  /// ```swift
  /// submitButton.isEnabled = !slots.isRunning(.submit)
  /// ```
  public func isRunning(_ id: ID) -> Bool {
    registry.state.withLock { $0.isRunning(id) }
  }

  /// The number of registered tasks, over every identity.
  ///
  /// ```swift
  /// #expect(slots.runningCount == 0)
  /// ```
  public var runningCount: Int {
    registry.state.withLock { $0.runningCount }
  }
}

/// What the tasks of a ``TaskSlots`` hold on to, so that releasing the `TaskSlots` itself can cancel them.
@usableFromInline
final class TaskSlotsRegistry<ID: Hashable & Sendable>: Sendable {
  @usableFromInline let state = LockedState(TaskSlotsStateMachine<ID>())

  @inlinable init() {}

  @inlinable func run(
    _ id: ID, policy: SlotPolicy, priority: TaskPriority?,
    operation: @escaping @Sendable @isolated(any) () async -> Void
  ) -> Task<Void, Never>? {
    guard
      case .start(let token, let superseded, let predecessors) = state.withLock({
        $0.reserve(id, policy: policy)
      })
    else { return nil }
    // Cancelled outside the lock (cancellation handlers run synchronously and may call back in),
    // and before the new task exists.
    for task in superseded { task.cancel() }
    // Through FlowScheduling, so that a task started under a `TestClock` follows its schedule.
    let task = FlowScheduling.startTask(priority: priority, inheritingContext: true) {
      for predecessor in predecessors { await predecessor.wait() }
      if !Task.isCancelled { await operation() }
      self.state.withLock { $0.finished(id: id, token: token) }?.fire()
    }
    if !state.withLock({ $0.attach(task, id: id, token: token) }) { task.cancel() }
    return task
  }

  func cancel(_ id: ID) {
    for task in state.withLock({ $0.cancel(id) }) { task.cancel() }
  }

  func cancelAll() {
    for task in state.withLock({ $0.cancelAll() }) { task.cancel() }
  }
}
