extension Flow where Element: InstantProtocol, Failure == Never {
  /// A flow that delivers the clock's instant every `interval`, starting one interval after the
  /// iteration starts. A consumer that falls behind misses ticks rather than getting a burst.
  ///
  /// ```swift
  /// for await tick in Flow.timer(every: .seconds(1), clock: clock).prefix(3) { print(tick) }
  /// ```
  public static func timer<C: Clock>(every interval: C.Duration, clock: C) -> Flow where C.Instant == Element {
    precondition(interval > .zero, "Flow.timer(every:clock:): interval must be greater than 0, got \(interval)")
    return Flow {
      let ticks = TimerTicks(clock: clock, interval: interval)
      return .async { (actor: isolated (any Actor)?) async -> Element? in await ticks.next(isolation: actor) }
    }
  }

  /// ``timer(every:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// func refresh() async {}  // reloads the feed
  /// for await _ in Flow.timer(every: .seconds(30)) { await refresh() }
  /// ```
  public static func timer(every interval: Duration) -> Flow where Element == ContinuousClock.Instant {
    timer(every: interval, clock: ContinuousClock())
  }
}

/// The schedule of one iteration of `Flow.timer`.
private final class TimerTicks<C: Clock> {
  private let clock: C
  private let interval: C.Duration
  private var deadline: C.Instant

  init(clock: C, interval: C.Duration) {
    self.clock = clock
    self.interval = interval.cappedInterval
    self.deadline = clock.now.advanced(by: self.interval)
  }

  func next(isolation actor: isolated (any Actor)?) async -> C.Instant? {
    do {
      try await clock.sleep(until: deadline, tolerance: nil)
    } catch {
      return nil
    }
    let tick = deadline
    deadline = Self.nextDeadline(after: tick, now: clock.now, interval: interval)
    return tick
  }

  /// The first tick after `now`: the ticks a slow consumer missed are skipped by a division, not
  /// one by one (a 1 ns timer an hour late would loop 3.6 trillion times).
  static func nextDeadline(after tick: C.Instant, now: C.Instant, interval: C.Duration) -> C.Instant {
    var next = tick.advanced(by: interval)
    guard next <= now else { return next }
    // `late / interval` is a Double: rounded, it may overshoot by an interval or so (more beyond
    // 2^53 intervals), so skip one less than it says, then step.
    let missed = (next.duration(to: now) / interval).rounded(.down) - 1
    if missed >= 1 { next = next.advanced(by: interval * Int(Swift.min(missed, 0x1p62))) }
    while next <= now { next = next.advanced(by: interval) }
    return next
  }
}
