extension AsyncSequence
where Self: Sendable, Element: Sendable {
  /// First wins: maps an element to an inner sequence and ignores the elements that arrive while it runs; the
  /// next element after it finished starts the next inner. For submissions and payments, where a second tap must
  /// not start a second write. For an outer and inner sequences that fail with the same type: the first failure
  /// of either ends the result with it. See ``AsyncExhaustFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// // taps: Flow<Void, PaymentError>, api.pay(_:) -> Flow<Receipt, PaymentError>
  /// let receipts = taps.exhaustFlow { _ in api.pay(order) }  // Failure == PaymentError
  /// ```
  ///
  /// - Parameters:
  ///   - transform: Makes the inner sequence for an element.
  @inlinable
  public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Failure {
    AsyncExhaustFlowSequence(
      flattened(.exhaust, transform, outerFailure: { $0 }, innerFailure: { $0 }))
  }

  /// First wins: maps an element to an inner sequence and ignores the elements that arrive while it runs; the
  /// next element after it finished starts the next inner. For submissions and payments, where a second tap must
  /// not start a second write. For inner sequences that cannot fail: the result fails only with the outer's
  /// failure, which cancels the running inner. See ``AsyncExhaustFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// // taps: Flow<Void, any Error>, api.pay(_:) -> Flow<LoadState<Receipt, PaymentError>, Never>
  /// let states = taps.exhaustFlow { _ in api.pay(order).asLoadState() }  // Failure == any Error
  /// ```
  ///
  /// - Parameters:
  ///   - transform: Makes the inner sequence for an element.
  @inlinable
  public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Never {
    AsyncExhaustFlowSequence(
      flattened(.exhaust, transform, outerFailure: { $0 }, innerFailure: absurd))
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == Never {
  /// First wins: maps an element to an inner sequence and ignores the elements that arrive while it runs; the
  /// next element after it finished starts the next inner. For submissions and payments, where a second tap must
  /// not start a second write. For an outer sequence that cannot fail: the result fails only with an inner's
  /// failure. See ``AsyncExhaustFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// // taps: Flow<Void, Never>, api.pay(_:) -> Flow<Receipt, PaymentError>
  /// let receipts = taps.exhaustFlow { _ in api.pay(order) }  // Failure == PaymentError
  /// ```
  ///
  /// - Parameters:
  ///   - transform: Makes the inner sequence for an element.
  @inlinable
  public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    AsyncExhaustFlowSequence(
      flattened(.exhaust, transform, outerFailure: absurd, innerFailure: { $0 }))
  }

  /// First wins: maps an element to an inner sequence and ignores the elements that arrive while it runs; the
  /// next element after it finished starts the next inner. For submissions and payments, where a second tap must
  /// not start a second write. For an outer and inner sequences that cannot fail: neither can the result. See
  /// ``AsyncExhaustFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// // taps: Flow<Void, Never>, api.pay(_:).asLoadState() -> never fails
  /// for await state in taps.exhaustFlow({ _ in api.pay(order).asLoadState() }) { render(state) }
  /// ```
  ///
  /// - Parameters:
  ///   - transform: Makes the inner sequence for an element.
  @inlinable
  public func exhaustFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Never> where Inner.Element: Sendable, Inner.Failure == Never {
    AsyncExhaustFlowSequence(
      flattened(.exhaust, transform, outerFailure: absurd, innerFailure: absurd))
  }
}

/// The sequence ``_Concurrency/AsyncSequence/exhaustFlow(_:)-5p75q`` returns: first wins while busy.
///
/// - An element of the base that arrives while an inner runs is dropped, without being
///   transformed; the first element after the running inner has finished starts the next one.
/// - The first failure, of the base or of the running inner, ends the sequence with it; it
///   finishes when the base and the running inner have finished.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended.
///
/// ```swift
/// let receipts: AsyncExhaustFlowSequence<Flow<Void, Never>, Flow<Receipt, PaymentError>, PaymentError> =
///   taps.exhaustFlow { _ in api.pay(order) }
/// ```
public struct AsyncExhaustFlowSequence<Base: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Failure: Error>:
  AsyncSequence, Sendable
where Base.Element: Sendable, Inner.Element: Sendable {
  public typealias Element = Inner.Element

  @usableFromInline let flattening: FlattenSequence<Base, Inner, FlattenSingleKey, Failure>

  @inlinable init(_ flattening: FlattenSequence<Base, Inner, FlattenSingleKey, Failure>) {
    self.flattening = flattening
  }

  /// Starts an iteration: the base is pulled when the iterator is first asked for an element.
  ///
  /// ```swift
  /// var iterator = receipts.makeAsyncIterator()
  /// let first = await iterator.next()
  /// ```
  @inlinable public func makeAsyncIterator() -> Iterator {
    Iterator(flattening.makeAsyncIterator())
  }

  /// The iterator of an ``AsyncExhaustFlowSequence``; releasing it cancels the iteration's tasks.
  ///
  /// ```swift
  /// var iterator = receipts.makeAsyncIterator()
  /// while let element = await iterator.next() { show(element) }
  /// ```
  public struct Iterator: AsyncIteratorProtocol {
    @usableFromInline var base: FlattenSequence<Base, Inner, FlattenSingleKey, Failure>.Iterator

    @inlinable init(_ base: FlattenSequence<Base, Inner, FlattenSingleKey, Failure>.Iterator) {
      self.base = base
    }

    /// The next element of the running inner, or `nil` once everything finished or the task was cancelled.
    ///
    /// ```swift
    /// let next = try await iterator.next(isolation: #isolation)
    /// ```
    @inlinable public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await base.next(isolation: actor)
    }

    /// The next element of the running inner, or `nil` once everything finished or the task was cancelled.
    ///
    /// ```swift
    /// let next = try await iterator.next()
    /// ```
    @inlinable public mutating func next() async throws(Failure) -> Element? {
      try await base.next(isolation: nil)
    }
  }
}

@available(*, unavailable)
extension AsyncExhaustFlowSequence.Iterator: Sendable {}
