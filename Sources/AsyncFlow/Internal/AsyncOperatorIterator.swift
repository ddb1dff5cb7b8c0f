/// The iterator of the operators that run a task for their consumer: `debounceFlow`,
/// `throttleFlow`, `delayFlow`, `timeoutFlow`, `sampleFlow`, `collectFlow(every:)` and
/// `bufferFlow`, each of which names it `Iterator`. Releasing it ends its iteration's task.
///
/// ```swift
/// let keystrokes = PassthroughFlow<String, Never>()  // the search field's text, as typed
/// var iterator = keystrokes.debounceFlow(for: .milliseconds(300)).makeAsyncIterator()
/// while let query = await iterator.next() { print(query) }
/// ```
public struct AsyncOperatorIterator<Element, Failure: Error>: AsyncIteratorProtocol {
  @usableFromInline
  let consumer: OperatorConsumer<Element, Failure>

  /// The next output, `nil` at the finish or once the consumer's task is cancelled; throws the
  /// operator's failure.
  ///
  /// ```swift
  /// let query = try await iterator.next(isolation: #isolation)
  /// ```
  @inlinable
  public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    try await consumer.next(isolation: actor)
  }

  /// The next output; see ``next(isolation:)``.
  ///
  /// ```swift
  /// let query = try await iterator.next()
  /// ```
  @inlinable
  public mutating func next() async throws(Failure) -> Element? {
    try await consumer.next(isolation: nil)
  }

  /// How many upstream elements this iteration let go of without delivering them: for
  /// `bufferFlow`, what its bounded policy dropped (the oldest displaced, or the new one refused);
  /// for the operators that drop by design, the elements they skipped (a `debounceFlow`'s or a
  /// `sampleFlow`'s superseded ones, a `throttleFlow`'s). The count so far, and the final one after
  /// the end. Each element the upstream produced while the iteration ran was either received or
  /// counted here.
  ///
  /// ```swift
  /// var readings = Flow.sequence([20.5, 20.7, 20.9]).bufferFlow(policy: .bufferingNewest(1)).makeAsyncIterator()
  /// var chart: [Double] = []
  /// while let reading = await readings.next() { chart.append(reading) }
  /// print(readings.droppedCount)   // the readings the chart never showed
  /// ```
  public var droppedCount: Int {
    consumer.drops.droppedCount
  }
}

@available(*, unavailable)
extension AsyncOperatorIterator: Sendable {}

extension AsyncOperatorIterator {
  /// An iterator whose task pulls `base` into `logic`, measuring time on `clock`.
  @inlinable
  init<Logic: OperatorLogic, Base: AsyncSequence & Sendable, C: Clock>(
    _ logic: Logic, pulling base: Base, clock: C, onDrop: (@Sendable (Int) -> Void)? = nil
  )
  where
    Logic.Output == Element, Logic.Failure == Failure, Logic.Element == Base.Element,
    Logic.InputFailure == Base.Failure, C.Instant == Logic.Instant
  {
    consumer = OperatorConsumer(
      OperatorStorage(logic: logic, clock: clock, onDrop: onDrop), inputs: [OperatorStorage.pulling(base)])
  }
}
