extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Delivers, at the end of each `interval`, the newest element that arrived in it, and nothing
  /// for an interval in which none arrived: Combine's `throttle(latest: true)` on a fixed grid,
  /// Rx's and Kotlin's `sample`. Intervals are counted from the iteration's start.
  ///
  /// At the upstream's end an element still waiting keeps its turn: it comes at its interval's
  /// end, then the finish or the failure, so two elements never come closer than `interval` and
  /// nothing is lost. A consumer slower than the intervals sees the newest element.
  ///
  /// At the instant an interval ends, the tick comes first: an element (or the end) arriving at
  /// that very instant counts in the next interval, and the tick samples what came before it, as
  /// Kotlin's `sample` does (its `testPace`: -1, -3, 0, 1, 2, 3). The rule holds whichever of the
  /// two the scheduler runs first.
  ///
  /// ```swift
  /// struct Point: Sendable { var x, y: Double }
  /// let dragLocations = PassthroughFlow<Point, Never>()  // where the finger is, as it moves
  /// let position = dragLocations.sampleFlow(every: .milliseconds(100), clock: clock)  // ten a second at most
  /// ```
  ///
  /// - Parameters:
  ///   - interval: The length of each interval; greater than zero.
  ///   - clock: The clock that measures the intervals.
  public func sampleFlow<C: Clock>(every interval: C.Duration, clock: C) -> AsyncSampleFlowSequence<Self, C> {
    precondition(interval > .zero, "sampleFlow(every:clock:): interval must be greater than 0, got \(interval)")
    return AsyncSampleFlowSequence {
      AsyncOperatorIterator(SampleLogic<Element, Failure, C.Instant>(interval: interval), pulling: self, clock: clock)
    }
  }

  /// ``sampleFlow(every:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let position = dragLocations.sampleFlow(every: .milliseconds(100))
  /// ```
  public func sampleFlow(every interval: Duration) -> AsyncSampleFlowSequence<Self, ContinuousClock> {
    sampleFlow(every: interval, clock: ContinuousClock())
  }
}

/// The sequence made by ``_Concurrency/AsyncSequence/sampleFlow(every:clock:)``: the newest
/// element of each interval.
///
/// ```swift
/// let position: AsyncSampleFlowSequence<PassthroughFlow<Point, Never>, ContinuousClock> =
///   dragLocations.sampleFlow(every: .milliseconds(100))
/// ```
public typealias AsyncSampleFlowSequence<Base: AsyncSequence & Sendable, C: Clock> =
  AsyncTimedFlowSequence<Base, C, Base.Element, Base.Failure, _TimedFlowKind.Sample>
where Base.Element: Sendable

/// `sampleFlow`: the newest element of each interval at its end; at the upstream's end a waiting
/// element keeps its turn, and the end follows it.
struct SampleLogic<Element: Sendable, Failure: Error, Instant: InstantProtocol>: OperatorLogic {
  typealias InputFailure = Failure

  private var intervals: TimedIntervals<Instant>
  private var pending: Element?
  /// The upstream's end (`.some(nil)`: a finish), held while a pending element waits for its turn.
  private var heldEnd: Failure??
  private var outputs = OutputQueue<Element, Failure>()

  init(interval: Instant.Duration) {
    self.intervals = TimedIntervals(interval: interval)
  }

  mutating func start(at now: Instant) {
    intervals.start(at: now)
  }

  // The tick comes first: an element or an end that arrives at the instant an interval ends, or
  // after it while the timer has not reported yet, first lets that interval be sampled, then
  // counts in the next one. So the outcome does not depend on which of the upstream and the timer
  // reaches the lock first (kotlinx `SampleTest.testPace`: -1, -3, 0, 1, 2, 3).
  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element> {
    let displaced = intervals.hasEnded(at: now) ? samplePending() : pending.take()
    pending = element
    intervals.arm(at: now)
    return displaced.map { .keptDisplacing($0) } ?? .kept
  }

  mutating func inputEnded(_ failure: Failure?, from _: Int, at now: Instant) -> Element? {
    let displaced = intervals.hasEnded(at: now) ? samplePending() : nil
    guard pending == nil else {
      heldEnd = .some(failure)
      return displaced
    }
    outputs.end(failure)
    return displaced
  }

  mutating func timerFired(at now: Instant) -> Element? {
    guard intervals.hasEnded(at: now) else { return nil }
    return samplePending()
  }

  /// The armed interval has ended: its newest element goes to the consumer, and a held end after
  /// it. Returns the output a conflation displaced.
  private mutating func samplePending() -> Element? {
    guard let pending = pending.take() else { return nil }
    intervals.disarm()
    let displaced = outputs.append(pending, conflating: true)
    if let heldEnd = heldEnd.take() { outputs.end(heldEnd) }
    return displaced
  }

  var deadline: Instant? { intervals.armedEnd }
  var wantsInput: Bool { !outputs.hasEnded && heldEnd == nil }
  var hasOutput: Bool { !outputs.isEmpty }
  var isEnding: Bool { outputs.hasEnded }

  mutating func nextOutput(at now: Instant) -> OperatorOutput<Element, Failure>? {
    outputs.popFirst()
  }
}
