extension AsyncSequence {
  /// Delivers every running result of combining the elements with `next`, starting from
  /// `initial`: Combine's `scan`. Nothing is delivered for `initial` itself; a failure of the base,
  /// or of `next`, ends the sequence with it.
  ///
  /// ```swift
  /// let amounts = Flow<Int, Never>.sequence([5, 7, 8])  // what each purchase cost
  /// let totals = amounts.scanFlow(0) { total, amount in total + amount }  // 5, 12, 20
  /// ```
  ///
  /// - Parameters:
  ///   - initial: The result before the first element.
  ///   - next: Combines the result so far with the next element.
  public func scanFlow<Result>(
    _ initial: Result, _ next: @escaping @Sendable (Result, Element) throws(Failure) -> Result
  ) -> AsyncScanFlowSequence<Self, Result> {
    AsyncScanFlowSequence(base: self, initial: initial, next: next)
  }
}

/// The running results of combining a sequence's elements; made by
/// ``_Concurrency/AsyncSequence/scanFlow(_:_:)``.
///
/// ```swift
/// let totals: AsyncScanFlowSequence<Flow<Int, Never>, Int> = Flow.sequence([1, 2, 3]).scanFlow(0, +)  // 1, 3, 6
/// ```
public struct AsyncScanFlowSequence<Base: AsyncSequence, Result>: AsyncSequence {
  /// The elements it delivers: `Result`.
  public typealias Element = Result
  /// How it can fail: `Base.Failure`.
  public typealias Failure = Base.Failure

  let base: Base
  let initial: Result
  let next: @Sendable (Result, Base.Element) throws(Base.Failure) -> Result

  /// Starts an iteration from the initial result.
  ///
  /// ```swift
  /// var iterator = totals.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator(), result: initial, next: next)
  }

  /// The iterator of an ``AsyncScanFlowSequence``.
  ///
  /// ```swift
  /// var iterator = totals.makeAsyncIterator()
  /// while let total = await iterator.next() { print(total) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncScanFlowSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncScanFlowSequence.Failure

    var base: Base.AsyncIterator?
    var result: Result
    let next: @Sendable (Result, Base.Element) throws(Base.Failure) -> Result

    /// The running result after the base's next element, or `nil` at its end.
    ///
    /// ```swift
    /// let total = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(Failure) -> Result? {
      guard let element = try await base.nextOrRelease(isolation: actor) else { return nil }
      // A failure of `next` ends the base (`_end`) before it goes on; the scan is over then.
      result = try next(result, element)
      return result
    }

    /// Ends what the iterator holds; every step returns `nil` after it.
    ///
    /// ```swift
    /// await iterator._end(isolation: #isolation)
    /// ```
    public mutating func _end(isolation actor: isolated (any Actor)?) async {
      await base.end(isolation: actor)
    }
  }
}

extension AsyncScanFlowSequence: Sendable where Base: Sendable, Result: Sendable {}

@available(*, unavailable)
extension AsyncScanFlowSequence.Iterator: Sendable {}
