extension AsyncSequence {
  /// Replaces the failed remainder of this sequence with the sequence `handler` returns.
  ///
  /// Elements delivered before the failure are kept; after a failure the sequence ends when the
  /// fallback ends, as with Combine's `catch`. To keep a long-lived stream alive across failures,
  /// catch inside each inner sequence with ``_Concurrency/AsyncSequence/catchInner(_:)`` or turn
  /// failures into values with ``asLoadState()``.
  ///
  /// ```swift
  /// let results = api.search("swift").catch { _ in Flow.just([Item]()) }  // never fails
  /// ```
  public func `catch`<Fallback: AsyncSequence>(
    _ handler: @escaping @Sendable (Failure) -> Fallback
  ) -> AsyncCatchSequence<Self, Fallback> where Fallback.Element == Element {
    AsyncCatchSequence(base: self, handler: handler)
  }
}

/// A sequence that continues with a fallback sequence when its base fails; made by
/// ``_Concurrency/AsyncSequence/catch(_:)``.
///
/// ```swift
/// let sequence: AsyncCatchSequence<Flow<Int, AppError>, Flow<Int, Never>> =
///   Flow<Int, AppError>.fail(.offline).catch { _ in Flow.just(0) }
/// ```
public struct AsyncCatchSequence<Base: AsyncSequence, Fallback: AsyncSequence>: AsyncSequence
where Fallback.Element == Base.Element {
  /// The elements it delivers: `Base.Element`.
  public typealias Element = Base.Element
  /// How it can fail: `Fallback.Failure`.
  public typealias Failure = Fallback.Failure

  let base: Base
  let handler: @Sendable (Base.Failure) -> Fallback

  /// Makes an iterator that runs the base, then the fallback if the base fails.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator(), handler: handler)
  }

  /// The iterator of an ``AsyncCatchSequence``.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// while let element = try await iterator.next(isolation: #isolation) { print(element) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncCatchSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncCatchSequence.Failure

    var base: Base.AsyncIterator?
    var fallback: Fallback.AsyncIterator?
    let handler: @Sendable (Base.Failure) -> Fallback

    /// Returns the next element of the base, or of the fallback once the base has failed.
    ///
    /// ```swift
    /// let element = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      if Task.isCancelled {
        await base.end(isolation: actor)
        await fallback.end(isolation: actor)
        return nil
      }
      if base != nil {
        do throws(Base.Failure) {
          return try await base.nextOrRelease(isolation: actor)
        } catch {
          // A failure caused by the consumer's own cancellation is not something to recover from.
          if Task.isCancelled { return nil }
          fallback = handler(error).makeAsyncIterator()
        }
      }
      return try await fallback.nextOrRelease(isolation: actor)
    }

    /// Ends what the iterator holds; every step returns `nil` after it.
    ///
    /// ```swift
    /// await iterator._end(isolation: #isolation)
    /// ```
    public mutating func _end(isolation actor: isolated (any Actor)?) async {
      await base.end(isolation: actor)
      await fallback.end(isolation: actor)
    }
  }
}

extension AsyncCatchSequence: Sendable where Base: Sendable {}

@available(*, unavailable)
extension AsyncCatchSequence.Iterator: Sendable {}
