/// The failure of
/// ``_Concurrency/AsyncSequence/timeoutFlow(after:clock:)->AsyncTimeoutFlowSequence<Self,C,FlowTimeoutError>``
/// over a sequence that cannot fail: the upstream took longer than the interval to deliver an
/// element or its end. Over a sequence that can fail, the timeout is ``FlowTimeoutFailure/timedOut``.
///
/// ```swift
/// let heartbeats = PassthroughFlow<Int, Never>()
/// do {
///   for try await beat in heartbeats.timeoutFlow(after: .seconds(30)) { print(beat) }
/// } catch { print("The server went silent") }  // error: FlowTimeoutError
/// ```
public struct FlowTimeoutError: Error, Hashable, Sendable, CustomStringConvertible {
  /// Creates the error.
  ///
  /// ```swift
  /// var iterator = heartbeats.timeoutFlow(after: .seconds(30)).makeAsyncIterator()
  /// await #expect(throws: FlowTimeoutError()) { try await iterator.next() }
  /// ```
  public init() {}

  /// A short description for logs.
  ///
  /// ```swift
  /// print(FlowTimeoutError())  // The sequence timed out.
  /// ```
  public var description: String { "The sequence timed out." }
}

/// The failure of
/// ``_Concurrency/AsyncSequence/timeoutFlow(after:clock:)->AsyncTimeoutFlowSequence<Self,C,FlowTimeoutFailure<Self.Failure>>``
/// over a sequence that can fail: the timeout, or the upstream's own failure, whose type it keeps.
///
/// ```swift
/// let pages = api.rows()  // Flow<[Item], APIError>
/// do throws(FlowTimeoutFailure<APIError>) {
///   for try await page in pages.timeoutFlow(after: .seconds(5)) { print(page) }
/// } catch .timedOut {
///   print("The server is taking too long")
/// } catch .upstream(let failure) {
///   print("The server failed: \(failure)")  // failure: APIError
/// }
/// ```
public enum FlowTimeoutFailure<Upstream: Error>: Error, CustomStringConvertible {
  /// The upstream took longer than the interval to deliver an element or its end.
  ///
  /// ```swift
  /// let timedOut: FlowTimeoutFailure<APIError> = .timedOut
  /// ```
  case timedOut
  /// The upstream failed before the interval passed.
  ///
  /// ```swift
  /// let failed = FlowTimeoutFailure<APIError>.upstream(APIError.offline)
  /// ```
  case upstream(Upstream)

  /// The upstream's failure, or `nil` for a timeout.
  ///
  /// ```swift
  /// let cause = FlowTimeoutFailure<APIError>.upstream(.offline).upstreamFailure  // .offline
  /// ```
  public var upstreamFailure: Upstream? {
    guard case .upstream(let failure) = self else { return nil }
    return failure
  }

  /// A short description for logs: the timeout's, or the upstream failure's.
  ///
  /// ```swift
  /// print(FlowTimeoutFailure<APIError>.timedOut)  // The sequence timed out.
  /// ```
  public var description: String {
    switch self {
    case .timedOut: FlowTimeoutError().description
    case .upstream(let failure): "\(failure)"
    }
  }
}

