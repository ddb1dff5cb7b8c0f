extension AsyncSequence {
  /// Turns this sequence's failure into another error type.
  ///
  /// ```swift
  /// let typed = api.rows().mapError { SearchError.network($0) }  // Failure == SearchError
  /// ```
  public func mapError<E: Error>(_ transform: @escaping @Sendable (Failure) -> E) -> AsyncMapErrorSequence<Self, E> {
    AsyncMapErrorSequence(base: self, transform: transform)
  }
}

/// A sequence whose failure is transformed; made by ``_Concurrency/AsyncSequence/mapError(_:)``.
///
/// ```swift
/// let sequence: AsyncMapErrorSequence<Flow<Int, APIError>, AppError> =
///   Flow<Int, APIError>.fail(.offline).mapError { _ in AppError.offline }
/// ```
public struct AsyncMapErrorSequence<Base: AsyncSequence, MappedFailure: Error>: AsyncSequence {
  /// The elements it delivers: `Base.Element`.
  public typealias Element = Base.Element
  /// How it can fail: `MappedFailure`.
  public typealias Failure = MappedFailure

  let base: Base
  let transform: @Sendable (Base.Failure) -> MappedFailure

  /// Makes an iterator over the base whose failure is transformed.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator(), transform: transform)
  }

  /// The iterator of an ``AsyncMapErrorSequence``.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// while let element = try await iterator.next(isolation: #isolation) { print(element) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncMapErrorSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncMapErrorSequence.Failure

    var base: Base.AsyncIterator?
    let transform: @Sendable (Base.Failure) -> MappedFailure

    /// Returns the next element of the base, or throws its failure transformed.
    ///
    /// ```swift
    /// let element = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(MappedFailure) -> Element? {
      do throws(Base.Failure) {
        return try await base.nextUnlessCancelled(isolation: actor)
      } catch {
        throw transform(error)
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

extension AsyncMapErrorSequence: Sendable where Base: Sendable {}

@available(*, unavailable)
extension AsyncMapErrorSequence.Iterator: Sendable {}
