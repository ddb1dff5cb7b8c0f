extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Delivers every element, and the end, `interval` after it arrived. The elements in flight are
  /// buffered: as many as arrive within one interval.
  ///
  /// ```swift
  /// let toasts = messages.delayFlow(for: .seconds(1), clock: clock)
  /// ```
  public func delayFlow<C: Clock>(for interval: C.Duration, clock: C) -> some AsyncSequence<Element, Failure> & Sendable
  {
    precondition(interval >= .zero, "delayFlow(for:clock:): interval must be 0 or greater, got \(interval)")
    return TimedSequence(
      machine: DelayStateMachine<Element, Failure, C.Instant>(interval: interval), base: self, clock: clock)
  }

  /// ``delayFlow(for:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let toasts = messages.delayFlow(for: .seconds(1))
  /// ```
  public func delayFlow(for interval: Duration) -> some AsyncSequence<Element, Failure> & Sendable {
    delayFlow(for: interval, clock: ContinuousClock())
  }
}

/// `delayFlow`: every element, and the end, is delivered `interval` after it arrived.
/// Elements in flight are buffered: as many as arrive within one interval.
struct DelayStateMachine<Element: Sendable, Failure: Error, Instant: InstantProtocol>: TimedStateMachine, Sendable {
  typealias UpstreamFailure = Failure

  private let interval: Instant.Duration
  /// Elements, and at most one end, each with the instant it is due; ordered by that instant.
  private var inFlight: [(output: TimedOutput<Element, Failure>, due: Instant)] = []
  private var inFlightStart = 0
  private var outputs = TimedOutputQueue<Element, Failure>()
  private var upstreamHasEnded = false

  init(interval: Instant.Duration) {
    self.interval = interval
  }

  mutating func start(at now: Instant) {}

  mutating func upstreamElement(_ element: Element, at now: Instant) {
    inFlight.append((.element(element), now.advanced(by: interval)))
  }

  mutating func upstreamEnded(_ failure: Failure?, at now: Instant) {
    upstreamHasEnded = true
    inFlight.append((.end(failure), now.advanced(by: interval)))
  }

  mutating func timerFired(at now: Instant) {
    while inFlightStart < inFlight.count, inFlight[inFlightStart].due <= now {
      switch inFlight[inFlightStart].output {
      case .element(let element): outputs.append(element, conflating: false)
      case .end(let failure): outputs.end(failure)
      }
      inFlightStart += 1
    }
    if inFlightStart == inFlight.count {
      inFlight.removeAll(keepingCapacity: true)
      inFlightStart = 0
    }
  }

  var deadline: Instant? { inFlightStart < inFlight.count ? inFlight[inFlightStart].due : nil }
  var wantsUpstream: Bool { !upstreamHasEnded && !outputs.hasEnded }
  var hasOutput: Bool { !outputs.isEmpty }
  var isEnding: Bool { outputs.hasEnded }

  mutating func nextOutput(at now: Instant) -> TimedOutput<Element, Failure>? {
    outputs.popFirst()
  }
}
