import AsyncFlow
import AsyncFlowTesting

// The reconnect timeline printed in Guides/ErrorHandling.md, recorded on a test clock.
// `ReconnectingTests` re-records it and fails if the guide's copy differs.

/// What each attempt of a connection does, one marble per second: the first fails at once, the
/// second delivers `a` and `b` and then fails, the third fails at once, the fourth delivers `c`.
public let reconnectAttempts = ["#", "a-b#", "#", "c|"]

// region: reconnect-diagram
/// The connection of `reconnectAttempts`, retried with a 1 s backoff that doubles, with and without
/// `resetAfterElement`.
public func reconnectDiagrams() async -> [(label: String, diagram: String)] {
  func record(resetAfterElement: Bool) async -> String {
    // Marbles of its own, and with them a clock of its own: each timeline starts at 0 s.
    let marbles = Marbles(tick: .seconds(1))
    let attempts = LockedState(0)
    // Cold: every retry makes the next attempt's input, timed from its own start.
    let connection = Flow.deferred {
      let attempt = attempts.withLock { count in
        defer { count += 1 }
        return min(count, reconnectAttempts.count - 1)
      }
      return marbles.input(reconnectAttempts[attempt])
    }
    return await marbles.record(
      connection.retryWithBackoff(
        maxRetries: 3, initialDelay: .seconds(1), resetAfterElement: resetAfterElement, clock: marbles.clock),
      ticks: 14)
  }
  return [
    ("resetAfterElement: false", await record(resetAfterElement: false)),
    ("resetAfterElement: true", await record(resetAfterElement: true)),
  ]
}
// endregion: reconnect-diagram
