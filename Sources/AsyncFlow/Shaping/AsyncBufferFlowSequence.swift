extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Decouples a fast producer from a slow consumer: the upstream is pulled in a task of its own,
  /// as fast as it produces, into a buffer that keeps what `policy` says until the consumer takes
  /// it. `.unbounded` loses nothing (and holds the whole backlog); `.bufferingNewest(n)` drops the
  /// oldest element when `n` wait, `.bufferingOldest(n)` drops the new one, and counts it: the
  /// iterator's `droppedCount` (``AsyncOperatorIterator/droppedCount``), and a policy made with
  /// ``FlowBufferingPolicy/onDrop(_:)`` is told of each drop as it happens. The upstream's finish
  /// or failure comes after the buffered elements: nothing the buffer holds is lost to it.
  ///
  /// ```swift
  /// struct Sensor: Sendable { func readings() -> Flow<Double, Never> { .sequence([20.5, 20.7]) } }
  /// let sensor = Sensor()  // a thermometer
  /// var chart: [Double] = []
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
/// let readings: AsyncBufferFlowSequence<Flow<Double, Never>> =
///   sensor.readings().bufferFlow(policy: .bufferingNewest(10))
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
  // The upstream is pulled by the one operator life cycle, with a logic that measures no time.
  @usableFromInline
  typealias Logic = BufferLogic<Element, Failure>

  @usableFromInline
  let base: Base
  @usableFromInline
  let policy: FlowBufferingPolicy

  /// Starts an iteration: its task starts at the first `next()`.
  ///
  /// ```swift
  /// var iterator = readings.makeAsyncIterator()
  /// ```
  @inlinable
  public func makeAsyncIterator() -> Iterator {
    Iterator(Logic(policy: policy, isPulled: true), pulling: base, clock: TimelessClock(), onDrop: policy.dropHandler)
  }

  /// The iterator of an ``AsyncBufferFlowSequence``: releasing it ends its iteration's task.
  ///
  /// ```swift
  /// var iterator = readings.makeAsyncIterator()
  /// while let reading = await iterator.next() { chart.append(reading) }
  /// ```
  public typealias Iterator = AsyncOperatorIterator<Element, Failure>
}

/// `bufferFlow` and `Flow.callbacks`: every input element goes into the buffer as the policy says;
/// the end waits behind what the buffer holds. Measures no time.
@usableFromInline
struct BufferLogic<Element: Sendable, Failure: Error>: TimelessOperatorLogic {
  @usableFromInline
  typealias InputFailure = Failure

  @usableFromInline
  let policy: FlowBufferingPolicy
  /// Whether the input is pulled (`bufferFlow`); `Flow.callbacks`' input pushes, and its task
  /// waits for the end.
  @usableFromInline
  let isPulled: Bool
  @usableFromInline
  var buffer = RingBuffer<Element>()
  /// The input's end, delivered once the buffer is empty.
  @usableFromInline
  var end = PendingEnd<Failure>.notYet

  @inlinable
  init(policy: FlowBufferingPolicy, isPulled: Bool) {
    self.policy = policy
    self.isPulled = isPulled
  }

  /// Never holds the input back: a full bounded buffer drops an element (the oldest, or this
  /// one) and keeps pulling. `bufferingNewest(0)` (allowed for `Flow.callbacks`) keeps nothing.
  @inlinable
  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element> {
    switch policy.storage {
    case .unbounded:
      buffer.append(element)
      return .kept
    case .newest(let limit):
      guard limit > 0 else { return .refused(element) }
      // The buffer never holds more than `limit`, so one element at most gives way.
      let dropped = buffer.count >= limit ? buffer.popFirst() : nil
      buffer.append(element)
      return dropped.map { .keptDisplacing($0) } ?? .kept
    case .oldest(let limit):
      guard buffer.count < limit else { return .refused(element) }
      buffer.append(element)
      return .kept
    }
  }

  @inlinable
  mutating func inputEnded(_ failure: Failure?, from _: Int, at now: Instant) -> Element? {
    end.end(failure)
    return nil
  }

  @inlinable
  var wantsInput: Bool { isPulled && !isEnding }
  @inlinable
  var hasOutput: Bool { end.isWaiting || !buffer.isEmpty }
  // The input is over once its end arrived: what the buffer holds still comes first.
  @inlinable
  var isEnding: Bool { end.isKnown }

  @inlinable
  mutating func nextOutput(at now: Instant) -> OperatorOutput<Element, Failure>? {
    if let element = buffer.popFirst() { return .element(element) }
    return end.deliver()
  }
}
