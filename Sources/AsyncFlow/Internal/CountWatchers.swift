/// Tasks waiting until a count they watch (parked callers, sleepers, requests) reaches a threshold:
/// the barrier behind `Gate.entered(count:)` and `TestClock.sleepers(count:)`. Kept inside the
/// owner's locked state; the continuations it returns are resumed after the lock is released.
package typealias CountWatchers = CountWatcherList<UnsafeContinuation<Void, Never>>

/// ``CountWatchers`` generic over the waiter, so that a pure machine holding it (a subject's) is
/// tested with plain values.
package struct CountWatcherList<Waiter> {
  private var watchers: [(id: Int, count: Int, continuation: Waiter)] = []
  private var nextID = 0

  package init() {}

  /// A fresh identity for a watcher, taken before it suspends so that its cancellation handler can
  /// name it (see ``cancel(_:)``).
  package mutating func makeID() -> Int {
    defer { nextID += 1 }
    return nextID
  }

  /// Registers `continuation` until the count reaches `count`; returns `false` (resume it now) if
  /// `current` already does.
  package mutating func register(
    _ continuation: Waiter, until count: Int, current: Int
  ) -> Bool {
    register(continuation, id: makeID(), until: count, current: current)
  }

  /// Registers `continuation` under `id` (from ``makeID()``) until the count reaches `count`;
  /// returns `false` (resume it now) if `current` already does.
  package mutating func register(
    _ continuation: Waiter, id: Int, until count: Int, current: Int
  ) -> Bool {
    guard current < count else { return false }
    watchers.append((id, count, continuation))
    return true
  }

  /// Removes the watcher `id` and returns its continuation, for a cancelled waiter to resume; `nil`
  /// if it was already satisfied or never registered.
  package mutating func cancel(_ id: Int) -> Waiter? {
    guard let index = watchers.firstIndex(where: { $0.id == id }) else { return nil }
    return watchers.remove(at: index).continuation
  }

  /// Removes and returns the watchers whose threshold `current` reaches.
  package mutating func reached(_ current: Int) -> [Waiter] {
    guard !watchers.isEmpty else { return [] }
    var satisfied: [Waiter] = []
    watchers.removeAll { watcher in
      guard current >= watcher.count else { return false }
      satisfied.append(watcher.continuation)
      return true
    }
    return satisfied
  }
}

extension LockedState {
  /// Suspends until `current` of the state reaches `count`, or until the calling task is cancelled:
  /// a barrier that a cancelled test (a `.timeLimit`, say) leaves at once instead of hanging.
  package func waitUntil(
    count: Int, of current: (State) -> Int, watchers: WritableKeyPath<State, CountWatchers> & Sendable
  ) async {
    let id = withLock { $0[keyPath: watchers].makeID() }
    await withTaskCancellationHandler {
      await withOrderedContinuation { (continuation: UnsafeContinuation<Void, Never>) in
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
