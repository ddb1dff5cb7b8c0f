/// The sequence every flattening operator returns, written once: each operator's public type
/// (``AsyncSwitchToLatestFlowSequence``, ``AsyncSwitchToLatestByKeyFlowSequence``,
/// ``AsyncMergeFlowSequence``, ``AsyncConcatFlowSequence``, ``AsyncExhaustFlowSequence``) is a
/// typealias of it, with a `Kind` of its own so that the five stay distinct types. The rules of
/// each operator are on its typealias.
///
/// - `Key`: the identity an inner runs under (`_FlattenFlowKind.SingleKey` for all but the keyed
///   switch).
/// - `Kind`: one of the marker types of `_FlattenFlowKind`; it only tells the operators apart.
///
/// ```swift
/// let selection = Flow.sequence([1, 2])  // the selected row's id
/// let results: AsyncFlattenFlowSequence<
///   Flow<Int, Never>, _FlattenFlowKind.SingleKey, Flow<Item?, Never>, Never, _FlattenFlowKind.SwitchToLatest> =
///   selection.switchToLatestFlow { id in Flow.single { await api.item(id) } }  // an AsyncSwitchToLatestFlowSequence
/// ```
public struct AsyncFlattenFlowSequence<
  Base: AsyncSequence & Sendable, Key: Hashable & Sendable, Inner: AsyncSequence & Sendable, Failure: Error, Kind
>:
  AsyncSequence, Sendable
where Base.Element: Sendable, Inner.Element: Sendable {
  /// The elements it delivers: `Inner.Element`.
  public typealias Element = Inner.Element

  @usableFromInline let operation: FlattenOperation<Base, Inner, Key, Failure>

  @inlinable init(_ operation: FlattenOperation<Base, Inner, Key, Failure>) {
    self.operation = operation
  }

  /// Starts an iteration: the base is pulled when the iterator is first asked for an element.
  ///
  /// ```swift
  /// var iterator = results.makeAsyncIterator()
  /// let first = await iterator.next()
  /// ```
  @inlinable public func makeAsyncIterator() -> Iterator {
    switch operation.policy {
    case .latest: Iterator(.latest(BatchConsumer(FlattenStorage(operation, logic: FlattenSwitchLogic()))))
    case .merge(let limit): Iterator(.merge(BatchConsumer(FlattenStorage(operation, logic: FlattenMergeLogic(maxConcurrent: limit)))))
    case .exhaust: Iterator(.exhaust(BatchConsumer(FlattenStorage(operation, logic: FlattenExhaustLogic()))))
    }
  }

  /// The iterator of a flattening operator; releasing it cancels the iteration's tasks.
  ///
  /// ```swift
  /// var iterator = results.makeAsyncIterator()
  /// while let element = await iterator.next() { print(element?.title ?? "deleted") }
  /// ```
  public struct Iterator: AsyncIteratorProtocol {
    /// The consumer of the storage that runs the operator's logic, one case per logic: each case is
    /// specialized for its logic, and the policy is picked once per iteration.
    @usableFromInline
    enum Consumer {
      case latest(BatchConsumer<FlattenStorage<Base, Inner, FlattenSwitchLogic<Key>, Failure>, Element>)
      case merge(BatchConsumer<FlattenStorage<Base, Inner, FlattenMergeLogic<Key>, Failure>, Element>)
      case exhaust(BatchConsumer<FlattenStorage<Base, Inner, FlattenExhaustLogic<Key>, Failure>, Element>)
    }

    @usableFromInline let consumer: Consumer

    @inlinable init(_ consumer: Consumer) {
      self.consumer = consumer
    }

    /// The next element of an inner the operator delivers from, or `nil` once everything finished
    /// or the task was cancelled.
    ///
    /// ```swift
    /// let next = try await iterator.next(isolation: #isolation)
    /// ```
    @inlinable public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      switch consumer {
      case .latest(let consumer): try await consumer.next(isolation: actor)
      case .merge(let consumer): try await consumer.next(isolation: actor)
      case .exhaust(let consumer): try await consumer.next(isolation: actor)
      }
    }

    /// The next element of an inner the operator delivers from, or `nil` once everything finished
    /// or the task was cancelled.
    ///
    /// ```swift
    /// let next = try await iterator.next()
    /// ```
    @inlinable public mutating func next() async throws(Failure) -> Element? {
      try await next(isolation: nil)
    }
  }
}

