extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// All run: maps each element to an inner sequence and delivers the elements of all of them as
  /// they come, with at most `maxConcurrent` inners running at once; the outer is not pulled while
  /// that many run, so the rest wait in order. A failure of any inner, or of the outer, ends the
  /// sequence with it and cancels the rest. The sequence finishes when the outer and every inner
  /// have finished.
  ///
  /// ```swift
  /// let thumbnails = photoIDs.mergeFlow(maxConcurrent: 4) { id in api.thumbnail(id) }
  /// ```
  @inlinable
  public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, any Error> & Sendable where Inner.Element: Sendable {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// `mergeFlow` as above. For an outer sequence that cannot fail: the result fails only with the inner's failure.
  ///
  /// ```swift
  /// let thumbnails = photoIDs.mergeFlow(maxConcurrent: 4) { id in api.thumbnail(id) }
  /// ```
  @inlinable
  public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Inner.Failure> & Sendable where Inner.Element: Sendable {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// `mergeFlow` as above. For an outer and inner sequences that fail with the same type: the result keeps it.
  ///
  /// ```swift
  /// let thumbnails = photoIDs.mergeFlow(maxConcurrent: 4) { id in api.thumbnail(id) }
  /// ```
  @inlinable
  public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Failure> & Sendable where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// `mergeFlow` as above. For an outer and inner sequences that cannot fail: neither can the result.
  ///
  /// ```swift
  /// let thumbnails = photoIDs.mergeFlow(maxConcurrent: 4) { id in api.thumbnail(id) }
  /// ```
  @inlinable
  public func mergeFlow<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Never> & Sendable where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.merge(checking: maxConcurrent), transform, outerFailure: absurd, innerFailure: absurd)
  }
}
