extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Latest wins: maps each element to an inner sequence and delivers the elements of the newest
  /// one. A new element cancels the running inner; nothing the superseded inner produces or throws
  /// reaches the consumer after the operator has received the newer element. A failure of the
  /// current inner or of the outer ends the sequence with it (catch inside the inner, with
  /// ``catchInner(_:)`` or ``asLoadState()``, to keep the outer alive). The sequence finishes when
  /// the outer has finished and the current inner has ended. Inner elements are pulled on demand,
  /// and the outer is watched while the consumer is slow. An element superseded before its inner
  /// began is never transformed.
  ///
  /// ```swift
  /// let results = queries.switchToLatestFlow { query in api.search(query).asLoadState() }
  /// ```
  @inlinable
  public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, any Error> & Sendable where Inner.Element: Sendable {
    flattened(.latest, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// `switchToLatestFlow` as above. For an outer sequence that cannot fail: the result fails only with the inner's failure.
  ///
  /// ```swift
  /// let results = queries.switchToLatestFlow { query in api.search(query).asLoadState() }
  /// ```
  @inlinable
  public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Inner.Failure> & Sendable where Inner.Element: Sendable {
    flattened(.latest, transform, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// `switchToLatestFlow` as above. For an outer and inner sequences that fail with the same type: the result keeps it.
  ///
  /// ```swift
  /// let results = queries.switchToLatestFlow { query in api.search(query).asLoadState() }
  /// ```
  @inlinable
  public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Failure> & Sendable where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.latest, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// `switchToLatestFlow` as above. For an outer and inner sequences that cannot fail: neither can the result.
  ///
  /// ```swift
  /// let results = queries.switchToLatestFlow { query in api.search(query).asLoadState() }
  /// ```
  @inlinable
  public func switchToLatestFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Never> & Sendable where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.latest, transform, outerFailure: absurd, innerFailure: absurd)
  }
}

extension AsyncSequence where Self: Sendable, Element: AsyncSequence & Sendable, Element.Element: Sendable {
  /// Latest wins, over a sequence of sequences: delivers the elements of the newest inner sequence
  /// and cancels the one it replaces; see ``switchToLatestFlow(_:)-(_)``.
  ///
  /// ```swift
  /// let results = queries.map { api.search($0) }.catchInner { _ in Flow.just([]) }.switchToLatestFlow()
  /// ```
  @inlinable
  public func switchToLatestFlow() -> some AsyncSequence<Element.Element, any Error> & Sendable {
    flattened(.latest, { $0 }, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: AsyncSequence & Sendable, Element.Element: Sendable, Failure == Never {
  /// `switchToLatestFlow` as above. For an outer sequence that cannot fail: the result fails only with the inner's failure.
  ///
  /// ```swift
  /// let results = queries.map { api.search($0) }.catchInner { _ in Flow.just([]) }.switchToLatestFlow()
  /// ```
  @inlinable
  public func switchToLatestFlow() -> some AsyncSequence<Element.Element, Element.Failure> & Sendable {
    flattened(.latest, { $0 }, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: AsyncSequence & Sendable, Element.Element: Sendable {
  /// `switchToLatestFlow` as above. For an outer and inner sequences that fail with the same type: the result keeps it.
  ///
  /// ```swift
  /// let results = queries.map { api.search($0) }.catchInner { _ in Flow.just([]) }.switchToLatestFlow()
  /// ```
  @inlinable
  public func switchToLatestFlow() -> some AsyncSequence<Element.Element, Failure> & Sendable
  where Element.Failure == Failure {
    flattened(.latest, { $0 }, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: AsyncSequence & Sendable, Element.Element: Sendable, Failure == Never {
  /// `switchToLatestFlow` as above. For an outer and inner sequences that cannot fail: neither can the result.
  ///
  /// ```swift
  /// let results = queries.map { api.search($0) }.catchInner { _ in Flow.just([]) }.switchToLatestFlow()
  /// ```
  @inlinable
  public func switchToLatestFlow() -> some AsyncSequence<Element.Element, Never> & Sendable
  where Element.Failure == Never {
    flattened(.latest, { $0 }, outerFailure: absurd, innerFailure: absurd)
  }
}

/// The one key of the flattening operators that do not group by identity.
@usableFromInline
struct FlattenSingleKey: Hashable, Sendable {
  @inlinable init() {}
}
