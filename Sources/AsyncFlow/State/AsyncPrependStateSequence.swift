extension AsyncSequence {
  /// Delivers `element` first, then the elements of this sequence.
  ///
  /// ```swift
  /// let states = api.search("swift").map { LoadState<[Item], Never>.loaded($0) }.prependState(.loading)
  /// ```
  public func prependState(_ element: Element) -> AsyncPrependStateSequence<Self> {
    AsyncPrependStateSequence(base: self, first: element)
  }

  /// Delivers `.loading` first, then the load states of this sequence.
  ///
  /// ```swift
  /// let cachedStates = Flow<LoadState<[Item], AppError>, Never>.just(.loaded([]))
  /// let states = cachedStates.prependState()  // .loading, then whatever cachedStates says
  /// ```
  public func prependState<Value, LoadFailure: Error>() -> AsyncPrependStateSequence<Self>
  where Element == LoadState<Value, LoadFailure> {
    prependState(.loading)
  }
}

/// A sequence that delivers one element before its base; made by
/// ``_Concurrency/AsyncSequence/prependState(_:)``.
///
/// ```swift
/// let sequence: AsyncPrependStateSequence<Flow<Int, Never>> = Flow.sequence([2, 3]).prependState(1)
/// ```
public struct AsyncPrependStateSequence<Base: AsyncSequence>: AsyncSequence {
  /// The elements it delivers: `Base.Element`.
  public typealias Element = Base.Element
  /// How it can fail: `Base.Failure`.
  public typealias Failure = Base.Failure

  let base: Base
  let first: Element

  /// Makes an iterator that delivers the first element, then the base.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator(), first: first)
  }

  /// The iterator of an ``AsyncPrependStateSequence``.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// while let element = try await iterator.next(isolation: #isolation) { print(element) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncPrependStateSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncPrependStateSequence.Failure

    var base: Base.AsyncIterator?
    var first: Element?

    /// Returns the prepended element first, then the base's elements.
    ///
    /// ```swift
    /// let element = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      // Once cancelled, not even the prepended element is delivered.
      if !Task.isCancelled, let first = first.take() { return first }
      return try await base.nextUnlessCancelled(isolation: actor)
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

extension AsyncPrependStateSequence: Sendable where Base: Sendable, Base.Element: Sendable {}

@available(*, unavailable)
extension AsyncPrependStateSequence.Iterator: Sendable {}
