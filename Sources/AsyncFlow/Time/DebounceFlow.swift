extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Delivers an element only once `interval` has passed without a newer one: the search-box
  /// operator, which waits for the typing to pause.
  ///
  /// When the upstream finishes, a pending element is delivered at once, then the finish; when it
  /// fails, the pending element is delivered first, then the failure: nothing is lost and a failure
  /// never turns into a finish. A consumer slower than the debounced elements sees the newest one.
  ///
  /// ```swift
  /// let queries = keystrokes.debounceFlow(for: .milliseconds(300), clock: clock)
  /// ```
  public func debounceFlow<C: Clock>(for interval: C.Duration, clock: C) -> AsyncDebounceFlowSequence<Self, C> {
    precondition(interval >= .zero, "debounceFlow(for:clock:): interval must be 0 or greater, got \(interval)")
    return AsyncDebounceFlowSequence(base: self, interval: interval, clock: clock)
  }

  /// ``debounceFlow(for:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let queries = keystrokes.debounceFlow(for: .milliseconds(300))
  /// ```
  public func debounceFlow(for interval: Duration) -> AsyncDebounceFlowSequence<Self, ContinuousClock> {
    debounceFlow(for: interval, clock: ContinuousClock())
  }
}

/// The sequence made by ``_Concurrency/AsyncSequence/debounceFlow(for:clock:)``: an element is
/// delivered once the interval has passed without a newer one. A concrete type, so that it can be
/// stored in a property.
///
/// ```swift
/// struct SearchModel {
///   let queries: AsyncDebounceFlowSequence<PassthroughFlow<String, Never>, ContinuousClock>
/// }
/// ```
public struct AsyncDebounceFlowSequence<Base: AsyncSequence & Sendable, C: Clock>: AsyncSequence, Sendable
where Base.Element: Sendable {
  /// The upstream's element.
  ///
  /// ```swift
  /// for try await element in queries { print(element) }
  /// ```
  public typealias Element = Base.Element
  /// The upstream's failure: `try` is not needed when it is `Never`.
  ///
  /// ```swift
  /// for await element in queries { print(element) }  // Failure == Never
  /// ```
  public typealias Failure = Base.Failure
  typealias Logic = DebounceStateMachine<Element, Failure, C.Instant>

  let base: Base
  let interval: C.Duration
  let clock: C

  /// Starts an iteration: its task starts at the first `next()`.
  ///
  /// ```swift
  /// var iterator = keystrokes.debounceFlow(for: .milliseconds(300)).makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(consumer: TimedConsumer(TimedStorage(machine: Logic(interval: interval), base: base, clock: clock)))
  }

  /// The iterator of an ``AsyncDebounceFlowSequence``. Releasing it ends its iteration's task.
  ///
  /// ```swift
  /// var iterator = queries.makeAsyncIterator()
  /// while let query = try await iterator.next() { print(query) }
  /// ```
  public struct Iterator: AsyncIteratorProtocol {
    private let consumer: TimedConsumer<Logic, Base, C>

    init(consumer: TimedConsumer<Logic, Base, C>) {
      self.consumer = consumer
    }

    /// The next debounced element, `nil` at the finish or once the consumer's task is cancelled.
    ///
    /// ```swift
    /// let query = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await consumer.next(isolation: actor)
    }

    /// The next debounced element; see ``next(isolation:)``.
    ///
    /// ```swift
    /// let query = try await iterator.next()
    /// ```
    public mutating func next() async throws(Failure) -> Element? {
      try await consumer.next(isolation: nil)
    }
  }
}

@available(*, unavailable)
extension AsyncDebounceFlowSequence.Iterator: Sendable {}

/// `debounceFlow`: an element is delivered once `interval` has passed without a newer one; at the
/// upstream's end the pending element is delivered at once, then the finish or the failure.
struct DebounceStateMachine<Element: Sendable, Failure: Error, Instant: InstantProtocol>: TimedStateMachine, Sendable {
  typealias UpstreamFailure = Failure

  private let interval: Instant.Duration
  private var pending: (element: Element, deadline: Instant)?
  private var outputs = TimedOutputQueue<Element, Failure>()

  init(interval: Instant.Duration) {
    self.interval = interval.cappedInterval
  }

  mutating func start(at now: Instant) {}

  mutating func upstreamElement(_ element: Element, at now: Instant) -> Element? {
    defer { pending = (element, now.advanced(by: interval)) }
    return pending?.element
  }

  mutating func upstreamEnded(_ failure: Failure?, at now: Instant) -> Element? {
    if let pending = pending.take() { outputs.append(pending.element, conflating: false) }
    outputs.end(failure)
    return nil
  }

  mutating func timerFired(at now: Instant) -> Element? {
    guard let deadline = pending?.deadline, now >= deadline, let pending = pending.take() else { return nil }
    return outputs.append(pending.element, conflating: true)
  }

  var deadline: Instant? { pending?.deadline }
  var wantsUpstream: Bool { !outputs.hasEnded }
  var hasOutput: Bool { !outputs.isEmpty }
  var isEnding: Bool { outputs.hasEnded }

  mutating func nextOutput(at now: Instant) -> TimedOutput<Element, Failure>? {
    outputs.popFirst()
  }
}
