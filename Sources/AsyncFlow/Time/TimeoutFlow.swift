/// The failure of ``_Concurrency/AsyncSequence/timeoutFlow(after:clock:)-(_,_)``: the upstream took longer than
/// the interval to deliver an element or its end.
///
/// ```swift
/// do { for try await page in pages.timeoutFlow(after: .seconds(5)) { show(page) } }
/// catch is FlowTimeoutError { showTimeoutBanner() }
/// ```
public struct FlowTimeoutError: Error, Hashable, Sendable, CustomStringConvertible {
  /// Creates the error.
  ///
  /// ```swift
  /// #expect(throws: FlowTimeoutError()) { try await iterator.next() }
  /// ```
  public init() {}

  /// A short description for logs.
  ///
  /// ```swift
  /// print(FlowTimeoutError())  // The sequence timed out.
  /// ```
  public var description: String { "The sequence timed out." }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Fails with ``FlowTimeoutError`` when the upstream takes longer than `interval` to deliver an
  /// element or its end, and cancels the upstream. The time is counted from the start of the
  /// iteration and from each hand-over of an element; it pauses while an element waits for a slow
  /// consumer.
  ///
  /// ```swift
  /// let page = try await api.page(1).timeoutFlow(after: .seconds(5), clock: clock).first { _ in true }
  /// ```
  public func timeoutFlow<C: Clock>(after interval: C.Duration, clock: C) -> some AsyncSequence<Element, any Error>
    & Sendable
  {
    precondition(interval >= .zero, "timeoutFlow(after:clock:): interval must be 0 or greater, got \(interval)")
    let machine = TimeoutStateMachine<Element, Failure, any Error, C.Instant>(
      interval: interval, timeoutEnd: FlowTimeoutError(), mapFailure: { $0 })
    return TimedSequence(machine: machine, base: self, clock: clock)
  }

  /// ``timeoutFlow(after:clock:)-(_,_)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let page = api.page(1).timeoutFlow(after: .seconds(5))
  /// ```
  public func timeoutFlow(after interval: Duration) -> some AsyncSequence<Element, any Error> & Sendable {
    timeoutFlow(after: interval, clock: ContinuousClock())
  }

  /// Finishes, instead of failing, when the upstream takes longer than `interval` to deliver an
  /// element or its end; see ``timeoutFlow(after:clock:)-(_,_)``.
  ///
  /// ```swift
  /// // Collect the responses that arrive in time, then move on.
  /// let answers = responses.timeoutFlow(finishingAfter: .seconds(2), clock: clock)
  /// ```
  public func timeoutFlow<C: Clock>(
    finishingAfter interval: C.Duration, clock: C
  ) -> some AsyncSequence<Element, Failure> & Sendable {
    precondition(
      interval >= .zero, "timeoutFlow(finishingAfter:clock:): interval must be 0 or greater, got \(interval)")
    let machine = TimeoutStateMachine<Element, Failure, Failure, C.Instant>(
      interval: interval, timeoutEnd: nil, mapFailure: { $0 })
    return TimedSequence(machine: machine, base: self, clock: clock)
  }

  /// ``timeoutFlow(finishingAfter:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let answers = responses.timeoutFlow(finishingAfter: .seconds(2))
  /// ```
  public func timeoutFlow(finishingAfter interval: Duration) -> some AsyncSequence<Element, Failure> & Sendable {
    timeoutFlow(finishingAfter: interval, clock: ContinuousClock())
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// Fails with ``FlowTimeoutError`` when the upstream takes longer than `interval`; for a sequence
  /// that cannot fail otherwise, the failure type says exactly that.
  ///
  /// ```swift
  /// let ticks = heartbeats.timeoutFlow(after: .seconds(30), clock: clock)  // Failure == FlowTimeoutError
  /// ```
  public func timeoutFlow<C: Clock>(after interval: C.Duration, clock: C) -> some AsyncSequence<
    Element, FlowTimeoutError
  > & Sendable {
    precondition(interval >= .zero, "timeoutFlow(after:clock:): interval must be 0 or greater, got \(interval)")
    let machine = TimeoutStateMachine<Element, Never, FlowTimeoutError, C.Instant>(
      interval: interval, timeoutEnd: FlowTimeoutError(), mapFailure: absurd)
    return TimedSequence(machine: machine, base: self, clock: clock)
  }

  /// ``timeoutFlow(after:clock:)-(_,_)`` on the `ContinuousClock`, for a sequence that cannot fail.
  ///
  /// ```swift
  /// let ticks = heartbeats.timeoutFlow(after: .seconds(30))
  /// ```
  public func timeoutFlow(after interval: Duration) -> some AsyncSequence<Element, FlowTimeoutError> & Sendable {
    timeoutFlow(after: interval, clock: ContinuousClock())
  }
}

/// `timeoutFlow`: ends the sequence (with a failure, or a finish) when the upstream takes longer
/// than `interval` to deliver an element or its end. The clock runs from the start of the
/// iteration and from each element's hand-over to the consumer; it pauses while an element waits
/// for a slow consumer, since the upstream is not being asked for anything then.
struct TimeoutStateMachine<Element: Sendable, UpstreamFailure: Error, Failure: Error, Instant: InstantProtocol>:
  TimedStateMachine, Sendable
{
  private let interval: Instant.Duration
  /// What the sequence ends with on a timeout: a failure, or `nil` to finish.
  private let timeoutEnd: Failure?
  private let mapFailure: @Sendable (UpstreamFailure) -> Failure
  private var timeoutAt: Instant?
  private var outputs = TimedOutputQueue<Element, Failure>()

  init(interval: Instant.Duration, timeoutEnd: Failure?, mapFailure: @escaping @Sendable (UpstreamFailure) -> Failure) {
    self.interval = interval
    self.timeoutEnd = timeoutEnd
    self.mapFailure = mapFailure
  }

  mutating func start(at now: Instant) {
    timeoutAt = now.advanced(by: interval)
  }

  mutating func upstreamElement(_ element: Element, at now: Instant) {
    outputs.append(element, conflating: false)
    timeoutAt = nil
  }

  mutating func upstreamEnded(_ failure: UpstreamFailure?, at now: Instant) {
    timeoutAt = nil
    outputs.end(failure.map(mapFailure))
  }

  mutating func timerFired(at now: Instant) {
    guard let timeoutAt, now >= timeoutAt else { return }
    self.timeoutAt = nil
    outputs.end(timeoutEnd)
  }

  var deadline: Instant? { timeoutAt }
  var wantsUpstream: Bool { outputs.isEmpty && !outputs.hasEnded }
  var hasOutput: Bool { !outputs.isEmpty }
  var isEnding: Bool { outputs.hasEnded }

  mutating func nextOutput(at now: Instant) -> TimedOutput<Element, Failure>? {
    let output = outputs.popFirst()
    if case .element = output, !outputs.hasEnded {
      timeoutAt = now.advanced(by: interval)
    }
    return output
  }
}
