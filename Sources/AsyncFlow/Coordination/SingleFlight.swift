/// Joins repeated requests: while a run for an identity is in flight, every later caller with the
/// same identity waits for it and gets its result or its failure, and its own operation is not
/// called. The token refresher that five calls, all answered "unauthorized" at once, ask for at
/// the same time: one refresh runs, all five get its token.
///
/// ```swift
/// struct Token: Sendable { var value: String }
/// @Sendable func refreshToken() async throws(APIError) -> Token { Token(value: "fresh") }   // the auth call
/// @Sendable func send(_ path: String, token: Token) async throws(APIError) -> Int { 200 }  // the HTTP status
/// enum Shared: Hashable, Sendable { case token }
///
/// actor APIClient {
///   private let refreshes = SingleFlight<Shared, Token, APIError>()
///   private var token = Token(value: "")
///
///   func get(_ path: String) async throws(APIError) -> Int? {
///     var status = try await send(path, token: token)
///     if status == 401 {
///       guard let fresh = try await refreshes.run(.token, operation: refreshToken)
///       else { return nil }   // this caller was cancelled
///       token = fresh
///       status = try await send(path, token: fresh)
///     }
///     return status
///   }
/// }
/// ```
///
/// - **Once, following its most urgent caller.** The first caller's `run` starts the operation in
///   a task that inherits that caller's priority and task-local values, as `Task { }` does; it
///   runs on the operation's own isolation (a `@MainActor` closure on the main actor). The task
///   is started through the library's scheduling, so under a `TestClock` it follows the clock.
///   When a caller with a higher priority joins, or a waiting caller is escalated (a `.high` task
///   awaits it), the run is escalated to that priority, as awaiting a task escalates it; a caller
///   that leaves does not lower it. Before macOS 26, iOS 26 and their peers, which have no task
///   escalation API, the run keeps the first caller's priority. The task-local values stay the
///   first caller's.
/// - **Cancelling a caller** makes that caller's `run` return `nil` at once. The run goes on for
///   the others; it is cancelled only when every caller waiting for it has been cancelled, and
///   then the identity is free at once: the next caller starts a new run instead of joining the
///   dying one, whose result then reaches no one. Its side effects do not stop with it: the
///   cancelled operation runs on until it checks, and what it writes on the way (a token it
///   stores) is written. Guard such a write with `Task.isCancelled`, so that a run every caller left
///   does not write its late result over a newer run's.
/// - **No caching.** When a run has ended, the next call starts a new one.
/// - **Not re-entrant by identity.** An operation that calls `run` with its own identity joins
///   itself and waits forever (as Go's `singleflight` does): give nested work another identity.
/// - **Lifetimes.** The operation, and what it captures, are released before any caller gets the
///   result; no user value is released, and no user code runs, while the lock is held.
///
/// `ID` is `Hashable & Sendable`, as a `TaskSlots` identity (a value: its `==`, `hash(into:)` and
/// release run under the lock). `Success` is `Sendable`, because one result goes to callers on
/// different tasks and isolations; `Failure` is any `Error`, or `Never` for an operation that
/// cannot fail (then `run` throws nothing).
public final class SingleFlight<ID: Hashable & Sendable, Success: Sendable, Failure: Error>: Sendable {
  @usableFromInline let storage: SingleFlightStorage<ID, Success, Failure>

  /// Creates a single flight with nothing in flight. With a `log`, every call is numbered and
  /// recorded there: `started`, then `finished`, `failed` or `cancelled`, or `joined(run:)` (see
  /// ``RequestLog``). With an `owner`, every call is refused once the owner closes (`run` returns
  /// `nil` at once, a call that would join a run in flight included), and the owner's shutdown
  /// resumes every caller with `nil`, cancels the runs and waits until their tasks have ended (see
  /// ``FlowOwner``).
  ///
  /// ```swift
  /// let refreshes = SingleFlight<Shared, Token, APIError>()
  /// let logged = SingleFlight<Shared, Token, APIError>(log: RequestLog())
  /// let owned = SingleFlight<Shared, Token, APIError>(owner: FlowOwner())   // a service's
  /// ```
  public init(owner: FlowOwner? = nil, log: RequestLog<ID>? = nil) {
    storage = SingleFlightStorage(log: log, owner: owner)
  }

