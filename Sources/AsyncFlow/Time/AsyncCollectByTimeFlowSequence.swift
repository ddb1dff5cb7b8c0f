extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Delivers the elements that arrived in each `interval`, as an array, at the interval's end:
  /// Combine's `collect(.byTime)`. Intervals are counted from the iteration's start; an interval
  /// in which nothing arrived delivers nothing. At the upstream's end what was collected is
  /// delivered at once, before the finish or the failure: nothing is lost.
  ///
  /// A consumer slower than the intervals holds up the upstream once one array is waiting for it,
  /// so what is held is at most one array and what arrives in one interval.
  ///
  /// ```swift
  /// struct Event: Sendable { var name: String }  // an analytics event
  /// let events = PassthroughFlow<Event, Never>()
  /// for try await batch in events.collectFlow(every: .seconds(5), clock: clock) { try await api.upload(batch) }
  /// ```
  ///
  /// - Parameters:
  ///   - interval: The length of each interval; greater than zero.
  ///   - clock: The clock that measures the intervals.
  public func collectFlow<C: Clock>(every interval: C.Duration, clock: C) -> AsyncCollectByTimeFlowSequence<Self, C> {
    precondition(interval > .zero, "collectFlow(every:clock:): interval must be greater than 0, got \(interval)")
    return collected(count: nil, every: interval, clock: clock)
  }

  /// ``collectFlow(every:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// for try await batch in events.collectFlow(every: .seconds(5)) { try await api.upload(batch) }
  /// ```
  public func collectFlow(every interval: Duration) -> AsyncCollectByTimeFlowSequence<Self, ContinuousClock> {
    collectFlow(every: interval, clock: ContinuousClock())
  }

  /// Delivers an array as soon as `count` elements have arrived, and otherwise what arrived by
  /// the end of each `interval`, whichever comes first: Combine's `collect(.byTimeOrCount)`.
  /// Intervals are counted from the iteration's start and do not restart when a full array is
  /// delivered; an interval in which nothing arrived delivers nothing. At the upstream's end what
  /// was collected is delivered at once, before the finish or the failure.
  ///
  /// ```swift
  /// let logLines = PassthroughFlow<String, Never>()
  /// let batches = logLines.collectFlow(count: 100, orEvery: .seconds(1), clock: clock)
  /// ```
  ///
  /// - Parameters:
  ///   - count: The most elements an array holds; 1 or greater.
  ///   - interval: The length of each interval; greater than zero.
  ///   - clock: The clock that measures the intervals.
  public func collectFlow<C: Clock>(
    count: Int, orEvery interval: C.Duration, clock: C
  ) -> AsyncCollectByTimeFlowSequence<Self, C> {
    precondition(count >= 1, "collectFlow(count:orEvery:clock:): count must be 1 or greater, got \(count)")
    precondition(
      interval > .zero, "collectFlow(count:orEvery:clock:): interval must be greater than 0, got \(interval)")
    return collected(count: count, every: interval, clock: clock)
  }

  /// ``collectFlow(count:orEvery:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let batches = logLines.collectFlow(count: 100, orEvery: .seconds(1))
  /// ```
  public func collectFlow(
    count: Int, orEvery interval: Duration
  ) -> AsyncCollectByTimeFlowSequence<Self, ContinuousClock> {
    collectFlow(count: count, orEvery: interval, clock: ContinuousClock())
  }

  /// What both `collectFlow` by time build: `count` (`nil`: no bound) and the interval checked.
  func collected<C: Clock>(
    count: Int?, every interval: C.Duration, clock: C
  ) -> AsyncCollectByTimeFlowSequence<Self, C> {
    AsyncCollectByTimeFlowSequence {
      AsyncOperatorIterator(
        CollectByTimeLogic<Element, Failure, C.Instant>(count: count, interval: interval), pulling: self, clock: clock)
    }
  }
}

/// The sequence made by ``_Concurrency/AsyncSequence/collectFlow(every:clock:)`` and
/// ``_Concurrency/AsyncSequence/collectFlow(count:orEvery:clock:)``: arrays of what arrived in
/// each interval (or of `count` elements, if that comes first).
///
/// ```swift
/// let batches: AsyncCollectByTimeFlowSequence<PassthroughFlow<Event, Never>, ContinuousClock> =
///   events.collectFlow(every: .seconds(5))
/// ```
public typealias AsyncCollectByTimeFlowSequence<Base: AsyncSequence & Sendable, C: Clock> =
  AsyncTimedFlowSequence<Base, C, [Base.Element], Base.Failure, _TimedFlowKind.CollectByTime>
where Base.Element: Sendable

/// `collectFlow(every:)` and `collectFlow(count:orEvery:)`: arrays at each interval's end (or when
/// `count` is reached), the remainder at the upstream's end.
struct CollectByTimeLogic<Upstream: Sendable, Failure: Error, Instant: InstantProtocol>: OperatorLogic
{
  typealias Element = Upstream
  typealias Output = [Upstream]
  typealias InputFailure = Failure

  private let count: Int?
  private var intervals: TimedIntervals<Instant>
  private var collecting: [Upstream] = []
  private var outputs = OutputQueue<[Upstream], Failure>()

  init(count: Int?, interval: Instant.Duration) {
    self.count = count
    self.intervals = TimedIntervals(interval: interval)
  }

  mutating func start(at now: Instant) {
    intervals.start(at: now)
  }

  mutating func input(_ element: Upstream, at now: Instant) -> InputVerdict<Upstream> {
    collecting.append(element)
    if let count, collecting.count >= count {
      deliverCollected()
    } else if collecting.count == 1 {
      intervals.arm(at: now)
    }
    return .kept
  }

  mutating func inputEnded(_ failure: Failure?, from _: Int, at now: Instant) -> Element? {
    deliverCollected()
    outputs.end(failure)
    return nil
  }

  mutating func timerFired(at now: Instant) -> Upstream? {
    guard intervals.hasEnded(at: now) else { return nil }
    deliverCollected()
    return nil
  }

  private mutating func deliverCollected() {
    intervals.disarm()
    guard !collecting.isEmpty else { return }
    outputs.append(collecting, conflating: false)
    collecting = []
  }

  var deadline: Instant? { intervals.armedEnd }
  // One array waiting for the consumer holds up the upstream: what is held stays bounded.
  var wantsInput: Bool { !outputs.hasEnded && outputs.isEmpty }
  var hasOutput: Bool { !outputs.isEmpty }
  var isEnding: Bool { outputs.hasEnded }

  mutating func nextOutput(at now: Instant) -> OperatorOutput<[Upstream], Failure>? {
    outputs.popFirst()
  }
}
