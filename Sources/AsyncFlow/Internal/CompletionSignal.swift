/// A one-shot event: `wait()` returns once `fire()` has been called, before or after. Waiting is
/// not cancellable, for an end that is sure to come; ``waitUnlessCancelled()`` is, for a waiter that
/// may give up (a queued run whose caller left stops waiting for the runs before it).
@usableFromInline
package final class CompletionSignal: Sendable {
  @usableFromInline struct State {
    @usableFromInline var fired = false
    @usableFromInline var waiters: [(id: Int, continuation: UnsafeContinuation<Void, Never>)] = []
    @usableFromInline var nextWaiter = 0

    @inlinable init() {}
  }

  @usableFromInline let state = LockedState(State())

  @inlinable package init() {}

  @inlinable package func fire() {
    let waiters = state.withLock { state in
      state.fired = true
      defer { state.waiters.removeAll() }
      return state.waiters
    }
    for waiter in waiters { waiter.continuation.resume() }
  }

  package var isFired: Bool { state.withLock { $0.fired } }

  @inlinable package func wait() async {
    await withOrderedContinuation { (continuation: UnsafeContinuation<Void, Never>) in
      let fired = state.withLock { state in
        if !state.fired { state.waiters.append((-1, continuation)) }
        return state.fired
      }
      if fired { continuation.resume() }
    }
  }

  /// Returns once `fire()` has been called, or once the waiting task is cancelled.
  @inlinable package func waitUnlessCancelled() async {
    let id = state.withLock { state in
      defer { state.nextWaiter += 1 }
      return state.nextWaiter
    }
    await withTaskCancellationHandler {
      await withOrderedContinuation { (continuation: UnsafeContinuation<Void, Never>) in
        // Cancelled before parking: the handler found nothing to resume, so this is the last chance.
        let resumeNow = state.withLock { state in
          if state.fired || Task.isCancelled { return true }
          state.waiters.append((id, continuation))
          return false
        }
        if resumeNow { continuation.resume() }
      }
    } onCancel: {
      let waiter = state.withLock { state -> UnsafeContinuation<Void, Never>? in
        guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
        return state.waiters.remove(at: index).continuation
      }
      waiter?.resume()
    }
  }
}
