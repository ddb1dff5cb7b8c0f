// What `dump`, `Mirror`, a debugger and Swift Testing's report of a failed expectation show of the
// testing tools a model or a test holds: their counts and what waits, instead of their storage.

extension TestClock: CustomReflectable {
  /// The clock's time and how many sleepers wait on it.
  ///
  /// ```swift
  /// dump(TestClock(isolation: nil))
  /// // ▿ TestClock
  /// //   - now: 0 seconds
  /// //   - pendingSleepers: 0
  /// ```
  public var customMirror: Mirror {
    Mirror(self, children: ["now": now.description, "pendingSleepers": pendingSleepers], displayStyle: .class)
  }
}

extension ControlledCalls: CustomReflectable {
  /// How many calls were made, and the ones that wait for their answer.
  ///
  /// ```swift
  /// dump(ControlledCalls<String, Int>())
  /// // ▿ ControlledCalls<String, Int>
  /// //   - callsMade: 0
  /// //   - waiting: 0 elements
  /// ```
  public var customMirror: Mirror {
    let waiting = waitingCalls.map { "call \($0.index) (\(String(reflecting: $0.argument)))" }
    return Mirror(self, children: ["callsMade": log.count, "waiting": waiting], displayStyle: .class)
  }
}

extension Gate: CustomReflectable {
  /// How many callers are parked in the gate.
  ///
  /// ```swift
  /// dump(Gate())
  /// // ▿ Gate
  /// //   - parkedCount: 0
  /// ```
  public var customMirror: Mirror { Mirror(self, children: ["parkedCount": parkedCount], displayStyle: .class) }
}
