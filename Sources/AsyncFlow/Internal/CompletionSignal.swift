/// A one-shot event: `wait()` returns once `fire()` has been called, before or after. Waiting is
/// not cancellable, for an end that is sure to come.
@usableFromInline
package final class CompletionSignal: Sendable {
  @usableFromInline struct State {
    @usableFromInline var fired = false
    @usableFromInline var waiters: [UnsafeContinuation<Void, Never>] = []

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
    for waiter in waiters { waiter.resume() }
  }

  package var isFired: Bool { state.withLock { $0.fired } }

  @inlinable package func wait() async {
    await withOrderedContinuation { (continuation: UnsafeContinuation<Void, Never>) in
      let fired = state.withLock { state in
        if !state.fired { state.waiters.append(continuation) }
        return state.fired
      }
      if fired { continuation.resume() }
    }
  }
}
