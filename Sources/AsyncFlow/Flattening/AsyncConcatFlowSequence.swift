// Three signatures for the four failure combinations, in the order the type checker tries them:
// see the note above `switchToLatestFlow(_:)` in AsyncSwitchToLatestFlowSequence.swift.
extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == Never {
  /// One after another: maps each element to an inner sequence and runs the inners in order, each after the
  /// previous one finished; none is dropped. For an outer sequence that cannot fail: the result fails like the
  /// inners (with their failure, or never). See ``AsyncConcatFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// let queued = PassthroughFlow<[Item], Never>()  // batches of edited items, to save in order
  /// let uploads = queued.concatFlow { batch in Flow.single { () throws(APIError) in try await api.upload(batch) } }
  /// for await item in queued.concatFlow({ batch in Flow.sequence(batch) }) { print(item.title) }  // cannot fail
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @inlinable public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncConcatFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == any Error {
  /// One after another (each inner after the previous one finished), for an outer sequence that fails with
  /// `any Error`: the inners may fail with any error, or not at all. See ``AsyncConcatFlowSequence``.
  ///
  /// ```swift
  /// let pages = PassthroughFlow<[Item], any Error>()  // pages of a feed, as they load
  /// let feedItems = pages.concatFlow { page in Flow<Item, Never>.sequence(page) }  // Failure == any Error
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @inlinable public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncConcatFlowSequence<Self, Inner, any Error> where Inner.Element: Sendable {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable {
  /// One after another (each inner after the previous one finished), for an outer and inner sequences that fail
  /// with the same type: the first failure of either ends the result with it. An inner made by a `Flow` factory
  /// takes the outer's failure type; give one that cannot fail the outer's with `setFailureType(to:)`. See
  /// ``AsyncConcatFlowSequence``.
  ///
  /// ```swift
  /// // each batch of rows uploaded after the previous one, in order; api.rows() fails with APIError too
  /// let uploads = api.rows().concatFlow { rows in Flow.single { () throws(APIError) in try await api.upload(rows) } }
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @_disfavoredOverload
  @inlinable public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncConcatFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// One after another (each inner after the previous one finished), for inner sequences that cannot fail under
  /// an outer that fails with a type of its own: the result fails only with the outer's failure, which cancels
  /// the running inner. See ``AsyncConcatFlowSequence``.
  ///
  /// ```swift
  /// let items = api.rows().concatFlow { rows in Flow.sequence(rows) }  // each item in order; Failure == APIError
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @_disfavoredOverload
  @inlinable public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncConcatFlowSequence<Self, Inner, Failure>
  where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: { $0 }, innerFailure: absurd)
  }
}

/// The sequence ``_Concurrency/AsyncSequence/concatFlow(_:)`` returns: the elements of each
/// inner sequence in turn, in the base's order.
///
/// - Each element of the base is mapped to an inner sequence; an inner starts when the previous one
///   has finished, so none is dropped and their elements never interleave.
/// - The first failure, of the base or of an inner, ends the sequence with it and cancels the
///   running inner; it finishes when the base and the last inner have finished.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended.
///
/// ```swift
/// let queued = PassthroughFlow<[Item], Never>()  // batches of items to show, in order
/// let items: AsyncConcatFlowSequence<PassthroughFlow<[Item], Never>, Flow<Item, Never>, Never> =
///   queued.concatFlow { batch in Flow.sequence(batch) }
/// for await item in items { print(item.title) }
/// ```
public typealias AsyncConcatFlowSequence<
  Base: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Failure: Error
> =
  AsyncFlattenFlowSequence<Base, _FlattenFlowKind.SingleKey, Inner, Failure, _FlattenFlowKind.Concat>
where Base.Element: Sendable, Inner.Element: Sendable
