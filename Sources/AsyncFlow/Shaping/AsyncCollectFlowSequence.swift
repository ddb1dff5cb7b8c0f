extension AsyncSequence {
  /// Delivers the elements in arrays of `count`: Combine's `collect(_:)`. At the base's end the
  /// last, shorter array is delivered, before the finish or before the failure: nothing collected
  /// is lost.
  ///
  /// ```swift
  /// let events = Flow<String, Never>.sequence(["tap", "scroll", "tap"])  // analytics events
  /// for try await batch in events.collectFlow(count: 50) { try await api.upload(batch) }
  /// ```
  ///
  /// - Parameter count: How many elements an array holds; 1 or greater.
  public func collectFlow(count: Int) -> AsyncCollectFlowSequence<Self> {
    precondition(count >= 1, "collectFlow(count:): count must be 1 or greater, got \(count)")
    return AsyncCollectFlowSequence(base: self, count: count)
  }
}

/// A sequence of arrays of `count` elements of its base, the last possibly shorter; made by
/// ``_Concurrency/AsyncSequence/collectFlow(count:)``.
///
/// ```swift
/// let pairs: AsyncCollectFlowSequence<Flow<Int, Never>> = Flow.sequence(1...5).collectFlow(count: 2)
/// // [1, 2], [3, 4], [5]
/// ```
public struct AsyncCollectFlowSequence<Base: AsyncSequence>: AsyncSequence {
  /// The elements it delivers: `[Base.Element]`.
  public typealias Element = [Base.Element]
  /// How it can fail: `Base.Failure`.
  public typealias Failure = Base.Failure

  let base: Base
  let count: Int

  /// Starts an iteration.
  ///
  /// ```swift
  /// var iterator = pairs.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator(), count: count)
  }

  /// The iterator of an ``AsyncCollectFlowSequence``.
  ///
  /// ```swift
  /// var iterator = pairs.makeAsyncIterator()
  /// while let pair = await iterator.next() { print(pair) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncCollectFlowSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncCollectFlowSequence.Failure

    var base: Base.AsyncIterator?
    let count: Int
    /// The base's failure, held back until the elements collected before it are delivered.
    var failure: Failure?

    /// The next full array; at the base's end, what is left (if anything), then `nil` or the
    /// base's failure.
    ///
    /// ```swift
    /// let batch = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      if let failure = failure.take() { throw failure }
      var batch: [Base.Element] = []
      do throws(Failure) {
        while batch.count < count, let element = try await base.nextOrRelease(isolation: actor) {
          batch.append(element)
        }
      } catch {
        // A failure caused by the consumer's cancellation is not reported, as nothing is after it.
        if Task.isCancelled { return nil }
        guard !batch.isEmpty else { throw error }
        failure = error
      }
      // A base that ended because the consumer was cancelled has not finished: no remainder.
      if Task.isCancelled { return nil }
      return batch.isEmpty ? nil : batch
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

extension AsyncCollectFlowSequence: Sendable where Base: Sendable {}

@available(*, unavailable)
extension AsyncCollectFlowSequence.Iterator: Sendable {}
