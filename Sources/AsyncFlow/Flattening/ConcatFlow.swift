extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// One after another: maps each element to an inner sequence and runs them in order, each after
  /// the previous one finished; none is dropped. A failure ends the sequence with it.
  ///
  /// ```swift
  /// let uploads = queuedFiles.concatFlow { file in api.upload(file) }   // progress of each, in turn
  /// ```
  @inlinable
  public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, any Error> & Sendable where Inner.Element: Sendable {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// `concatFlow` as above. For an outer sequence that cannot fail: the result fails only with the inner's failure.
  ///
  /// ```swift
  /// let uploads = queuedFiles.concatFlow { file in api.upload(file) }   // progress of each, in turn
  /// ```
  @inlinable
  public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Inner.Failure> & Sendable where Inner.Element: Sendable {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// `concatFlow` as above. For an outer and inner sequences that fail with the same type: the result keeps it.
  ///
  /// ```swift
  /// let uploads = queuedFiles.concatFlow { file in api.upload(file) }   // progress of each, in turn
  /// ```
  @inlinable
  public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Failure> & Sendable where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// `concatFlow` as above. For an outer and inner sequences that cannot fail: neither can the result.
  ///
  /// ```swift
  /// let uploads = queuedFiles.concatFlow { file in api.upload(file) }   // progress of each, in turn
  /// ```
  @inlinable
  public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Never> & Sendable where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: absurd, innerFailure: absurd)
  }
}
