extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// All run: maps each element to an inner sequence and delivers the elements of every inner as
  /// they come, with at most `maxConcurrent` inners running at once. For an outer and inner
  /// sequences that fail with the same type: the first failure of the outer or of any inner ends
  /// the result with it and cancels the rest. See ``AsyncMergeFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// // up to 4 batches of rows uploading at once; api.rows() fails with APIError too
  /// let uploads = api.rows().mergeFlow(maxConcurrent: 4) { rows in
  ///   Flow.single { () throws(APIError) in try await api.upload(rows) }
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - maxConcurrent: How many inners may run at once; 1 or greater (1 is
  ///     ``_Concurrency/AsyncSequence/concatFlow(_:)-1w77b``). Besides, a new inner starts only
  ///     while the consumer is behind fewer than 16 inners (or `maxConcurrent`, if above 16): see
  ///     ``AsyncMergeFlowSequence``.
  ///   - transform: Makes the inner sequence for an element.
  @inlinable public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncMergeFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// All run (up to `maxConcurrent` at once), for inner sequences that cannot fail: the result fails
  /// only with the outer's failure, which cancels every inner. See ``AsyncMergeFlowSequence``.
  ///
  /// ```swift
  /// let changed = PassthroughFlow<Int, APIError>()  // ids of the rows the server changed
  /// let items = changed.mergeFlow(maxConcurrent: 4) { id in Flow.single { await api.item(id) } }  // APIError
  /// ```
  ///
  /// - Parameters:
  ///   - maxConcurrent: How many inners may run at once; 1 or greater. A consumer behind 16 inners
  ///     (or `maxConcurrent`, if above 16) holds new ones back: see ``AsyncMergeFlowSequence``.
  ///   - transform: Makes the inner sequence for an element.
  @inlinable public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncMergeFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: { $0 }, innerFailure: absurd)
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// All run (up to `maxConcurrent` at once), for an outer sequence that cannot fail: the result
  /// fails with the first inner failure, which cancels the other inners. See ``AsyncMergeFlowSequence``.
  ///
  /// ```swift
  /// let edits = PassthroughFlow<[Item], Never>()  // batches of edited items, up to 2 uploading at once
  /// let uploads = edits.mergeFlow(maxConcurrent: 2) { batch in
  ///   Flow.single { () throws(APIError) in try await api.upload(batch) }  // Failure == APIError
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - maxConcurrent: How many inners may run at once; 1 or greater. A consumer behind 16 inners
  ///     (or `maxConcurrent`, if above 16) holds new ones back: see ``AsyncMergeFlowSequence``.
  ///   - transform: Makes the inner sequence for an element.
  @inlinable public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncMergeFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: absurd, innerFailure: { $0 })
  }

  /// All run (up to `maxConcurrent` at once), for an outer and inner sequences that cannot fail:
  /// neither can the result. See ``AsyncMergeFlowSequence``.
  ///
  /// ```swift
  /// let ids = Flow.sequence([1, 2, 3])  // the visible rows' ids
  /// let items = ids.mergeFlow(maxConcurrent: 3) { id in Flow.single { await api.item(id) } }  // as each arrives
  /// for await item in items { print(item?.title ?? "deleted") }
  /// ```
  ///
  /// - Parameters:
  ///   - maxConcurrent: How many inners may run at once; 1 or greater. A consumer behind 16 inners
  ///     (or `maxConcurrent`, if above 16) holds new ones back: see ``AsyncMergeFlowSequence``.
  ///   - transform: Makes the inner sequence for an element.
  @inlinable public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncMergeFlowSequence<Self, Inner, Never> where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: absurd, innerFailure: absurd)
  }
}

/// The sequence ``_Concurrency/AsyncSequence/mergeFlow(maxConcurrent:_:)-6qlun`` returns: the
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
