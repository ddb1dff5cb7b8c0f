import AsyncFlow

extension LockedState {
  /// Suspends until `current` of the state reaches `count`, or until the calling task is cancelled:
  /// a barrier that a cancelled test (a `.timeLimit`, say) leaves at once instead of hanging.
  func waitUntil(
    count: Int, of current: (State) -> Int, watchers: WritableKeyPath<State, CountWatchers> & Sendable
  ) async {
    let id = withLock { $0[keyPath: watchers].makeID() }
    await withTaskCancellationHandler {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
        let registered = withLock { state in
          // Cancelled before registering: the handler below has run already and found nothing.
          guard !Task.isCancelled else { return false }
          return state[keyPath: watchers].register(continuation, id: id, until: count, current: current(state))
        }
        if !registered { continuation.resume() }
      }
    } onCancel: {
      withLock { $0[keyPath: watchers].cancel(id) }?.resume()
    }
  }
}
