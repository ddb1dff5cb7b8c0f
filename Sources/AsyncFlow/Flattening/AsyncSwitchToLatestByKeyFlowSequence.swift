// Three signatures for the four failure combinations, in the order the type checker tries them:
// see the note above `switchToLatestFlow(_:)` in AsyncSwitchToLatestFlowSequence.swift.
extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == Never {
  /// Latest wins per identity: at most one inner runs per key; a new element for key K cancels only K's inner,
  /// and inners of different keys run concurrently. For an outer sequence that cannot fail: the result fails
  /// like the inners (with their failure, or never). See ``AsyncSwitchToLatestByKeyFlowSequence`` for the full
  /// rules.
  ///
  /// ```swift
  /// let edits = PassthroughFlow<Item, Never>()  // a newer edit of an item cancels that item's older save
  /// let saves = edits.switchToLatestFlow(by: \.id) { item in
  ///   Flow.single { () throws(APIError) in try await api.upload(item) }  // Failure == APIError
  /// }
  /// let states = edits.switchToLatestFlow(by: \.id) { item in  // each save caught inside: Failure == Never
  ///   Flow.single { () throws(APIError) in try await api.upload(item) }.asLoadState()
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - key: The identity of an element; a newer element replaces only the inner of its own key.
  ///   - transform: Makes the inner sequence for an element.
  @inlinable public func switchToLatestFlow<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestByKeyFlowSequence<Self, Key, Inner, Inner.Failure> where Inner.Element: Sendable {
    flattened(.latest, by: key, transform, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == any Error {
  /// Latest wins per identity (a new element for key K cancels only K's inner), for an outer sequence that fails
  /// with `any Error`: the inners may fail with any error, or not at all. See
  /// ``AsyncSwitchToLatestByKeyFlowSequence``.
  ///
  /// ```swift
  /// let reloads = PassthroughFlow<Item, any Error>()  // rows to reload; a newer reload of a row replaces its own
  /// let rows = reloads.switchToLatestFlow(by: \.id) { row in  // Failure == any Error
  ///   Flow<Item?, Never>.single { await api.item(row.id) }  // cannot fail
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - key: The identity of an element; a newer element replaces only the inner of its own key.
  ///   - transform: Makes the inner sequence for an element.
  @inlinable public func switchToLatestFlow<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestByKeyFlowSequence<Self, Key, Inner, any Error> where Inner.Element: Sendable {
    flattened(.latest, by: key, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable {
  /// Latest wins per identity (a new element for key K cancels only K's inner), for an outer and inner sequences
  /// that fail with the same type: the first failure of either ends the result with it. An inner made by a
  /// `Flow` factory takes the outer's failure type; give one that cannot fail the outer's with
  /// `setFailureType(to:)`. See ``AsyncSwitchToLatestByKeyFlowSequence``.
  ///
  /// ```swift
  /// let failingEdits = PassthroughFlow<Item, APIError>()  // fails like the saves
  /// let uploads = failingEdits.switchToLatestFlow(by: \.id) { item in
  ///   Flow.single { () throws(APIError) in try await api.upload(item) }  // Failure == APIError
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - key: The identity of an element; a newer element replaces only the inner of its own key.
  ///   - transform: Makes the inner sequence for an element.
  @_disfavoredOverload
  @inlinable public func switchToLatestFlow<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestByKeyFlowSequence<Self, Key, Inner, Failure>
  where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.latest, by: key, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// Latest wins per identity (a new element for key K cancels only K's inner), for inner sequences that cannot
  /// fail under an outer that fails with a type of its own: the result fails only with the outer's failure,
  /// which cancels the running inners. See ``AsyncSwitchToLatestByKeyFlowSequence``.
  ///
  /// ```swift
  /// let failingReloads = PassthroughFlow<Item, APIError>()  // rows to reload
  /// let reloaded = failingReloads.switchToLatestFlow(by: \.id) { row in  // Failure == APIError
  ///   Flow<Item?, Never>.single { await api.item(row.id) }  // cannot fail
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - key: The identity of an element; a newer element replaces only the inner of its own key.
  ///   - transform: Makes the inner sequence for an element.
  @_disfavoredOverload
  @inlinable public func switchToLatestFlow<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestByKeyFlowSequence<Self, Key, Inner, Failure>
  where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.latest, by: key, transform, outerFailure: { $0 }, innerFailure: absurd)
  }
}

/// The sequence ``_Concurrency/AsyncSequence/switchToLatestFlow(by:_:)`` returns: latest wins per
/// identity.
///
/// - At most one inner runs per key: a newer element of key K supersedes only K's inner, whose
///   elements and failure never reach the consumer afterwards; inners of different keys run
///   concurrently and their elements interleave as they come.
/// - The first failure, of the base or of a current inner, ends the sequence with it; it finishes
///   when the base and every current inner have finished.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended.
///
/// ```swift
/// let reloads = PassthroughFlow<Item, Never>()  // rows to reload; a newer reload of a row replaces its own
/// let rows: AsyncSwitchToLatestByKeyFlowSequence<PassthroughFlow<Item, Never>, Int, Flow<Item?, Never>, Never> =
///   reloads.switchToLatestFlow(by: \.id) { row in Flow.single { await api.item(row.id) } }
/// ```
public typealias AsyncSwitchToLatestByKeyFlowSequence<
  Base: AsyncSequence & Sendable, Key: Hashable & Sendable, Inner: AsyncSequence & Sendable, Failure: Error
> =
  AsyncFlattenFlowSequence<Base, Key, Inner, Failure, _FlattenFlowKind.SwitchToLatestByKey>
where Base.Element: Sendable, Inner.Element: Sendable
