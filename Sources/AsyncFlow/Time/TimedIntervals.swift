/// Intervals counted from an iteration's start, whose end the timer waits for only while
/// something waits for it: an idle operator sets no timer.
struct TimedIntervals<Instant: InstantProtocol>: Sendable {
  private let interval: Instant.Duration
  /// An interval end at or before the next one that matters; moved forward as time passes.
  private var anchor: Instant?
  /// The end of the interval something is waiting for.
  private(set) var armedEnd: Instant?

  init(interval: Instant.Duration) {
    self.interval = interval.cappedInterval
  }

  mutating func start(at now: Instant) {
    anchor = now.advanced(by: interval)
  }

  /// Something arrived at `now`: the timer waits for the end of the interval it arrived in. An
  /// arrival exactly at an interval's end belongs to the next interval.
  mutating func arm(at now: Instant) {
    guard armedEnd == nil, var end = anchor else { return }
    // Steps over the intervals that passed while nothing waited: their number is the idle time
    // over the interval, a few thousand at most for any interval a person would choose.
    while end <= now { end = end.advanced(by: interval) }
    anchor = end
    armedEnd = end
  }

  mutating func disarm() {
    armedEnd = nil
  }

  /// Whether the armed interval has ended by `now`.
  func hasEnded(at now: Instant) -> Bool {
    guard let armedEnd else { return false }
    return now >= armedEnd
  }
}

extension Duration {
  /// The longest interval a time operator waits: `Int64.max` seconds, about 292 billion years.
  static let longestInterval = Duration.seconds(Int64.max)
}

extension DurationProtocol {
  /// This interval, capped at ``Swift/Duration/longestInterval`` when it is a `Duration`: a
  /// deadline `now + interval` then stays far below `Duration`'s limit (about 5 trillion years)
  /// instead of trapping there, and nobody can tell a longer wait from this one. Other duration
  /// types are the clock's business.
  var cappedInterval: Self {
    guard let duration = self as? Duration, duration > .longestInterval else { return self }
    return Duration.longestInterval as! Self
  }
}
