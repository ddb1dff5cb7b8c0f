extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Delivers every element, and the end, `interval` after it arrived. The elements in flight are
  /// buffered: as many as arrive within one interval. Behind a stalled consumer, the upstream is
  /// not pulled while more elements are due than in flight: at most about twice what arrives
  /// within one interval (plus one) is held.
  ///
  /// A zero `interval` delays nothing: every element, and the end, passes in order at the instant
  /// it arrives, elements of one instant included.
  ///
  /// ```swift
  /// let messages = PassthroughFlow<String, Never>()
  /// let toasts = messages.delayFlow(for: .seconds(1), clock: clock)
  /// ```
  @inlinable
  public func delayFlow<C: Clock>(for interval: C.Duration, clock: C) -> AsyncDelayFlowSequence<Self, C> {
    precondition(interval >= .zero, "delayFlow(for:clock:): interval must be 0 or greater, got \(interval)")
    return AsyncDelayFlowSequence {
      AsyncOperatorIterator(DelayLogic<Element, Failure, C.Instant>(interval: interval), pulling: self, clock: clock)
    }
  }

  /// ``delayFlow(for:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let toasts = messages.delayFlow(for: .seconds(1))
  /// ```
  public func delayFlow(for interval: Duration) -> AsyncDelayFlowSequence<Self, ContinuousClock> {
    delayFlow(for: interval, clock: ContinuousClock())
  }
}

/// The sequence made by ``_Concurrency/AsyncSequence/delayFlow(for:clock:)``: every element, and
/// the end, shifted by the interval. A concrete type, so that it can be stored in a property.
///
/// ```swift
/// struct Toasts {
///   let messages: AsyncDelayFlowSequence<PassthroughFlow<String, Never>, ContinuousClock>
/// }
/// ```
public typealias AsyncDelayFlowSequence<Base: AsyncSequence & Sendable, C: Clock> =
  AsyncTimedFlowSequence<Base, C, Base.Element, Base.Failure, _TimedFlowKind.Delay>
where Base.Element: Sendable

/// `delayFlow`: every element, and the end, is delivered `interval` after it arrived.
/// Elements in flight are buffered: as many as arrive within one interval; behind a stalled
/// consumer, the upstream is no longer pulled (see `wantsUpstream`).
@usableFromInline
struct DelayLogic<Element: Sendable, Failure: Error, Instant: InstantProtocol>: OperatorLogic {
  @usableFromInline
  typealias InputFailure = Failure

  @usableFromInline
  let interval: Instant.Duration
  /// Elements, and at most one end, each with the instant it is due; ordered by that instant.
  @usableFromInline
  var inFlight = RingBuffer<(output: OperatorOutput<Element, Failure>, due: Instant)>()
  @usableFromInline
  var outputs = OutputQueue<Element, Failure>()
  @usableFromInline
  var upstreamHasEnded = false

  // Not inlined: the interval is capped by the module's own rule, once per iteration.
  @usableFromInline
  init(interval: Instant.Duration) {
    self.interval = interval.cappedInterval
  }

  @inlinable
  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element> {
    inFlight.append((.element(element), now.advanced(by: interval)))
    return .kept
  }

  @inlinable
  mutating func inputEnded(_ failure: Failure?, from _: Int, at now: Instant) -> Element? {
    upstreamHasEnded = true
    inFlight.append((.end(failure), now.advanced(by: interval)))
    return nil
  }

  @inlinable
  mutating func timerFired(at now: Instant) -> Element? {
    while let first = inFlight.first, first.due <= now {
      switch inFlight.popFirst()!.output {
      case .element(let element): outputs.append(element, conflating: false)
      case .end(let failure): outputs.end(failure)
      }
    }
    return nil
  }

  @inlinable
  var deadline: Instant? { inFlight.first?.due }
  /// Pulls while the elements due and not yet taken are no more than those in flight: a stalled
  /// consumer stops the pulling once more are due than arrive within about one interval, so at
  /// most about twice what arrives within one interval is held (plus one), instead of everything
  /// the upstream produces meanwhile.
  @inlinable
  var wantsInput: Bool {
    !upstreamHasEnded && !outputs.hasEnded && outputs.count <= inFlight.count
  }
  @inlinable
  var hasOutput: Bool { !outputs.isEmpty }
  @inlinable
  var isEnding: Bool { outputs.hasEnded }

  @inlinable
  mutating func nextOutput(at now: Instant) -> OperatorOutput<Element, Failure>? {
    outputs.popFirst()
  }
}
