extension AsyncSequence where Element: Equatable & Sendable {
  /// Drops an element equal to the previous one delivered: Combine's `removeDuplicates`. For a
  /// search field, a query typed again after a pause does not search again.
  ///
  /// ```swift
  /// let field = Flow<String, Never>.sequence(["sw", "sw", "swi"])  // what a text field sends
  /// let queries = field.removeDuplicatesFlow()  // "sw", "swi"
  /// ```
  public func removeDuplicatesFlow() -> AsyncRemoveDuplicatesFlowSequence<Self> {
    AsyncRemoveDuplicatesFlowSequence(base: self, areEqual: { $0 == $1 })
  }
}

extension AsyncSequence {
  /// Drops an element that `areEqual` finds equal to the previous one delivered.
  ///
  /// ```swift
  /// let positions = Flow.sequence([0.0, 0.5, 2.0])  // a slider's positions
  /// let moves = positions.removeDuplicatesFlow { abs($0 - $1) < 1 }  // 0.0, 2.0
  /// ```
  ///
  /// - Parameter areEqual: Whether an element (second) repeats the previous one delivered (first).
  public func removeDuplicatesFlow(
    by areEqual: @escaping @Sendable (Element, Element) -> Bool
  ) -> AsyncRemoveDuplicatesFlowSequence<Self> {
    AsyncRemoveDuplicatesFlowSequence(base: self, areEqual: areEqual)
  }
}

/// A sequence without consecutive repeats; made by
/// ``_Concurrency/AsyncSequence/removeDuplicatesFlow()`` and
/// ``_Concurrency/AsyncSequence/removeDuplicatesFlow(by:)``.
///
/// ```swift
/// let distinct: AsyncRemoveDuplicatesFlowSequence<Flow<Int, Never>> = Flow.sequence([1, 1, 2, 1]).removeDuplicatesFlow()
/// // 1, 2, 1
/// ```
public struct AsyncRemoveDuplicatesFlowSequence<Base: AsyncSequence>: AsyncSequence {
  /// The elements it delivers: `Base.Element`.
  public typealias Element = Base.Element
  /// How it can fail: `Base.Failure`.
  public typealias Failure = Base.Failure

  let base: Base
  let areEqual: @Sendable (Element, Element) -> Bool

  /// Starts an iteration: its first element is always delivered.
  ///
  /// ```swift
  /// var iterator = distinct.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator(), areEqual: areEqual)
  }

  /// The iterator of an ``AsyncRemoveDuplicatesFlowSequence``.
  ///
  /// ```swift
  /// var iterator = distinct.makeAsyncIterator()
  /// while let value = await iterator.next() { print(value) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncRemoveDuplicatesFlowSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncRemoveDuplicatesFlowSequence.Failure

    var base: Base.AsyncIterator?
    var previous: Element?
    let areEqual: @Sendable (Element, Element) -> Bool

    /// The base's next element that does not repeat the previous one delivered, or `nil` at its end.
    ///
    /// ```swift
    /// let value = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      while let element = try await base.nextOrRelease(isolation: actor) {
        if let previous, areEqual(previous, element) { continue }
        previous = element
        return element
      }
      return nil
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

extension AsyncRemoveDuplicatesFlowSequence: Sendable where Base: Sendable {}

@available(*, unavailable)
extension AsyncRemoveDuplicatesFlowSequence.Iterator: Sendable {}
