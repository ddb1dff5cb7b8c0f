// Three signatures for the four failure combinations, in the order the type checker tries them:
// see the note above `switchToLatestFlow(_:)` in AsyncSwitchToLatestFlowSequence.swift.
extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// All run: maps each element to an inner sequence and delivers the elements of every inner as
  /// they come, with at most `maxConcurrent` inners running at once. For an outer sequence that
  /// cannot fail: the result fails like the inners, and the first inner failure ends it and
  /// cancels the rest. See ``AsyncMergeFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// let edits = PassthroughFlow<[Item], Never>()  // batches of edited items, up to 2 uploading at once
  /// let uploads = edits.mergeFlow(maxConcurrent: 2) { batch in
  ///   Flow.single { () throws(APIError) in try await api.upload(batch) }  // Failure == APIError
  /// }
  /// let ids = Flow.sequence([1, 2, 3])  // the visible rows' ids
  /// let items = ids.mergeFlow(maxConcurrent: 3) { id in Flow.single { await api.item(id) } }  // Failure == Never
  /// for await item in items { print(item?.title ?? "deleted") }
  /// ```
  ///
  /// - Parameters:
  ///   - maxConcurrent: How many inners may run at once; 1 or greater (1 is
  ///     ``_Concurrency/AsyncSequence/concatFlow(_:)``). Besides, a new inner starts only
  ///     while the consumer is behind fewer than 16 inners (or `maxConcurrent`, if above 16): see
  ///     ``AsyncMergeFlowSequence``.
  ///   - transform: Makes the inner sequence for an element.
  @inlinable public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncMergeFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == any Error {
  /// All run (up to `maxConcurrent` at once), for an outer sequence that fails with `any Error`:
  /// the inners may fail with any error, or not at all, and the first failure ends the result and
  /// cancels every inner. See ``AsyncMergeFlowSequence``.
  ///
  /// ```swift
  /// let changedRows = PassthroughFlow<Int, any Error>()  // ids of the rows the server changed
  /// let items = changedRows.mergeFlow(maxConcurrent: 4) { id in
  ///   Flow<Item?, Never>.single { await api.item(id) }  // cannot fail
  /// }  // Failure == any Error
  /// ```
  ///
  /// - Parameters:
  ///   - maxConcurrent: How many inners may run at once; 1 or greater. A consumer behind 16 inners
  ///     (or `maxConcurrent`, if above 16) holds new ones back: see ``AsyncMergeFlowSequence``.
  ///   - transform: Makes the inner sequence for an element.
  @inlinable public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncMergeFlowSequence<Self, Inner, any Error> where Inner.Element: Sendable {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// All run (up to `maxConcurrent` at once), for an outer and inner sequences that fail with the
  /// same type: the first failure of the outer or of any inner ends the result with it and cancels
  /// the rest. An inner made by a `Flow` factory takes the outer's failure type; give one that
  /// cannot fail the outer's with `setFailureType(to:)`. See ``AsyncMergeFlowSequence``.
  ///
  /// ```swift
  /// // up to 4 batches of rows uploading at once; api.rows() fails with APIError too
  /// let batchUploads = api.rows().mergeFlow(maxConcurrent: 4) { rows in
  ///   Flow.single { () throws(APIError) in try await api.upload(rows) }
  /// }
  /// let changed = PassthroughFlow<Int, APIError>()  // ids of the rows the server changed
  /// let changedItems = changed.mergeFlow(maxConcurrent: 4) { id in Flow.single { await api.item(id) } }  // APIError
  /// ```
  ///
  /// - Parameters:
  ///   - maxConcurrent: How many inners may run at once; 1 or greater. A consumer behind 16 inners
  ///     (or `maxConcurrent`, if above 16) holds new ones back: see ``AsyncMergeFlowSequence``.
  ///   - transform: Makes the inner sequence for an element.
  @_disfavoredOverload
  @inlinable public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncMergeFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// All run (up to `maxConcurrent` at once), for inner sequences that cannot fail under an outer
  /// that fails with a type of its own: the result fails only with the outer's failure, which
  /// cancels every inner. See ``AsyncMergeFlowSequence``.
  ///
  /// ```swift
  /// let changedIDs = PassthroughFlow<Int, APIError>()  // ids of the rows the server changed
  /// let rows = changedIDs.mergeFlow(maxConcurrent: 4) { id in Flow<Item?, Never>.single { await api.item(id) } }
  /// ```
  ///
  /// - Parameters:
  ///   - maxConcurrent: How many inners may run at once; 1 or greater. A consumer behind 16 inners
  ///     (or `maxConcurrent`, if above 16) holds new ones back: see ``AsyncMergeFlowSequence``.
  ///   - transform: Makes the inner sequence for an element.
  @_disfavoredOverload
  @inlinable public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncMergeFlowSequence<Self, Inner, Failure>
  where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: { $0 }, innerFailure: absurd)
  }
}

/// The sequence ``_Concurrency/AsyncSequence/mergeFlow(maxConcurrent:_:)`` returns: the
/// elements of up to `maxConcurrent` inner sequences at once, as they come.
///
/// - Each element of the base is mapped to an inner sequence, which runs in a task of its own and
///   is pulled on demand; its elements reach the consumer in its own order, interleaved with the
///   other inners' as they arrive.
/// - While `maxConcurrent` inners run, the rest wait in the base's order.
/// - A slow consumer holds the base back: a new inner starts only while the consumer is behind
///   fewer than 16 inners (`maxConcurrent` instead, if it is above 16). It is behind an inner from
///   the inner's start until it has taken all the inner offered, and whenever the inner holds
///   elements (an ended one until its last is taken); the inners of the batch its iterator took
///   last count until it asks again. So behind a stalled consumer at most 16 inners start, holding
///   at most 64 elements each, plus 64 in each inner it had caught up with that still runs. With
///   the default `maxConcurrent`, give a limit to run more than 16 quiet, long-lived inners at once.
/// - The first failure, of the base or of an inner, ends the sequence with it and cancels
///   everything else; it finishes when the base and every inner have finished.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended.
///
/// ```swift
/// let ids = Flow.sequence([1, 2, 3])  // the visible rows' ids
/// let items: AsyncMergeFlowSequence<Flow<Int, Never>, Flow<Item?, Never>, Never> =
///   ids.mergeFlow(maxConcurrent: 4) { id in Flow.single { await api.item(id) } }
/// for await item in items { print(item?.title ?? "deleted") }
/// ```
public typealias AsyncMergeFlowSequence<
  Base: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Failure: Error
> =
  AsyncFlattenFlowSequence<Base, _FlattenFlowKind.SingleKey, Inner, Failure, _FlattenFlowKind.Merge>
where Base.Element: Sendable, Inner.Element: Sendable
