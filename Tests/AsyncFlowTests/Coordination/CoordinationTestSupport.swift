#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

@testable import AsyncFlow

/// Helpers for re-entrant release tests of the coordination family (a namespace, so that names do
/// not collide with other suites' helpers).
enum Reentry {
  /// Whether `condition` holds within a bounded number of yields, clock-free.
  static func eventually(yields: Int = 1_000_000, _ condition: () -> Bool) async -> Bool {
    for _ in 0..<yields {
      if condition() { return true }
      await Task.yield()
    }
    return condition()
  }

  /// Waits on this thread, outside any task, until `condition` holds or `seconds` have passed;
  /// whether it holds. Yields the thread between two looks, so that the task it waits for, and a
  /// waiter on the lock the condition reads, get their turn: a tight loop with a 10 s bound gave
  /// up in 3 of 8 rounds of the concurrent suites run beside two busy processes.
  static func holdsSoon(within seconds: Int = 30, _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now.advanced(by: .seconds(seconds))
    while ContinuousClock.now < deadline {
      if condition() { return true }
      sched_yield()
    }
    return condition()
  }

  /// A flag set once, from any thread.
  final class Flag: Sendable {
    private let state = LockedState(false)

    func set() { state.withLock { $0 = true } }

    var isSet: Bool { state.withLock { $0 } }
  }

  /// Whether `flag` is set within a bounded number of yields, clock-free: a deadlocked callback never
  /// sets it, and the test then fails here instead of hanging (the deadlocked thread is lost, the
  /// suite's time limit covers what follows).
  static func isSetSoon(_ flag: Flag, yields: Int = 1_000_000) async -> Bool {
    for _ in 0..<yields {
      if flag.isSet { return true }
      await Task.yield()
    }
    return flag.isSet
  }

  /// Runs `body` on a thread of its own, outside the cooperative pool, and returns at once; `flag`
  /// is set when `body` returns. For a synchronous call that may deadlock: the pool keeps its threads.
  static func onThread(setting flag: Flag, _ body: @escaping @Sendable () -> Void) {
    final class Box: @unchecked Sendable {
      let body: @Sendable () -> Void
      init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let box = Unmanaged.passRetained(Box {
      body()
      flag.set()
    })
    #if canImport(Glibc)
      var thread = pthread_t()
    #else
      var thread: pthread_t?
    #endif
    let result = pthread_create(
      &thread, nil,
      { raw in
        #if canImport(Glibc)
          let box = Unmanaged<Box>.fromOpaque(raw!).takeRetainedValue()
        #else
          let box = Unmanaged<Box>.fromOpaque(raw).takeRetainedValue()
        #endif
        box.body()
        return nil
      }, box.toOpaque())
    precondition(result == 0, "pthread_create failed with \(result)")
    #if canImport(Glibc)
      pthread_detach(thread)
    #else
      pthread_detach(thread!)
    #endif
  }
}