@available(*, unavailable)
extension AsyncFlattenFlowSequence.Iterator: Sendable {}

/// The marker types that tell the flattening operators' sequences apart (the `Kind` of an
/// ``AsyncFlattenFlowSequence``), and the one key of the operators that do not group by identity.
/// Public only because the operators' typealiases name them; write the typealiases instead.
///
/// ```swift
/// let kind = _FlattenFlowKind.Merge.self  // the `Kind` of every AsyncMergeFlowSequence
/// ```
public enum _FlattenFlowKind {
  /// The `Kind` of ``AsyncSwitchToLatestFlowSequence``: `_FlattenFlowKind.SwitchToLatest.self`.
  public enum SwitchToLatest {}
  /// The `Kind` of ``AsyncSwitchToLatestByKeyFlowSequence``: `_FlattenFlowKind.SwitchToLatestByKey.self`.
  public enum SwitchToLatestByKey {}
  /// The `Kind` of ``AsyncMergeFlowSequence``: `_FlattenFlowKind.Merge.self`.
  public enum Merge {}
  /// The `Kind` of ``AsyncConcatFlowSequence``: `_FlattenFlowKind.Concat.self`.
  public enum Concat {}
  /// The `Kind` of ``AsyncExhaustFlowSequence``: `_FlattenFlowKind.Exhaust.self`.
  public enum Exhaust {}

  /// The one key of the flattening operators that do not group by identity:
  /// `_FlattenFlowKind.SingleKey.self`.
  public struct SingleKey: Hashable, Sendable {
    @inlinable init() {}
  }
}

/// What a flattening operator runs: its outer sequence, policy, key, transform and failure mappings.
@usableFromInline
struct FlattenOperation<
  Outer: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Key: Hashable & Sendable, Failure: Error
>: Sendable
where Outer.Element: Sendable, Inner.Element: Sendable {
  @usableFromInline let policy: FlattenPolicy
  @usableFromInline let outer: Outer
  @usableFromInline let key: @Sendable (Outer.Element) -> Key
  @usableFromInline let transform: @Sendable (Outer.Element) async -> Inner
  @usableFromInline let outerFailure: @Sendable (Outer.Failure) -> Failure
  @usableFromInline let innerFailure: @Sendable (Inner.Failure) -> Failure

  @inlinable init(
    policy: FlattenPolicy, outer: Outer, key: @escaping @Sendable (Outer.Element) -> Key,
    transform: @escaping @Sendable (Outer.Element) async -> Inner,
    outerFailure: @escaping @Sendable (Outer.Failure) -> Failure,
    innerFailure: @escaping @Sendable (Inner.Failure) -> Failure
  ) {
    self.policy = policy
    self.outer = outer
    self.key = key
    self.transform = transform
    self.outerFailure = outerFailure
    self.innerFailure = innerFailure
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// What every flattening entry point builds; the public overloads differ only in the policy, the
  /// `Kind` of their result and how they map the outer's and the inner's failures to the result's.
  @inlinable func flattened<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable, F: Error, Kind>(
    _ policy: FlattenPolicy, by key: @escaping @Sendable (Element) -> Key,
    _ transform: @escaping @Sendable (Element) async -> Inner,
    outerFailure: @escaping @Sendable (Failure) -> F, innerFailure: @escaping @Sendable (Inner.Failure) -> F
  ) -> AsyncFlattenFlowSequence<Self, Key, Inner, F, Kind> where Inner.Element: Sendable {
    AsyncFlattenFlowSequence(
      FlattenOperation(
        policy: policy, outer: self, key: key, transform: transform, outerFailure: outerFailure,
        innerFailure: innerFailure))
  }

  /// ``flattened(_:by:_:outerFailure:innerFailure:)`` with one key for every element.
  @inlinable func flattened<Inner: AsyncSequence & Sendable, F: Error, Kind>(
    _ policy: FlattenPolicy, _ transform: @escaping @Sendable (Element) async -> Inner,
    outerFailure: @escaping @Sendable (Failure) -> F, innerFailure: @escaping @Sendable (Inner.Failure) -> F
  ) -> AsyncFlattenFlowSequence<Self, _FlattenFlowKind.SingleKey, Inner, F, Kind> where Inner.Element: Sendable {
    flattened(
      policy, by: { _ in _FlattenFlowKind.SingleKey() }, transform, outerFailure: outerFailure,
      innerFailure: innerFailure)
  }
}
