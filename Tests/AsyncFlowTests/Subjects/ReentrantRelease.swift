#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#endif

@testable import AsyncFlow

/// Support for the re-entrant release tests of the hot sources and the `Flow` body.
enum Reentrancy {
  /// A subscription an element's `deinit` can reach (set after the element's closure is made).
  final class SubscriptionBox: Sendable {
    private let subscription = LockedState<FlowSubscription?>(nil)

    func set(_ value: FlowSubscription) { subscription.withLock { $0 = value } }

    /// Cancels outside this box's lock, so that only the operator's lock is in play.
    func cancel() { subscription.withLock { $0 }?.cancel() }
  }

  /// How long a scenario may run in its exit test before the alarm ends the process: a deadlock
  /// holds a pthread lock forever, and the threads that then queue on it may be every thread of the
  /// cooperative pool, so no in-process bound (the suite's time limit included) could fire. The
  /// child process is killed by `SIGALRM`, and `processExitsWith: .success` records the failure.
  static let secondsBeforeAlarm: UInt32 = 20

  static func armAlarm() {
    alarm(secondsBeforeAlarm)
  }
}
