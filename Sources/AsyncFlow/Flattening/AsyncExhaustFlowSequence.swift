extension AsyncSequence
where Self: Sendable, Element: Sendable {
  /// First wins: maps an element to an inner sequence and ignores the elements that arrive while it runs; the
  /// next element after it finished starts the next inner. For submissions and payments, where a second tap must
  /// not start a second write. For an outer and inner sequences that fail with the same type: the first failure
  /// of either ends the result with it. See ``AsyncExhaustFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// let refreshes = PassthroughFlow<Void, APIError>()  // pull-to-refresh, ignored while a load runs
  /// let pages = refreshes.exhaustFlow { _ in api.rows() }  // Failure == APIError
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @inlinable public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.exhaust, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// First wins (elements that arrive while an inner runs are ignored), for inner sequences that cannot fail: the
  /// result fails only with the outer's failure, which cancels the running inner. See ``AsyncExhaustFlowSequence``.
  ///
  /// ```swift
  /// let refreshes = PassthroughFlow<Void, any Error>()  // pull-to-refresh, ignored while a load runs
  /// let states = refreshes.exhaustFlow { _ in api.rows().asLoadState() }  // Failure == any Error
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @inlinable public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.exhaust, transform, outerFailure: { $0 }, innerFailure: absurd)
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == Never {
  /// First wins (elements that arrive while an inner runs are ignored), for an outer sequence that cannot fail:
  /// the result fails only with an inner's failure. See ``AsyncExhaustFlowSequence``.
  ///
  /// ```swift
  /// let refreshes = PassthroughFlow<Void, Never>()  // pull-to-refresh, ignored while a load runs
  /// let pages = refreshes.exhaustFlow { _ in api.rows() }  // Failure == APIError
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @inlinable public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    flattened(.exhaust, transform, outerFailure: absurd, innerFailure: { $0 })
  }

  /// First wins (elements that arrive while an inner runs are ignored), for an outer and inner sequences that
  /// cannot fail: neither can the result. See ``AsyncExhaustFlowSequence``.
  ///
  /// ```swift
  /// let refreshes = PassthroughFlow<Void, Never>()  // pull-to-refresh, ignored while a load runs
  /// for await state in refreshes.exhaustFlow({ _ in api.rows().asLoadState() }) { print(state) }
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @inlinable public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Never> where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.exhaust, transform, outerFailure: absurd, innerFailure: absurd)
  }
}

/// The sequence ``_Concurrency/AsyncSequence/exhaustFlow(_:)-7c3tu`` returns: first wins while busy.
///
/// - An element of the base that arrives while an inner runs is dropped, without being
///   transformed; the first element after the running inner has finished starts the next one.
/// - The first failure, of the base or of the running inner, ends the sequence with it; it
///   finishes when the base and the running inner have finished.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended.
///
/// ```swift
/// let refreshes = PassthroughFlow<Void, Never>()  // pull-to-refresh, ignored while a load runs
/// let pages: AsyncExhaustFlowSequence<PassthroughFlow<Void, Never>, Flow<[Item], APIError>, APIError> =
///   refreshes.exhaustFlow { _ in api.rows() }
/// ```
public typealias AsyncExhaustFlowSequence<
  Base: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Failure: Error
> =
  AsyncFlattenFlowSequence<Base, _FlattenFlowKind.SingleKey, Inner, Failure, _FlattenFlowKind.Exhaust>
where Base.Element: Sendable, Inner.Element: Sendable
