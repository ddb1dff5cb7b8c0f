extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Decouples a fast producer from a slow consumer: the upstream is pulled in a task of its own,
  /// as fast as it produces, into a buffer that keeps what `policy` says until the consumer takes
  /// it. `.unbounded` loses nothing (and holds the whole backlog); `.bufferingNewest(n)` drops the
  /// oldest element when `n` wait, `.bufferingOldest(n)` drops the new one. The upstream's finish
  /// or failure comes after the buffered elements: nothing the buffer holds is lost to it.
  ///
  /// ```swift
  /// // The sensor never waits for the screen; the screen shows the newest 10 readings it missed.
  /// for await reading in sensor.readings().bufferFlow(policy: .bufferingNewest(10)) { chart.append(reading) }
  /// ```
  ///
  /// - Parameter policy: What the buffer keeps; a bounded one keeps 1 element or more.
  public func bufferFlow(policy: FlowBufferingPolicy) -> AsyncBufferFlowSequence<Self> {
    if case .newest(let limit) = policy.storage {
      precondition(limit >= 1, "bufferFlow(policy:): a bufferingNewest limit must be 1 or greater, got \(limit)")
    }
    if case .oldest(let limit) = policy.storage {
      precondition(limit >= 1, "bufferFlow(policy:): a bufferingOldest limit must be 1 or greater, got \(limit)")
    }
    return AsyncBufferFlowSequence(base: self, policy: policy)
  }
}

/// The sequence made by ``_Concurrency/AsyncSequence/bufferFlow(policy:)``: the upstream, pulled
/// ahead of the consumer into a buffer.
///
/// ```swift
/// let readings: AsyncBufferFlowSequence<Flow<Double, Never>> = sensor.bufferFlow(policy: .bufferingNewest(10))
/// ```
public struct AsyncBufferFlowSequence<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable
where Base.Element: Sendable {
  /// The upstream's element.
  ///
  /// ```swift
  /// for await reading in readings { chart.append(reading) }
  /// ```
  public typealias Element = Base.Element
  /// The upstream's failure, delivered after the buffered elements.
  ///
  /// ```swift
  /// for try await reading in readings { chart.append(reading) }
  /// ```
  public typealias Failure = Base.Failure
  // The upstream is pumped by the machinery of the time operators, with a logic that never sets a
  // deadline: one pure life-cycle machine, tested once, for every operator that pulls ahead.
  typealias Logic = BufferStateMachine<Element, Failure, ContinuousClock.Instant>

  let base: Base
  let policy: FlowBufferingPolicy

  /// Starts an iteration: its task starts at the first `next()`.
  ///
  /// ```swift
  /// var iterator = readings.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(
      consumer: TimedConsumer(TimedStorage(machine: Logic(policy: policy), base: base, clock: ContinuousClock())))
  }

  /// The iterator of an ``AsyncBufferFlowSequence``. Releasing it ends its iteration's task.
  ///
  /// ```swift
  /// var iterator = readings.makeAsyncIterator()
  /// while let reading = await iterator.next() { chart.append(reading) }
  /// ```
  public struct Iterator: AsyncIteratorProtocol {
    private let consumer: TimedConsumer<Logic, Base, ContinuousClock>

    init(consumer: TimedConsumer<Logic, Base, ContinuousClock>) {
      self.consumer = consumer
    }

    /// The oldest buffered element, `nil` at the finish or once the consumer's task is cancelled.
    ///
    /// ```swift
    /// let reading = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await consumer.next(isolation: actor)
    }

    /// The oldest buffered element; see ``next(isolation:)``.
    ///
    /// ```swift
    /// let reading = try await iterator.next()
    /// ```
    public mutating func next() async throws(Failure) -> Element? {
      try await consumer.next(isolation: nil)
    }
  }
}

@available(*, unavailable)
extension AsyncBufferFlowSequence.Iterator: Sendable {}

/// `bufferFlow`: every upstream element goes into the buffer as the policy says; the end waits
/// behind what the buffer holds.
struct BufferStateMachine<Element: Sendable, Failure: Error, Instant: InstantProtocol>: TimedStateMachine, Sendable {
  typealias UpstreamFailure = Failure

  private let policy: FlowBufferingPolicy
  private var buffer = RingBuffer<Element>()
  private var ending = Ending.upstreamRunning

  /// The upstream's end is delivered once the buffer is empty, and only once.
  private enum Ending {
    case upstreamRunning
    /// The upstream ended (`nil`: it finished); not delivered yet.
    case ended(Failure?)
    case delivered
  }

  init(policy: FlowBufferingPolicy) {
    self.policy = policy
  }

  mutating func start(at now: Instant) {}

  /// Never holds the upstream back: a full bounded buffer drops an element (the oldest, or this
  /// one) and keeps pulling. Returns the dropped one, to be released after the lock.
  mutating func upstreamElement(_ element: Element, at now: Instant) -> Element? {
    switch policy.storage {
    case .unbounded:
      buffer.append(element)
      return nil
    case .newest(let limit):
      // `bufferFlow(policy:)` checked `limit >= 1`: the buffer holds at most `limit`.
      let dropped = buffer.count >= limit ? buffer.popFirst() : nil
      buffer.append(element)
      return dropped
    case .oldest(let limit):
      guard buffer.count < limit else { return element }
      buffer.append(element)
      return nil
    }
  }

  mutating func upstreamEnded(_ failure: Failure?, at now: Instant) -> Element? {
    ending = .ended(failure)
    return nil
  }

  mutating func timerFired(at now: Instant) -> Element? { nil }

  var deadline: Instant? { nil }
  var wantsUpstream: Bool { !isEnding }
  var hasOutput: Bool {
    if case .ended = ending { return true }
    return !buffer.isEmpty
  }
  // The upstream is over once its end arrived: what the buffer holds still comes first.
  var isEnding: Bool {
    if case .upstreamRunning = ending { return false }
    return true
  }

  mutating func nextOutput(at now: Instant) -> TimedOutput<Element, Failure>? {
    if let element = buffer.popFirst() { return .element(element) }
    guard case .ended(let failure) = ending else { return nil }
    ending = .delivered
    return .end(failure)
  }
}