  /// Runs `operation` for `id`, or, if a run for `id` is in flight, waits for that one instead
  /// and returns its result or throws its failure (`operation` is then not called). Returns
  /// `nil` when the caller's task is cancelled, at once, whatever the run does; and at once when
  /// the single flight's ``FlowOwner`` is closed, or shuts down while the caller waits.
  ///
  /// `trigger` names why the caller asked ("401 on /feed"), for the request log; without a log it
  /// is ignored.
  ///
  /// ```swift
  /// guard let token = try await refreshes.run(.token, operation: refreshToken) else { return }
  /// ```
  @inlinable
  public func run(
    _ id: ID, trigger: String? = nil,
    operation: @escaping @Sendable @isolated(any) () async throws(Failure) -> Success
  ) async throws(Failure) -> Success? {
    try await storage.run(id, trigger: trigger, operation: operation)
  }

  /// Whether a run for `id` is in flight: one that a caller would join.
  ///
  /// ```swift
  /// #expect(!refreshes.isRunning(.token))   // every refresh has ended
  /// ```
  @inlinable public func isRunning(_ id: ID) -> Bool {
    storage.state.withLock { $0.isRunning(id) }
  }
}

/// What the callers of a ``SingleFlight`` and the tasks of its runs share.
@usableFromInline
final class SingleFlightStorage<ID: Hashable & Sendable, Success: Sendable, Failure: Error>: Sendable {
  /// A caller's continuation: resumed with the run's result, or with `nil` when it was cancelled.
  @usableFromInline typealias Waiter = UnsafeContinuation<Result<Success, Failure>?, Never>
  @usableFromInline typealias Machine = SingleFlightStateMachine<ID, Waiter, Task<Void, Never>>
  @usableFromInline typealias Operation = @Sendable @isolated(any) () async throws(Failure) -> Success

  @usableFromInline let state = LockedState(Machine())
  @usableFromInline let log: RequestLog<ID>?
  /// The owner that closes this single flight and awaits its runs (see ``FlowOwner``).
  @usableFromInline let owner: FlowOwner?

  @usableFromInline init(log: RequestLog<ID>?, owner: FlowOwner?) {
    self.log = log
    self.owner = owner
    owner?.adopt(self)
  }

  deinit {
    owner?.forget(self)
  }

