/// Where a ``FlowOwner`` starts the tasks that run in its own context: the owner's task, started
/// where the owner was made, takes each start here and runs it, so that the task it starts
/// inherits the owner's task-local values, priority and executor preference, not those of the
/// caller that asked. A task cannot be started in another task's context: so the owner keeps one,
/// parked here while nothing is asked (a continuation, no thread).
///
/// The starts are synchronous (they start a task and report it), and run in order.
final class OwnerContext: Sendable {
  typealias Start = @Sendable () -> Void

  private struct State {
    var starts = RingBuffer<Start>()
    var waiter: UnsafeContinuation<Start?, Never>?
    var isClosed = false
  }

  private let state = LockedState(State())

  init() {}

  /// Asks the owner's task to run `start`; `false` once it has ended (the caller runs it itself).
  func submit(_ start: @escaping Start) -> Bool {
    let (accepted, waiter) = state.withLock { state -> (Bool, UnsafeContinuation<Start?, Never>?) in
      guard !state.isClosed else { return (false, nil) }
      if let waiter = state.waiter.take() { return (true, waiter) }
      state.starts.append(start)
      return (true, nil)
    }
    waiter?.resume(returning: start)
    return accepted
  }

  /// No more starts: the owner's task runs those already asked for, then ends.
  func close() {
    let waiter = state.withLock { state -> UnsafeContinuation<Start?, Never>? in
      state.isClosed = true
      return state.starts.isEmpty ? state.waiter.take() : nil
    }
    waiter?.resume(returning: nil)
  }

  /// The owner's task: runs each start until closed.
  func serve() async {
    while let start = await next() { start() }
  }

  private func next() async -> Start? {
    await withOrderedContinuation { (continuation: UnsafeContinuation<Start?, Never>) in
      let now = state.withLock { state -> Start?? in
        if let start = state.starts.popFirst() { return .some(start) }
        if state.isClosed { return .some(nil) }
        state.waiter = continuation
        return nil
      }
      if let now { continuation.resume(returning: now) }
    }
  }
}
