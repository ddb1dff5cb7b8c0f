// Three signatures for the four failure combinations, in the order the type checker tries them:
// see the note above `switchToLatestFlow(_:)` in AsyncSwitchToLatestFlowSequence.swift.
extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == Never {
  /// First wins: maps an element to an inner sequence and ignores the elements that arrive while it runs; the
  /// next element after it finished starts the next inner. For submissions and payments, where a second tap must
  /// not start a second write. For an outer sequence that cannot fail: the result fails like the inners (with
  /// their failure, or never). See ``AsyncExhaustFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// let refreshes = PassthroughFlow<Void, Never>()  // pull-to-refresh, ignored while a load runs
  /// let pages = refreshes.exhaustFlow { _ in api.rows() }  // Failure == APIError
  /// for await state in refreshes.exhaustFlow({ _ in api.rows().asLoadState() }) { print(state) }  // cannot fail
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @inlinable public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    flattened(.exhaust, transform, outerFailure: absurd, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == any Error {
  /// First wins (elements that arrive while an inner runs are ignored), for an outer sequence that fails with
  /// `any Error`: the inners may fail with any error, or not at all. See ``AsyncExhaustFlowSequence``.
  ///
  /// ```swift
  /// let refreshes = PassthroughFlow<Void, any Error>()  // pull-to-refresh, ignored while a load runs
  /// let states = refreshes.exhaustFlow { _ in api.rows().asLoadState() }  // Failure == any Error
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @inlinable public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, any Error> where Inner.Element: Sendable {
    flattened(.exhaust, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable {
  /// First wins (elements that arrive while an inner runs are ignored), for an outer and inner sequences that
  /// fail with the same type: the first failure of either ends the result with it. An inner made by a `Flow`
  /// factory takes the outer's failure type; give one that cannot fail the outer's with `setFailureType(to:)`.
  /// See ``AsyncExhaustFlowSequence``.
  ///
  /// ```swift
  /// let taps = PassthroughFlow<Void, APIError>()  // pull-to-refresh, ignored while a load runs
  /// let loads = taps.exhaustFlow { _ in api.rows() }  // Failure == APIError
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @_disfavoredOverload
  @inlinable public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.exhaust, transform, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// First wins (elements that arrive while an inner runs are ignored), for inner sequences that cannot fail
  /// under an outer that fails with a type of its own: the result fails only with the outer's failure, which
  /// cancels the running inner. See ``AsyncExhaustFlowSequence``.
  ///
  /// ```swift
  /// let failingTaps = PassthroughFlow<Void, APIError>()  // pull-to-refresh, ignored while a load runs
  /// let states = failingTaps.exhaustFlow { _ in api.rows().asLoadState() }  // Failure == APIError
  /// ```
  ///
  /// - Parameter transform: Makes the inner sequence for an element.
  @_disfavoredOverload
  @inlinable public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Failure>
  where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.exhaust, transform, outerFailure: { $0 }, innerFailure: absurd)
  }
}

/// The sequence ``_Concurrency/AsyncSequence/exhaustFlow(_:)`` returns: first wins while busy.
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
