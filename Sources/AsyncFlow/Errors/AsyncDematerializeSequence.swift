extension AsyncSequence where Failure == Never {
  /// Turns events back into a sequence: `.element` values are delivered, `.finished` finishes and
  /// `.failed(error)` fails with `error`; the inverse of ``materialize()``. Events after the first
  /// `.finished` or `.failed` are never read.
  ///
  /// ```swift
  /// let recorded: [FlowEvent<Int, AppError>] = [.element(1), .failed(.offline)]
  /// let replayed = Flow.sequence(recorded).dematerialize()  // 1, then fails with .offline, as recorded
  /// ```
  public func dematerialize<Value, EventFailure: Error>() -> AsyncDematerializeSequence<Self, Value, EventFailure>
  where Element == FlowEvent<Value, EventFailure> {
    AsyncDematerializeSequence(base: self)
  }
}

/// The sequence that a sequence of ``FlowEvent``s describes; made by
/// ``_Concurrency/AsyncSequence/dematerialize()``.
///
/// ```swift
/// let values: AsyncDematerializeSequence<Flow<FlowEvent<Int, AppError>, Never>, Int, AppError> =
///   Flow.sequence([.element(1), .failed(.offline)]).dematerialize()  // 1, then throws .offline
/// ```
public struct AsyncDematerializeSequence<Base: AsyncSequence, Value, EventFailure: Error>: AsyncSequence
where Base.Element == FlowEvent<Value, EventFailure>, Base.Failure == Never {
  /// The elements it delivers: `Value`.
  public typealias Element = Value
  /// How it can fail: `EventFailure`.
  public typealias Failure = EventFailure

  let base: Base

  /// Starts an iteration.
  ///
  /// ```swift
  /// var iterator = values.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator())
  }

  /// The iterator of an ``AsyncDematerializeSequence``.
  ///
  /// ```swift
  /// var iterator = values.makeAsyncIterator()
  /// while let value = try await iterator.next() { print(value) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncDematerializeSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncDematerializeSequence.Failure

    var base: Base.AsyncIterator?

    /// The next `.element`'s value; `nil` at `.finished` or the base's end; throws at `.failed`.
    ///
    /// ```swift
    /// let value = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(EventFailure) -> Value? {
      switch await base.nextOrRelease(isolation: actor) {
      case .element(let value):
        return value
      case .finished, nil:
        base = nil
        return nil
      case .failed(let failure):
        base = nil
        throw failure
      }
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

extension AsyncDematerializeSequence: Sendable where Base: Sendable {}

@available(*, unavailable)
extension AsyncDematerializeSequence.Iterator: Sendable {}
