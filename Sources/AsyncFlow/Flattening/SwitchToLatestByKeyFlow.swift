extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Latest wins per identity: at most one inner runs per key; a new element for key K cancels
  /// only K's inner, and inners of different keys run concurrently. For rows that each load their
  /// details, where a newer request for a row replaces that row's older one.
  ///
  /// ```swift
  /// let details = rowRequests.switchToLatestFlow(by: \.rowID) { request in api.details(request.rowID) }
  /// ```
  @inlinable
  public func switchToLatestFlow<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, any Error> & Sendable where Inner.Element: Sendable {
    flattened(.latest, by: key, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// `switchToLatestFlow` as above. For an outer sequence that cannot fail: the result fails only with the inner's failure.
  ///
  /// ```swift
  /// let details = rowRequests.switchToLatestFlow(by: \.rowID) { request in api.details(request.rowID) }
  /// ```
  @inlinable
  public func switchToLatestFlow<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Inner.Failure> & Sendable where Inner.Element: Sendable {
    flattened(.latest, by: key, transform, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// `switchToLatestFlow` as above. For an outer and inner sequences that fail with the same type: the result keeps it.
  ///
  /// ```swift
  /// let details = rowRequests.switchToLatestFlow(by: \.rowID) { request in api.details(request.rowID) }
  /// ```
  @inlinable
  public func switchToLatestFlow<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Failure> & Sendable where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.latest, by: key, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// `switchToLatestFlow` as above. For an outer and inner sequences that cannot fail: neither can the result.
  ///
  /// ```swift
  /// let details = rowRequests.switchToLatestFlow(by: \.rowID) { request in api.details(request.rowID) }
  /// ```
  @inlinable
  public func switchToLatestFlow<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Never> & Sendable where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.latest, by: key, transform, outerFailure: absurd, innerFailure: absurd)
  }
}
