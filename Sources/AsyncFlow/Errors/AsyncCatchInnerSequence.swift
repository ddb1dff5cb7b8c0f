extension AsyncSequence where Element: AsyncSequence {
  /// Wraps every inner sequence in ``_Concurrency/AsyncSequence/catch(_:)``, so that a failing
  /// inner sequence ends with its fallback while the outer sequence goes on.
  ///
  /// This is where to catch in a search pipeline: a failed request shows its fallback, and the
  /// next keystroke still starts a new request.
  ///
  /// ```swift
  /// let terms = Flow<String, Never>.sequence(["swift", "async"])
  /// let results = terms
  ///   .map { term in api.search(term) }
  ///   .catchInner { _ in Flow.just([Item]()) }
  ///   .switchToLatestFlow()
  /// ```
  public func catchInner<Fallback: AsyncSequence>(
    _ handler: @escaping @Sendable (Element.Failure) -> Fallback
  ) -> AsyncCatchInnerSequence<Self, Fallback> where Fallback.Element == Element.Element {
    AsyncCatchInnerSequence(base: self, handler: handler)
  }
}

/// A sequence of inner sequences, each wrapped in ``AsyncCatchSequence``; made by
/// ``_Concurrency/AsyncSequence/catchInner(_:)``.
///
/// ```swift
/// let sequence = Flow.sequence(["a", "b"]).map { api.search($0) }.catchInner { _ in Flow.just([]) }
/// ```
public struct AsyncCatchInnerSequence<Base: AsyncSequence, Fallback: AsyncSequence>: AsyncSequence
where Base.Element: AsyncSequence, Fallback.Element == Base.Element.Element {
  /// The elements it delivers: `AsyncCatchSequence<Base.Element, Fallback>`.
  public typealias Element = AsyncCatchSequence<Base.Element, Fallback>
  /// How it can fail: `Base.Failure`.
  public typealias Failure = Base.Failure

  let base: Base
  let handler: @Sendable (Base.Element.Failure) -> Fallback

  /// Makes an iterator over the base's inner sequences.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator(), handler: handler)
  }

  /// The iterator of an ``AsyncCatchInnerSequence``.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// while let element = try await iterator.next(isolation: #isolation) { print(element) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncCatchInnerSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncCatchInnerSequence.Failure

    var base: Base.AsyncIterator?
    let handler: @Sendable (Base.Element.Failure) -> Fallback

    /// Returns the next inner sequence, wrapped so that its failure ends in the fallback.
    ///
    /// ```swift
    /// let element = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      guard let inner = try await base.nextUnlessCancelled(isolation: actor) else { return nil }
      return inner.catch(handler)
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

extension AsyncCatchInnerSequence: Sendable where Base: Sendable {}

@available(*, unavailable)
extension AsyncCatchInnerSequence.Iterator: Sendable {}
