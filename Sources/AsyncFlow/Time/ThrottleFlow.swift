extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Delivers at most one element per `interval`, driven by a timer as in Combine: the first
  /// element passes at once; at the end of each window that saw elements, the newest
  /// (`latest: true`) or the first (`latest: false`) of them is delivered even if the upstream has
  /// gone quiet, and opens the next window. At the upstream's end (finish or failure) a pending
  /// element is still delivered at the end of its window, then the end at once: the promise of at
  /// most one element per interval holds at the end too. Without a pending element, the end
  /// passes at once.
  ///
  /// With a zero `interval` a window closes at the instant it opens: of the elements that arrive
  /// at one instant, the first passes, then the newest (`latest: true`) or the second
  /// (`latest: false`) of the others (`[abc]` gives `[ac]` or `[ab]`); as at any interval, one the
  /// consumer has not taken yet is replaced by the next. Elements at different instants all pass.
  ///
  /// ```swift
  /// let scrollOffsets = PassthroughFlow<Double, Never>()  // the list's offset as it scrolls
  /// let positions = scrollOffsets.throttleFlow(for: .milliseconds(100), clock: clock)
  /// ```
  public func throttleFlow<C: Clock>(
    for interval: C.Duration, clock: C, latest: Bool = true
  ) -> AsyncThrottleFlowSequence<Self, C> {
    precondition(interval >= .zero, "throttleFlow(for:clock:latest:): interval must be 0 or greater, got \(interval)")
    return AsyncThrottleFlowSequence {
      AsyncOperatorIterator(
        ThrottleLogic<Element, Failure, C.Instant>(interval: interval, latest: latest), pulling: self, clock: clock)
    }
  }

  /// ``throttleFlow(for:clock:latest:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let positions = scrollOffsets.throttleFlow(for: .milliseconds(100), latest: false)
  /// ```
  public func throttleFlow(
    for interval: Duration, latest: Bool = true
  ) -> AsyncThrottleFlowSequence<Self, ContinuousClock> {
    throttleFlow(for: interval, clock: ContinuousClock(), latest: latest)
  }
}

/// The sequence made by ``_Concurrency/AsyncSequence/throttleFlow(for:clock:latest:)``: at most one
/// element per interval. A concrete type, so that it can be stored in a property.
///
/// ```swift
/// struct ScrollModel {
///   let positions: AsyncThrottleFlowSequence<PassthroughFlow<Double, Never>, ContinuousClock>
/// }
/// ```
public typealias AsyncThrottleFlowSequence<Base: AsyncSequence & Sendable, C: Clock> =
  AsyncTimedFlowSequence<Base, C, Base.Element, Base.Failure, _TimedFlowKind.Throttle>
where Base.Element: Sendable

/// `throttleFlow`, timer-driven as in Combine: the first element passes at once and opens a
/// window of `interval`; at the end of a window that saw elements, the newest (or the first) of
/// them is delivered and opens the next window, even if the upstream has gone quiet. At the
/// upstream's end (finish or failure) a pending element still waits for its window's end, then the
/// end follows it: two elements never come closer than the interval.
struct ThrottleLogic<Element: Sendable, Failure: Error, Instant: InstantProtocol>: OperatorLogic {
  typealias InputFailure = Failure

  private let interval: Instant.Duration
  private let latest: Bool
  private var windowEnd: Instant?
  private var pending: Element?
  /// The upstream's end (`.some(nil)`: a finish), held while a pending element waits for its window.
  private var heldEnd: Failure??
  private var outputs = OutputQueue<Element, Failure>()

  init(interval: Instant.Duration, latest: Bool) {
    self.interval = interval.cappedInterval
    self.latest = latest
  }

  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element> {
    if windowEnd == nil {
      windowEnd = now.advanced(by: interval)
      return outputs.append(element, conflating: true).map { .keptDisplacing($0) } ?? .kept
    } else if latest || pending == nil {
      defer { pending = element }
      return pending.map { .keptDisplacing($0) } ?? .kept
    }
    return .refused(element)
  }

  mutating func inputEnded(_ failure: Failure?, from _: Int, at now: Instant) -> Element? {
    // A pending element implies an open window: it keeps its turn, and the end follows it.
    guard pending == nil else {
      heldEnd = .some(failure)
      return nil
    }
    windowEnd = nil
    outputs.end(failure)
    return nil
  }

  mutating func timerFired(at now: Instant) -> Element? {
    guard let windowEnd, now >= windowEnd else { return nil }
    guard let pending = pending.take() else {
      self.windowEnd = nil
      return nil
    }
    let replaced = outputs.append(pending, conflating: true)
    if let heldEnd = heldEnd.take() {
      self.windowEnd = nil
      outputs.end(heldEnd)
    } else {
      self.windowEnd = now.advanced(by: interval)
    }
    return replaced
  }

  var deadline: Instant? { windowEnd }
  var wantsInput: Bool { !outputs.hasEnded && heldEnd == nil }
  var hasOutput: Bool { !outputs.isEmpty }
  var isEnding: Bool { outputs.hasEnded }

  mutating func nextOutput(at now: Instant) -> OperatorOutput<Element, Failure>? {
    outputs.popFirst()
  }
}
