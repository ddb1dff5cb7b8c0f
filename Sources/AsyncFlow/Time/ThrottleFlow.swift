extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Delivers at most one element per `interval`, driven by a timer as in Combine: the first
  /// element passes at once; at the end of each window that saw elements, the newest
  /// (`latest: true`) or the first (`latest: false`) of them is delivered even if the upstream has
  /// gone quiet, and opens the next window. At the upstream's end a pending element is delivered,
  /// then the end.
  ///
  /// ```swift
  /// let positions = scrollOffsets.throttleFlow(for: .milliseconds(100), clock: clock)
  /// ```
  public func throttleFlow<C: Clock>(
    for interval: C.Duration, clock: C, latest: Bool = true
  ) -> some AsyncSequence<Element, Failure> & Sendable {
    precondition(interval >= .zero, "throttleFlow(for:clock:latest:): interval must be 0 or greater, got \(interval)")
    return TimedSequence(
      machine: ThrottleStateMachine<Element, Failure, C.Instant>(interval: interval, latest: latest), base: self,
      clock: clock)
  }

  /// ``throttleFlow(for:clock:latest:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let positions = scrollOffsets.throttleFlow(for: .milliseconds(100), latest: false)
  /// ```
  public func throttleFlow(for interval: Duration, latest: Bool = true) -> some AsyncSequence<Element, Failure>
    & Sendable
  {
    throttleFlow(for: interval, clock: ContinuousClock(), latest: latest)
  }
}

/// `throttleFlow`, timer-driven as in Combine: the first element passes at once and opens a
/// window of `interval`; at the end of a window that saw elements, the newest (or the first) of
/// them is delivered and opens the next window, even if the upstream has gone quiet.
struct ThrottleStateMachine<Element: Sendable, Failure: Error, Instant: InstantProtocol>: TimedStateMachine, Sendable {
  typealias UpstreamFailure = Failure

  private let interval: Instant.Duration
  private let latest: Bool
  private var windowEnd: Instant?
  private var pending: Element?
  private var outputs = TimedOutputQueue<Element, Failure>()

  init(interval: Instant.Duration, latest: Bool) {
    self.interval = interval
    self.latest = latest
  }

  mutating func start(at now: Instant) {}

  mutating func upstreamElement(_ element: Element, at now: Instant) {
    if windowEnd == nil {
      outputs.append(element, conflating: true)
      windowEnd = now.advanced(by: interval)
    } else if latest || pending == nil {
      pending = element
    }
  }

  mutating func upstreamEnded(_ failure: Failure?, at now: Instant) {
    if let pending = pending.take() { outputs.append(pending, conflating: false) }
    windowEnd = nil
    outputs.end(failure)
  }

  mutating func timerFired(at now: Instant) {
    guard let windowEnd, now >= windowEnd else { return }
    if let pending = pending.take() {
      outputs.append(pending, conflating: true)
      self.windowEnd = now.advanced(by: interval)
    } else {
      self.windowEnd = nil
    }
  }

  var deadline: Instant? { windowEnd }
  var wantsUpstream: Bool { !outputs.hasEnded }
  var hasOutput: Bool { !outputs.isEmpty }
  var isEnding: Bool { outputs.hasEnded }

  mutating func nextOutput(at now: Instant) -> TimedOutput<Element, Failure>? {
    outputs.popFirst()
  }
}
