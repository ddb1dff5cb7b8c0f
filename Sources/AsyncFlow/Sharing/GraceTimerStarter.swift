/// Where one run of a share's upstream starts its grace timers: in the run's own task, which waits
/// here beside the iteration, so that each timer inherits that task's context (the task-local
/// values and priority of the subscriber whose iteration started the run, and its executor
/// preference) whoever left last. The last subscriber to leave asks here (``request(_:)``); the
/// upstream's task takes the request (``next()``) and starts the timer.
///
/// A task cannot be started in another task's context, and the upstream's task spends its time in
/// the upstream's `next()`: so it runs the iteration as a child and waits here itself.
@usableFromInline
final class GraceTimerStarter: Sendable {
  /// Grace timer `timer` (the machine's number for it), due at `deadline`.
  struct Request {
    let timer: Int
    let deadline: AnyFlowClock.Instant
  }

  private struct State {
    /// A request the task has not taken yet. A newer one replaces it: the grace period it was for
    /// ended (a subscriber came), and the machine would cancel its timer at once.
    var pending: Request?
    var waiter: UnsafeContinuation<Request?, Never>?
    var isClosed = false
  }

  private let state = LockedState(State())

  init() {}

  /// Asks the upstream's task for a grace timer; ignored once the run is over.
  func request(_ request: Request) {
    let waiter = state.withLock { state -> UnsafeContinuation<Request?, Never>? in
      guard !state.isClosed else { return nil }
      if let waiter = state.waiter.take() { return waiter }
      state.pending = request
      return nil
    }
    waiter?.resume(returning: request)
  }

  /// The run is over (its iteration ended, or its task was cancelled): no more timers.
  func close() {
    let waiter = state.withLock { state -> UnsafeContinuation<Request?, Never>? in
      state.isClosed = true
      state.pending = nil
      return state.waiter.take()
    }
    waiter?.resume(returning: nil)
  }

  /// In the upstream's task: the next timer to start, `nil` once the run is over.
  func next() async -> Request? {
    await withTaskCancellationHandler {
      await withOrderedContinuation { (continuation: UnsafeContinuation<Request?, Never>) in
        let now = state.withLock { state -> Request?? in
          if state.isClosed { return .some(nil) }
          if let pending = state.pending.take() { return .some(pending) }
          state.waiter = continuation
          return nil
        }
        if let now { continuation.resume(returning: now) }
      }
    } onCancel: {
      close()
    }
  }
}