extension FlowTimeoutFailure: Equatable where Upstream: Equatable {}
extension FlowTimeoutFailure: Hashable where Upstream: Hashable {}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Fails with ``FlowTimeoutFailure/timedOut`` when the upstream takes longer than `interval` to
  /// deliver an element or its end, and cancels the upstream; the upstream's own failure comes as
  /// ``FlowTimeoutFailure/upstream(_:)``, with its type. The time is counted from the start of the
  /// iteration and from each hand-over of an element; it pauses while an element waits for a slow
  /// consumer. The failure comes once the upstream has returned from its cancellation; if it fails
  /// meanwhile (it ignored the cancellation), its failure is dropped: the first end wins, and the
  /// sequence still fails with ``FlowTimeoutFailure/timedOut``.
  ///
  /// A zero `interval` times out at once unless the upstream hands over its element or its end
  /// without suspending: a synchronous source passes whole, while one that waits, even for an
  /// element of the same instant, fails (`a|` gives `#`), as Kotlin's `timeout` does with zero.
  ///
  /// ```swift
  /// let pages = api.rows()  // Flow<[Item], APIError>
  /// var firstPage = pages.timeoutFlow(after: .seconds(5), clock: clock).makeAsyncIterator()
  /// do throws(FlowTimeoutFailure<APIError>) {
  ///   print(try await firstPage.next() ?? [])
  /// } catch .timedOut {
  ///   print("The server is taking too long")
  /// } catch .upstream(let failure) {
  ///   print("The server failed: \(failure)")  // failure: APIError
  /// }
  /// ```
  public func timeoutFlow<C: Clock>(
    after interval: C.Duration, clock: C
  ) -> AsyncTimeoutFlowSequence<Self, C, FlowTimeoutFailure<Failure>> {
    precondition(interval >= .zero, "timeoutFlow(after:clock:): interval must be 0 or greater, got \(interval)")
    return timingOut(after: interval, clock: clock, with: .timedOut, mapFailure: { .upstream($0) })
  }

  /// ``_Concurrency/AsyncSequence/timeoutFlow(after:clock:)->AsyncTimeoutFlowSequence<Self,C,FlowTimeoutFailure<Self.Failure>>``
  /// on the `ContinuousClock`.
  ///
  /// ```swift
  /// let timedPages = pages.timeoutFlow(after: .seconds(5))
  /// ```
  public func timeoutFlow(
    after interval: Duration
  ) -> AsyncTimeoutFlowSequence<Self, ContinuousClock, FlowTimeoutFailure<Failure>> {
    timeoutFlow(after: interval, clock: ContinuousClock())
  }

  /// Finishes, instead of failing, when the upstream takes longer than `interval` to deliver an
  /// element or its end; see
  /// ``_Concurrency/AsyncSequence/timeoutFlow(after:clock:)->AsyncTimeoutFlowSequence<Self,C,FlowTimeoutFailure<Self.Failure>>``.
  /// A zero `interval` finishes at once unless the upstream hands over without suspending.
  ///
  /// ```swift
  /// let responses = PassthroughFlow<String, Never>()  // the answers of the devices nearby
  /// // Collect the responses that arrive in time, then move on.
  /// let answers = responses.timeoutFlow(finishingAfter: .seconds(2), clock: clock)
  /// ```
  public func timeoutFlow<C: Clock>(
    finishingAfter interval: C.Duration, clock: C
  ) -> AsyncTimeoutFlowSequence<Self, C, Failure> {
    precondition(
      interval >= .zero, "timeoutFlow(finishingAfter:clock:): interval must be 0 or greater, got \(interval)")
    return timingOut(after: interval, clock: clock, with: nil, mapFailure: { $0 })
  }

  /// ``timeoutFlow(finishingAfter:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let answers = responses.timeoutFlow(finishingAfter: .seconds(2))
  /// ```
  public func timeoutFlow(
    finishingAfter interval: Duration
  ) -> AsyncTimeoutFlowSequence<Self, ContinuousClock, Failure> {
    timeoutFlow(finishingAfter: interval, clock: ContinuousClock())
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// What every `timeoutFlow` builds: `timeoutEnd` ends the result when the interval passes
  /// (`nil`: it finishes), `mapFailure` gives the upstream's failure the result's type.
  func timingOut<C: Clock, F: Error>(
    after interval: C.Duration, clock: C, with timeoutEnd: F?, mapFailure: @escaping @Sendable (Failure) -> F
  ) -> AsyncTimeoutFlowSequence<Self, C, F> {
    AsyncTimeoutFlowSequence {
      AsyncOperatorIterator(
        TimeoutLogic<Element, Failure, F, C.Instant>(
          interval: interval, timeoutEnd: timeoutEnd, mapFailure: mapFailure), pulling: self, clock: clock)
    }
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// Fails with ``FlowTimeoutError`` when the upstream takes longer than `interval`; for a sequence
  /// that cannot fail otherwise, the failure type says exactly that. A zero `interval` fails at
  /// once unless the upstream hands over without suspending.
  ///
  /// ```swift
  /// let heartbeats = PassthroughFlow<Int, Never>()  // the server's keep-alive counter
  /// let ticks = heartbeats.timeoutFlow(after: .seconds(30), clock: clock)  // Failure == FlowTimeoutError
  /// ```
  public func timeoutFlow<C: Clock>(
    after interval: C.Duration, clock: C
  ) -> AsyncTimeoutFlowSequence<Self, C, FlowTimeoutError> {
    precondition(interval >= .zero, "timeoutFlow(after:clock:): interval must be 0 or greater, got \(interval)")
    return timingOut(after: interval, clock: clock, with: FlowTimeoutError(), mapFailure: absurd)
  }

  /// ``_Concurrency/AsyncSequence/timeoutFlow(after:clock:)->AsyncTimeoutFlowSequence<Self,C,FlowTimeoutError>``
  /// on the `ContinuousClock`, for a sequence that cannot fail.
  ///
  /// ```swift
  /// let ticks = heartbeats.timeoutFlow(after: .seconds(30))
  /// ```
  public func timeoutFlow(
    after interval: Duration
  ) -> AsyncTimeoutFlowSequence<Self, ContinuousClock, FlowTimeoutError> {
    timeoutFlow(after: interval, clock: ContinuousClock())
  }
}

/// The sequence made by
/// ``_Concurrency/AsyncSequence/timeoutFlow(after:clock:)->AsyncTimeoutFlowSequence<Self,C,FlowTimeoutFailure<Self.Failure>>``
/// and ``_Concurrency/AsyncSequence/timeoutFlow(finishingAfter:clock:)``: the upstream's elements,
/// until it takes longer than the interval. `Failure` is ``FlowTimeoutError`` for an upstream that
/// cannot fail, ``FlowTimeoutFailure`` over the upstream's failure for one that can, and the
/// upstream's own for `finishingAfter:`. A concrete
/// type, so that it can be stored in a property.
///
/// ```swift
/// struct Heartbeat {
///   let beats: AsyncTimeoutFlowSequence<PassthroughFlow<Int, Never>, ContinuousClock, FlowTimeoutError>
/// }
/// ```
public typealias AsyncTimeoutFlowSequence<Base: AsyncSequence & Sendable, C: Clock, Failure: Error> =
  AsyncTimedFlowSequence<Base, C, Base.Element, Failure, _TimedFlowKind.Timeout>
where Base.Element: Sendable

/// `timeoutFlow`: ends the sequence (with a failure, or a finish) when the upstream takes longer
/// than `interval` to deliver an element or its end. The first end wins: an upstream failing
/// after the timeout fired (it ignored the cancellation) does not replace the timeout. The clock runs from the start of the
/// iteration and from each element's hand-over to the consumer; it pauses while an element waits
/// for a slow consumer, since the upstream is not being asked for anything then.
struct TimeoutLogic<Element: Sendable, InputFailure: Error, Failure: Error, Instant: InstantProtocol>: OperatorLogic {
  private let interval: Instant.Duration
  /// What the sequence ends with on a timeout: a failure, or `nil` to finish.
  private let timeoutEnd: Failure?
  private let mapFailure: @Sendable (InputFailure) -> Failure
  private var timeoutAt: Instant?
  private var outputs = OutputQueue<Element, Failure>()

  init(interval: Instant.Duration, timeoutEnd: Failure?, mapFailure: @escaping @Sendable (InputFailure) -> Failure) {
    self.interval = interval.cappedInterval
    self.timeoutEnd = timeoutEnd
    self.mapFailure = mapFailure
  }

  mutating func start(at now: Instant) {
    timeoutAt = now.advanced(by: interval)
  }

  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element> {
    timeoutAt = nil
    outputs.append(element, conflating: false)
    return .kept
  }

  mutating func inputEnded(_ failure: InputFailure?, from _: Int, at now: Instant) -> Element? {
    timeoutAt = nil
    outputs.end(failure.map(mapFailure))
    return nil
  }

  mutating func timerFired(at now: Instant) -> Element? {
    guard let timeoutAt, now >= timeoutAt else { return nil }
    self.timeoutAt = nil
    outputs.end(timeoutEnd)
    return nil
  }

  var deadline: Instant? { timeoutAt }
  var wantsInput: Bool { outputs.isEmpty && !outputs.hasEnded }
  var hasOutput: Bool { !outputs.isEmpty }
  var isEnding: Bool { outputs.hasEnded }

  mutating func nextOutput(at now: Instant) -> OperatorOutput<Element, Failure>? {
    let output = outputs.popFirst()
    if case .element = output, !outputs.hasEnded {
      timeoutAt = now.advanced(by: interval)
    }
    return output
  }
}
