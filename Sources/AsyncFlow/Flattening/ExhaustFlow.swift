extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// First wins: maps an element to an inner sequence and ignores the elements that arrive while
  /// it runs; the next element after it finished starts the next inner. For submissions and
  /// payments, where a second tap must not start a second write (and cancelling the first would not
  /// undo it: it may already have reached the server).
  ///
  /// ```swift
  /// let receipts = payTaps.exhaustFlow { _ in api.pay(order) }
  /// ```
  @inlinable
  public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, any Error> & Sendable where Inner.Element: Sendable {
    flattened(.exhaust, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// `exhaustFlow` as above. For an outer sequence that cannot fail: the result fails only with the inner's failure.
  ///
  /// ```swift
  /// let receipts = payTaps.exhaustFlow { _ in api.pay(order) }
  /// ```
  @inlinable
  public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Inner.Failure> & Sendable where Inner.Element: Sendable {
    flattened(.exhaust, transform, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// `exhaustFlow` as above. For an outer and inner sequences that fail with the same type: the result keeps it.
  ///
  /// ```swift
  /// let receipts = payTaps.exhaustFlow { _ in api.pay(order) }
  /// ```
  @inlinable
  public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Failure> & Sendable where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.exhaust, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// `exhaustFlow` as above. For an outer and inner sequences that cannot fail: neither can the result.
  ///
  /// ```swift
  /// let receipts = payTaps.exhaustFlow { _ in api.pay(order) }
  /// ```
  @inlinable
  public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> some AsyncSequence<Inner.Element, Never> & Sendable where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.exhaust, transform, outerFailure: absurd, innerFailure: absurd)
  }
}
