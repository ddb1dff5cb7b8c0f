/// A clock that erases the type of another whose durations are `Duration`: what a model stores
/// when it receives its clock by injection (a `ContinuousClock` in the app, a `TestClock` in
/// tests), so that it can pass it to any time operator.
///
/// A stored `any Clock<Duration>` cannot be passed where a generic `some Clock` is expected; this
/// can. Its instants count from the moment it was made.
///
/// ```swift
/// @MainActor final class SearchModel {
///   private let clock: AnyFlowClock
///   init(clock: some Clock<Duration> = ContinuousClock()) { self.clock = AnyFlowClock(clock) }
///   func results(for text: some AsyncSequence<String, Never> & Sendable) -> some AsyncSequence<String, Never> {
///     text.debounceFlow(for: .milliseconds(300), clock: clock)
///   }
/// }
/// ```
public struct AnyFlowClock: Clock, Sendable {
  /// The standard library's `Duration`, so ``AnyFlowClock`` stands in wherever a `Clock<Duration>` is expected.
  ///
  /// ```swift
  /// let step: AnyFlowClock.Duration = .milliseconds(300)
  /// ```
  public typealias Duration = Swift.Duration

  /// A point on an ``AnyFlowClock``: the time since the clock was made.
  ///
  /// ```swift
  /// let clock = AnyFlowClock(ContinuousClock())
  /// let deadline = clock.now.advanced(by: .seconds(1))
  /// ```
  public struct Instant: InstantProtocol, Hashable, Sendable {
    /// The time since the clock was made.
    ///
    /// ```swift
    /// #expect(clock.now.offset >= .zero)
    /// ```
    public var offset: Duration

    /// The instant `offset` after the clock was made.
    ///
    /// ```swift
    /// let start = AnyFlowClock.Instant(offset: .zero)
    /// ```
    public init(offset: Duration) {
      self.offset = offset
    }

    /// The instant `duration` later.
    ///
    /// ```swift
    /// let later = clock.now.advanced(by: .seconds(1))
    /// ```
    public func advanced(by duration: Duration) -> Instant {
      Instant(offset: offset + duration)
    }

    /// The duration from this instant to `other`.
    ///
    /// ```swift
    /// let elapsed = start.duration(to: clock.now)
    /// ```
    public func duration(to other: Instant) -> Duration {
      other.offset - offset
    }

    /// Whether this instant comes first.
    ///
    /// ```swift
    /// #expect(start < clock.now || start == clock.now)
    /// ```
    public static func < (lhs: Instant, rhs: Instant) -> Bool {
      lhs.offset < rhs.offset
    }
  }

  private let elapsed: @Sendable () -> Duration
  private let sleepUntil: @Sendable (Duration, Duration?) async throws -> Void
  private let resolution: Duration

  /// Wraps `clock`; its instants count from now. A clock stored as `any Clock<Duration>` is
  /// accepted too: Swift opens the existential.
  ///
  /// ```swift
  /// let clock = AnyFlowClock(TestClock())
  /// let stored: any Clock<Duration> = ContinuousClock()
  /// let same = AnyFlowClock(stored)
  /// ```
  public init<C: Clock>(_ clock: C) where C.Duration == Duration {
    let origin = clock.now
    elapsed = { origin.duration(to: clock.now) }
    sleepUntil = { offset, tolerance in try await clock.sleep(until: origin.advanced(by: offset), tolerance: tolerance) }
    resolution = clock.minimumResolution
  }

  /// The wrapped clock's current time, as the time since this clock was made.
  ///
  /// ```swift
  /// let start = clock.now
  /// ```
  public var now: Instant { Instant(offset: elapsed()) }

  /// The wrapped clock's resolution.
  ///
  /// ```swift
  /// #expect(AnyFlowClock(TestClock()).minimumResolution == .zero)
  /// ```
  public var minimumResolution: Duration { resolution }

  /// Sleeps on the wrapped clock until `deadline`.
  ///
  /// ```swift
  /// try await clock.sleep(until: clock.now.advanced(by: .seconds(1)))
  /// ```
  public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    try await sleepUntil(deadline.offset, tolerance)
  }
}