  @inlinable func run(_ id: ID, trigger: String?, operation: @escaping Operation) async throws(Failure) -> Success? {
    // With an owner, the call holds a ticket until `join` has started or joined a run (it gives
    // it back there), so that a shutdown racing the call either refuses it or awaits its run.
    if let owner, !owner.admit(.call) { return nil }
    let waiterID = state.withLock { $0.makeWaiterID() }
    let delivery: Result<Success, Failure>?
    if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
      // The caller waits on a continuation, not on the run's task: an escalation of the caller (a
      // task awaiting it) would stop there, so it is passed on by hand.
      delivery = await withTaskPriorityEscalationHandler {
        await wait(id, trigger: trigger, waiterID: waiterID, operation: operation)
      } onPriorityEscalated: { _, priority in
        escalated(id, waiterID: waiterID, to: priority)
      }
    } else {
      delivery = await wait(id, trigger: trigger, waiterID: waiterID, operation: operation)
    }
    guard let delivery else { return nil }
    return try delivery.get()
  }

  @inlinable func wait(
    _ id: ID, trigger: String?, waiterID: Int, operation: @escaping Operation
  ) async -> Result<Success, Failure>? {
    await withTaskCancellationHandler {
      await withOrderedContinuation { (waiter: Waiter) in
        join(id, trigger: trigger, waiterID: waiterID, waiter: waiter, operation: operation)
      }
    } onCancel: {
      leave(id, waiterID: waiterID)
    }
  }

  @inlinable func join(_ id: ID, trigger: String?, waiterID: Int, waiter: Waiter, operation: @escaping Operation) {
    defer { owner?.release(.call) }
    let log = self.log
    let action = state.withLock { machine in
      // Read under the lock: a cancellation or escalation that comes after these reads finds the
      // caller registered.
      let isCancelled = Task.isCancelled
      let priority = Task.currentPriority
      guard let log else {
        return machine.join(id, waiterID: waiterID, waiter: waiter, priority: priority, isCancelled: isCancelled)
      }
      return log.storage.withLock { entries in
        let number = entries.takeNumber()
        let action = machine.join(
          id, waiterID: waiterID, waiter: waiter, number: number, priority: priority, isCancelled: isCancelled)
        let event: RequestLog<ID>.Event =
          switch action {
          case .start: .started
          case .join(let run), .joinAndEscalate(let run, _, _): .joined(run: run)
          case .cancelled: .cancelled
          }
        entries.append(.init(run: number, id: id, trigger: trigger, event: event))
        return action
      }
    }
    switch action {
    case .cancelled:
      waiter.resume(returning: nil)
    case .join:
      break
    case .joinAndEscalate(_, let task, let priority):
      escalate(task, to: priority)
    case .start(let run):
      let task = start(id, run: run, trigger: trigger, operation: operation)
      switch state.withLock({ $0.attach(id, run: run, task: task) }) {
      case .attached: break
      case .attachedAndEscalate(let priority): escalate(task, to: priority)
      case .cancel: task.cancel()
      }
    }
  }

  /// The waiting caller `waiterID` was escalated to `priority`.
  @inlinable func escalated(_ id: ID, waiterID: Int, to priority: TaskPriority) {
    if case .escalate(let task, let priority) = state.withLock({ $0.escalated(id, waiterID: waiterID, to: priority) }) {
      escalate(task, to: priority)
    }
  }

  /// Escalates a run's task, after the lock: its escalation handlers run here, synchronously.
  @inlinable func escalate(_ task: Task<Void, Never>, to priority: TaskPriority) {
    if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
      task.escalatePriority(to: priority)
    }
  }

  @inlinable func start(_ id: ID, run: Int, trigger: String?, operation: @escaping Operation) -> Task<Void, Never> {
    let box = OperationBox(operation)
    // Under the caller's ticket: the task holds one of its own before the caller's goes.
    if let owner {
      owner.decided?()
      owner.retain(.run)
    }
    // Through FlowScheduling, so that the run follows a `TestClock`; inheriting the first caller's
    // priority and task-local values, as `Task { }` does (more urgent callers escalate it later).
    return FlowScheduling.startInheritingTask(priority: nil) {
      let result = await box.perform()
      let action = self.state.withLock { machine in
        let action = machine.finished(id, run: run)
        let event: RequestLog<ID>.Event =
          switch (action, result) {
          case (.abandoned, _): .cancelled
          case (.resume, .success): .finished
          case (.resume, .failure): .failed
          }
        self.log?.record(.init(run: run, id: id, trigger: trigger, event: event))
        return action
      }
      // After the lock: the callers' code runs as soon as they are resumed.
      if case .resume(let waiters) = action {
        for waiter in waiters { waiter.resume(returning: result) }
      }
      // The last step: a shutdown returns once every run's task has come here.
      self.owner?.release(.run)
    }
  }

  @inlinable func leave(_ id: ID, waiterID: Int) {
    switch state.withLock({ $0.leave(id, waiterID: waiterID) }) {
    case .none:
      break
    case .resume(let waiter):
      waiter.resume(returning: nil)
    case .resumeAndCancel(let waiter, _, let task):
      waiter.resume(returning: nil)
      // Its cancellation handlers run here, synchronously: after the lock.
      task?.cancel()
    }
  }
}

/// Holds a run's operation until the run calls it, so that the operation (and everything it
/// captures) is released as soon as it returns, before any caller is resumed, rather than with
/// the task's closure when the task ends.
@usableFromInline
final class OperationBox<Success: Sendable, Failure: Error>: @unchecked Sendable {
  // Unchecked: set once before the task starts, taken once by that task only.
  @usableFromInline var operation: (@Sendable @isolated(any) () async throws(Failure) -> Success)?

  @inlinable init(_ operation: @escaping @Sendable @isolated(any) () async throws(Failure) -> Success) {
    self.operation = operation
  }

  @inlinable func perform() async -> Result<Success, Failure> {
    guard let operation = self.operation.take() else { preconditionFailure("Internal inconsistency: run twice") }
    do throws(Failure) {
      return .success(try await operation())
    } catch {
      return .failure(error)
    }
  }
}

extension SingleFlightStorage: FlowOwnedMember {
  /// Every call is refused from now on; the runs in flight go on for their callers.
  func ownerClosed() {
    state.withLock { $0.close() }
  }

  /// Every caller gets `nil` at once and every run is cancelled.
  func ownerShutdown() {
    let (waiters, tasks) = state.withLock { $0.cancelAll() }
    for waiter in waiters { waiter.resume(returning: nil) }
    // Their cancellation handlers run here, synchronously: after the lock.
    for task in tasks { task.cancel() }
  }
}
