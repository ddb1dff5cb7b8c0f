extension AsyncSequence {
  /// Turns every event into an element: each element, then `.finished` or `.failed(error)` as
  /// the last one. The result cannot fail, so a failure can be logged, counted or stored like any
  /// value; ``dematerialize()`` turns the events back.
  ///
  /// A cancelled consumer gets no `.finished`: its iteration simply ends.
  ///
  /// ```swift
  /// for await event in Flow<Int, AppError>.fail(.offline).materialize() { print(event) }  // .failed(.offline)
  /// ```
  public func materialize() -> AsyncMaterializeSequence<Self> {
    AsyncMaterializeSequence(base: self)
  }
}

/// A sequence of the events of its base, which cannot fail; made by
/// ``_Concurrency/AsyncSequence/materialize()``.
///
/// ```swift
/// let events: AsyncMaterializeSequence<Flow<Int, Never>> = Flow.just(1).materialize()  // .element(1), .finished
/// ```
public struct AsyncMaterializeSequence<Base: AsyncSequence>: AsyncSequence {
  /// The elements it delivers: `FlowEvent<Base.Element, Base.Failure>`.
  public typealias Element = FlowEvent<Base.Element, Base.Failure>
  /// How it can fail: `Never`.
  public typealias Failure = Never

  let base: Base

  /// Starts an iteration.
  ///
  /// ```swift
  /// var iterator = events.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator())
  }

  /// The iterator of an ``AsyncMaterializeSequence``.
  ///
  /// ```swift
  /// var iterator = events.makeAsyncIterator()
  /// while let event = await iterator.next() { print(event) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncMaterializeSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncMaterializeSequence.Failure

    var base: Base.AsyncIterator?

    /// The next event: an element, then `.finished` or `.failed`, then `nil`.
    ///
    /// ```swift
    /// let event = await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async -> Element? {
      guard base != nil else { return nil }
      do throws(Base.Failure) {
        if let element = try await base.nextOrRelease(isolation: actor) { return .element(element) }
        // The base ended because the consumer was cancelled: that is not the base's finish.
        return Task.isCancelled ? nil : .finished
      } catch {
        return .failed(error)
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

extension AsyncMaterializeSequence: Sendable where Base: Sendable {}

@available(*, unavailable)
extension AsyncMaterializeSequence.Iterator: Sendable {}
