extension AsyncSequence
where Self: Sendable, Element: Sendable {
  /// Latest wins: maps each element to an inner sequence and delivers the elements of the newest one; a newer
  /// element cancels the running inner, and nothing the superseded inner produces or throws reaches the consumer
  /// afterwards. For an outer and inner sequences that fail with the same type: the first failure of either ends
  /// the result with it. See ``AsyncSwitchToLatestFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// let queries = PassthroughFlow<String, SearchError>()  // the search field's text; fails like the searches
  /// let results = queries.switchToLatestFlow { query in api.search(query) }  // Failure == SearchError
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element; an element superseded before its inner began
  ///   is never transformed.
  @inlinable public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncSwitchToLatestFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.latest, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// Latest wins (a newer element cancels the running inner), for inner sequences that cannot fail: the result
  /// fails only with the outer's failure, which cancels the running inner. See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let queries = PassthroughFlow<String, any Error>()  // the search field's text
  /// let states = queries.switchToLatestFlow { query in api.search(query).asLoadState() }  // Failure == any Error
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element; an element superseded before its inner began
  ///   is never transformed.
  @inlinable public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncSwitchToLatestFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.latest, transform, outerFailure: { $0 }, innerFailure: absurd)
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == Never {
  /// Latest wins (a newer element cancels the running inner), for an outer sequence that cannot fail: the result
  /// fails only with an inner's failure. See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let queries = PassthroughFlow<String, Never>()  // the search field's text
  /// let results = queries.switchToLatestFlow { query in api.search(query) }  // Failure == SearchError
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element; an element superseded before its inner began
  ///   is never transformed.
  @inlinable public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncSwitchToLatestFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    flattened(.latest, transform, outerFailure: absurd, innerFailure: { $0 })
  }

  /// Latest wins (a newer element cancels the running inner), for an outer and inner sequences that cannot fail:
  /// neither can the result. See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let queries = PassthroughFlow<String, Never>()  // the search field's text
  /// // caught inside each search, so that a failed search does not end the stream of searches
  /// let states = queries.switchToLatestFlow { query in api.search(query).asLoadState() }  // Failure == Never
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element; an element superseded before its inner began
  ///   is never transformed.
  @inlinable public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncSwitchToLatestFlowSequence<Self, Inner, Never> where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.latest, transform, outerFailure: absurd, innerFailure: absurd)
  }
}

extension AsyncSequence
where Self: Sendable, Element: AsyncSequence & Sendable, Element.Element: Sendable {
  /// Latest wins, over a sequence of sequences: delivers the elements of the newest inner sequence and cancels
  /// the one it replaces; nothing the superseded inner produces or throws reaches the consumer afterwards. For an
  /// outer and inner sequences that fail with the same type: the first failure of either ends the result with it.
  /// See ``AsyncSwitchToLatestFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// let requests = PassthroughFlow<Flow<[Item], SearchError>, SearchError>()  // one search per keystroke
  /// let results = requests.switchToLatestFlow()  // Failure == SearchError
  /// ```
  @inlinable public func switchToLatestFlow() -> AsyncSwitchToLatestFlowSequence<Self, Element, Failure>
  where Element.Failure == Failure {
    flattened(.latest, { $0 }, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// Latest wins, over a sequence of sequences, for inner sequences that cannot fail: the result fails only with
  /// the outer's failure, which cancels the running inner. See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let requests = PassthroughFlow<Flow<[Item], Never>, any Error>()  // one lookup per keystroke
  /// let results = requests.switchToLatestFlow()  // Failure == any Error
  /// ```
  @inlinable public func switchToLatestFlow() -> AsyncSwitchToLatestFlowSequence<Self, Element, Failure>
  where Element.Failure == Never {
    flattened(.latest, { $0 }, outerFailure: { $0 }, innerFailure: absurd)
  }
}

extension AsyncSequence
where Self: Sendable, Element: AsyncSequence & Sendable, Element.Element: Sendable, Failure == Never {
  /// Latest wins, over a sequence of sequences, for an outer sequence that cannot fail: the result fails only with
  /// an inner's failure. See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let queries = Flow.sequence(["sw", "swift"])  // the search field's text, as typed
  /// let results = queries.map { api.search($0) }.switchToLatestFlow()  // Failure == SearchError
  /// ```
  @inlinable public func switchToLatestFlow() -> AsyncSwitchToLatestFlowSequence<Self, Element, Element.Failure> {
    flattened(.latest, { $0 }, outerFailure: absurd, innerFailure: { $0 })
  }

  /// Latest wins, over a sequence of sequences, for an outer and inner sequences that cannot fail: neither can the
  /// result. See ``AsyncSwitchToLatestFlowSequence``.
  ///
  /// ```swift
  /// let queries = Flow.sequence(["sw", "swift"])  // the search field's text, as typed
  /// let results = queries.map { api.search($0) }
  ///   .catchInner { _ in Flow.just([Item]()) }
  ///   .switchToLatestFlow()  // Failure == Never
  /// ```
  @inlinable public func switchToLatestFlow() -> AsyncSwitchToLatestFlowSequence<Self, Element, Never>
  where Element.Failure == Never {
    flattened(.latest, { $0 }, outerFailure: absurd, innerFailure: absurd)
  }
}

/// The sequence ``_Concurrency/AsyncSequence/switchToLatestFlow(_:)-6hyfq`` returns: the elements of the
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
