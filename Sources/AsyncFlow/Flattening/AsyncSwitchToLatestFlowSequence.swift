// The overloads cover the four failure combinations of Flattening.md's table, declared in the
// order the type checker tries them. The outer's `Failure` alone picks the first two (`Never`,
// `any Error`), and it is known before the transform's closure is checked, so for those outers the
// others are set aside at once. The last two, for an outer that fails with a type of its own, are
// told apart only by the inner's failure, which the type checker learns from the closure after the
// rest of the chain; they are disfavored so that the first two win where they apply. Before, the
// four were told apart by the inner's failure for every outer: the type checker carried a wrong
// overload through the rest of the chain before the closure ruled it out (issue 39's search
// pipeline: 1,693 solver scopes against its one-signature baseline's 42, now 55; Benchmarks/README.md,
// "Type-checking time"). An outer of a type of its own still pays so when its inner cannot fail.
extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == Never {
  /// Latest wins: maps each element to an inner sequence and delivers the elements of the newest one; a newer
  /// element cancels the running inner, and nothing the superseded inner produces or throws reaches the consumer
  /// afterwards. For an outer sequence that cannot fail: the result fails like the inner (with its failure, or
  /// never). See ``AsyncSwitchToLatestFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// let queries = PassthroughFlow<String, Never>()  // the search field's text
  /// let results = queries.switchToLatestFlow { query in api.search(query) }  // Failure == SearchError
  /// let states = queries.switchToLatestFlow { query in api.search(query).asLoadState() }  // Failure == Never
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element; an element superseded before its inner began
  ///   is never transformed.
  @inlinable public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    flattened(.latest, transform, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == any Error {
  /// Latest wins (a newer element cancels the running inner), for an outer sequence that fails with `any Error`:
  /// the inner may fail with any error, or not at all, and the first failure of either ends the result with it.
  /// See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let queries = PassthroughFlow<String, any Error>()  // the search field's text
  /// let states = queries.switchToLatestFlow { query in api.search(query).asLoadState() }  // Failure == any Error
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element; an element superseded before its inner began
  ///   is never transformed.
  @inlinable public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestFlowSequence<Self, Inner, any Error> where Inner.Element: Sendable {
    flattened(.latest, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable {
  /// Latest wins (a newer element cancels the running inner), for an outer and inner sequences that fail with the
  /// same type: the first failure of either ends the result with it. An inner made by a `Flow` factory takes the
  /// outer's failure type; give one that cannot fail the outer's with `setFailureType(to:)`. See
  /// ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let queries = PassthroughFlow<String, SearchError>()  // the search field's text; fails like the searches
  /// let results = queries.switchToLatestFlow { query in api.search(query) }  // Failure == SearchError
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element; an element superseded before its inner began
  ///   is never transformed.
  @_disfavoredOverload
  @inlinable public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.latest, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// Latest wins (a newer element cancels the running inner), for inner sequences that cannot fail under an
  /// outer that fails with a type of its own: the result fails only with the outer's failure, which cancels the
  /// running inner. See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let failingQueries = PassthroughFlow<String, SearchError>()  // the search field's text
  /// let found = failingQueries.switchToLatestFlow { query in api.search(query).asLoadState() }  // SearchError
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element; an element superseded before its inner began
  ///   is never transformed.
  @_disfavoredOverload
  @inlinable public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestFlowSequence<Self, Inner, Failure>
  where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.latest, transform, outerFailure: { $0 }, innerFailure: absurd)
  }
}

extension AsyncSequence
where Self: Sendable, Element: AsyncSequence & Sendable, Element.Element: Sendable, Failure == Never {
  /// Latest wins, over a sequence of sequences: delivers the elements of the newest inner sequence and cancels
  /// the one it replaces; nothing the superseded inner produces or throws reaches the consumer afterwards. For an
  /// outer sequence that cannot fail: the result fails like the inners. See ``AsyncSwitchToLatestFlowSequence``
  /// for the full rules.
  ///
  /// ```swift
  /// let queries = Flow.sequence(["sw", "swift"])  // the search field's text, as typed
  /// let results = queries.map { api.search($0) }.switchToLatestFlow()  // Failure == SearchError
  /// let caught = queries.map { api.search($0) }
  ///   .catchInner { _ in Flow.just([Item]()) }
  ///   .switchToLatestFlow()  // Failure == Never
  /// ```
  @inlinable public func switchToLatestFlow() -> AsyncSwitchToLatestFlowSequence<Self, Element, Element.Failure> {
    flattened(.latest, { $0 }, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: AsyncSequence & Sendable, Element.Element: Sendable, Failure == any Error {
  /// Latest wins, over a sequence of sequences, for an outer sequence that fails with `any Error`: the inners may
  /// fail with any error, or not at all. See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let requests = PassthroughFlow<Flow<[Item], Never>, any Error>()  // one lookup per keystroke
  /// let results = requests.switchToLatestFlow()  // Failure == any Error
  /// ```
  @inlinable public func switchToLatestFlow() -> AsyncSwitchToLatestFlowSequence<Self, Element, any Error> {
    flattened(.latest, { $0 }, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: AsyncSequence & Sendable, Element.Element: Sendable {
  /// Latest wins, over a sequence of sequences, for an outer and inner sequences that fail with the same type: the
  /// first failure of either ends the result with it. Give inners that cannot fail the outer's failure type with
  /// `setFailureType(to:)`. See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let requests = PassthroughFlow<Flow<[Item], SearchError>, SearchError>()  // one search per keystroke
  /// let results = requests.switchToLatestFlow()  // Failure == SearchError
  /// ```
  @_disfavoredOverload
  @inlinable public func switchToLatestFlow() -> AsyncSwitchToLatestFlowSequence<Self, Element, Failure>
  where Element.Failure == Failure {
    flattened(.latest, { $0 }, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// Latest wins, over a sequence of sequences, for inner sequences that cannot fail under an outer that fails
  /// with a type of its own: the result fails only with the outer's failure, which cancels the running inner.
  /// See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let lookups = PassthroughFlow<Flow<[Item], Never>, SearchError>()  // one lookup per keystroke
  /// let found = lookups.switchToLatestFlow()  // Failure == SearchError
  /// ```
  @_disfavoredOverload
  @inlinable public func switchToLatestFlow() -> AsyncSwitchToLatestFlowSequence<Self, Element, Failure>
  where Element.Failure == Never {
    flattened(.latest, { $0 }, outerFailure: { $0 }, innerFailure: absurd)
  }
}

/// The sequence ``_Concurrency/AsyncSequence/switchToLatestFlow(_:)`` returns: the elements of the
/// newest inner sequence.
///
/// - A newer element of the base supersedes the running inner: its task is cancelled, and nothing
///   it produces or throws reaches the consumer after the operator received the newer element.
///   Elements of a superseded inner that the consumer had not taken yet are dropped.
/// - An element superseded before its inner began is never transformed.
/// - The first failure, of the base or of the current inner, ends the sequence with it; it
///   finishes when the base has finished and the current inner has ended.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended.
///
/// ```swift
/// let queries = Flow.sequence(["sw", "swift"])  // the search field's text, as typed
/// let states: AsyncSwitchToLatestFlowSequence<
///   Flow<String, Never>, AsyncLoadStateSequence<Flow<[Item], SearchError>>, Never> =
///   queries.switchToLatestFlow { query in api.search(query).asLoadState() }
/// for await state in states { print(state) }  // the latest query's .loading, then .loaded(items) or .failed
/// ```
public typealias AsyncSwitchToLatestFlowSequence<
  Base: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Failure: Error
> =
  AsyncFlattenFlowSequence<Base, _FlattenFlowKind.SingleKey, Inner, Failure, _FlattenFlowKind.SwitchToLatest>
where Base.Element: Sendable, Inner.Element: Sendable
