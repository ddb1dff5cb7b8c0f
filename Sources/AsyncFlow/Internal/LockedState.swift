#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

/// State guarded by a `pthread_mutex_t`: the lock behind every AsyncFlow state machine.
///
/// Why not `Synchronization.Mutex`: on Linux it locks through futex calls that ThreadSanitizer
/// cannot see, so every contended use is reported as a race (measured here: eight tasks appending
/// under a `Mutex` give a "Swift access race" report). ThreadSanitizer intercepts pthread locks,
/// so a clean run under it means something. Continuations must be resumed after `withLock` returns.
@usableFromInline
package final class LockedState<State>: @unchecked Sendable {
  @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
  // Not checked for exclusivity at run time: the mutex is what makes each access exclusive.
  // Checked, every `withLock` paid a `swift_beginAccess` and `swift_endAccess`, and an async
  // function that inlines one kept the check's 24-byte scratch buffer in its frame for as long as
  // it was suspended (a parked task's frames are its memory).
  @exclusivity(unchecked) @usableFromInline var state: State

  @usableFromInline
  package init(_ state: State) {
    self.state = state
    mutex = UnsafeMutablePointer.allocate(capacity: 1)
    mutex.initialize(to: pthread_mutex_t())
    var attributes = pthread_mutexattr_t()
    pthread_mutexattr_init(&attributes)
    #if os(Linux)
      // Spin briefly before sleeping: these locks are held for a few instructions, and a futex
      // sleep and wake-up per contended acquisition cost microseconds (measured with perf on the
      // merge benchmark: most of its time went to futex waits and wake-ups).
      pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_ADAPTIVE_NP))
    #endif
    let result = pthread_mutex_init(mutex, &attributes)
    pthread_mutexattr_destroy(&attributes)
    precondition(result == 0, "pthread_mutex_init failed with \(result)")
  }

  deinit {
    pthread_mutex_destroy(mutex)
    mutex.deallocate()
  }

  @inlinable
  package func withLock<Result, Failure: Error>(
    _ body: (inout State) throws(Failure) -> Result
  ) throws(Failure) -> Result {
    pthread_mutex_lock(mutex)
    #if DEBUG
      LocksHeld.enter()
      defer { LocksHeld.leave() }
    #endif
    defer { pthread_mutex_unlock(mutex) }
    return try body(&state)
  }
}

/// Reflected as the state, read under the lock: the default mirror read it without the lock, a
/// data race with the owner's next event, and showed the mutex's address besides.
extension LockedState: CustomReflectable {
  @usableFromInline package var customMirror: Mirror {
    let state = withLock { $0 }
    return Mirror(self, children: ["state": state])
  }
}

#if DEBUG
  /// How many `LockedState` locks the current thread holds, in debug builds only: the tests'
  /// witness for the rule that no user value is released and no user code runs under a lock. An
  /// element whose `deinit` (or a closure that) finds `LocksHeld.count > 0` ran inside one, which
  /// deadlocks as soon as it calls back into the same operator; the count finds it without the hang.
  @usableFromInline
  package enum LocksHeld {
    @usableFromInline static let key: pthread_key_t = {
      var key = pthread_key_t()
      let result = pthread_key_create(&key, nil)
      precondition(result == 0, "pthread_key_create failed with \(result)")
      return key
    }()

    /// Locks held by the calling thread.
    package static var count: Int { Int(bitPattern: pthread_getspecific(key)) }

    @usableFromInline static func enter() { pthread_setspecific(key, UnsafeRawPointer(bitPattern: count + 1)) }
    @usableFromInline static func leave() { pthread_setspecific(key, UnsafeRawPointer(bitPattern: count - 1)) }
  }
#endif
