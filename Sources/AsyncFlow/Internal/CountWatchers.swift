/// Tasks waiting until a count they watch (parked callers, sleepers, requests) reaches a threshold:
/// the barrier behind `Gate.entered(count:)` and `TestClock.sleepers(count:)`. Kept inside the
/// owner's locked state; the continuations it returns are resumed after the lock is released.
package struct CountWatchers {
  private var watchers: [(count: Int, continuation: UnsafeContinuation<Void, Never>)] = []

  package init() {}

  /// Registers `continuation` until the count reaches `count`; returns `false` (resume it now) if
  /// `current` already does.
  package mutating func register(
    _ continuation: UnsafeContinuation<Void, Never>, until count: Int, current: Int
  ) -> Bool {
    guard current < count else { return false }
    watchers.append((count, continuation))
    return true
  }

  /// Removes and returns the watchers whose threshold `current` reaches.
  package mutating func reached(_ current: Int) -> [UnsafeContinuation<Void, Never>] {
    guard !watchers.isEmpty else { return [] }
    var satisfied: [UnsafeContinuation<Void, Never>] = []
    watchers.removeAll { watcher in
      guard current >= watcher.count else { return false }
      satisfied.append(watcher.continuation)
      return true
    }
    return satisfied
  }
}
