extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Routes each element to the group of its key: hands out one ``FlowGroup`` per key, the first
  /// time the key comes, whose elements are that key's, in order.
  ///
  /// Each group is an `AsyncSequence` of its own, for a pipeline of its own (a `mergeFlow` runs one
  /// per group, at once). One task, started by the first `next()` in the consumer's context, pulls
  /// this sequence and routes its elements.
  ///
  /// - **Bounded buffering, with back-pressure.** Each group holds up to `bufferingLimit` elements
  ///   its consumer has not taken, and the outer consumer up to `bufferingLimit` new groups. When
  ///   one is full, the pull waits for that consumer: nothing is dropped, but a slow group slows
  ///   every group, and a group nobody iterates, once full, stops them all (give a slow group a
  ///   `bufferFlow` of its own, or release a group you do not want).
  /// - **A group's end.** A group ends when this sequence does, after its buffered elements, with
  ///   this sequence's failure if it failed. A group whose consumer is cancelled, or that is
  ///   released with its iterator, leaves: what it held is released, and the key's next element
  ///   starts a new group, handed out as the first was. A group is iterated once.
  /// - **Cancellation.** When the outer consumer is cancelled, or releases its iterator, before
  ///   this sequence ended, the task is cancelled, the outer consumer's `nil` comes once it has
  ///   ended, and every group ends at once with `nil`, its buffer released: nothing outlives the
  ///   iteration. After the end, the groups keep what they hold for their consumers.
  ///
  /// ```swift
  /// struct Event: Sendable { var user: String; var action: String }
  /// let events = PassthroughFlow<Event, Never>()  // every user's events, interleaved
  /// let perUser = events
  ///   .grouped(by: \.user)
  ///   .mergeFlow { group in group.map { "\(group.key): \($0.action)" } }  // one pipeline per user
  /// ```
  ///
  /// - Parameters:
  ///   - key: the key of an element; it runs in the operator's task, once per element.
  ///   - bufferingLimit: how many elements each group, and how many new groups the outer consumer,
  ///     may hold before the pull waits; 1 or more.
  public func grouped<Key: Hashable & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, bufferingLimit: Int = 16
  ) -> AsyncGroupedSequence<Self, Key> {
    precondition(bufferingLimit >= 1, "grouped(by:): bufferingLimit must be 1 or greater, got \(bufferingLimit)")
    return AsyncGroupedSequence(base: self, key: key, limit: bufferingLimit)
  }
}

/// A sequence of the groups of its base's elements by key; made by
/// ``_Concurrency/AsyncSequence/grouped(by:bufferingLimit:)``.
///
/// ```swift
/// let events = PassthroughFlow<(user: String, action: String), Never>()
/// let groups: AsyncGroupedSequence<PassthroughFlow<(user: String, action: String), Never>, String> =
///   events.grouped(by: \.user)
/// ```
public struct AsyncGroupedSequence<Base: AsyncSequence & Sendable, Key: Hashable & Sendable>: AsyncSequence, Sendable
where Base.Element: Sendable {
  /// A group: its key, and its elements as a sequence.
  ///
  /// ```swift
  /// for await group in groups { print(group.key) }
  /// ```
  public typealias Element = FlowGroup<Key, Base.Element, Base.Failure>
  /// The base's failure: the outer consumer and every group end with it.
  ///
  /// ```swift
  /// let failure: Never.Type = AsyncGroupedSequence<PassthroughFlow<Int, Never>, Int>.Failure.self
  /// ```
  public typealias Failure = Base.Failure

  let base: Base
  let key: @Sendable (Base.Element) -> Key
  let limit: Int

  /// Makes an iterator: its first `next()` starts the task that pulls the base.
  ///
  /// ```swift
  /// var iterator = groups.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(consumer: GroupedConsumer(GroupedStorage(base: base, key: key, limit: limit)))
  }

  /// The iterator of an ``AsyncGroupedSequence``. Releasing it before the end cancels the task
  /// and ends every group.
  ///
  /// ```swift
  /// var iterator = groups.makeAsyncIterator()
  /// while let group = await iterator.next(isolation: #isolation) { print(group.key) }
  /// ```
  public struct Iterator: AsyncIteratorProtocol {
    let consumer: GroupedConsumer<Base, Key>

    /// The next new group, `nil` at the end or once the consumer's task is cancelled; throws the
    /// base's failure.
    ///
    /// ```swift
    /// let group = await iterator.next(isolation: #isolation)
    /// ```
    public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      guard let (id, key) = try await consumer.storage.outerNext(isolation: actor) else { return nil }
      return FlowGroup(key: key, handle: FlowGroupHandle(id: id, storage: consumer.storage))
    }

    /// The next new group; see ``next(isolation:)``.
    ///
    /// ```swift
    /// let group = await iterator.next()
    /// ```
    public mutating func next() async throws(Failure) -> Element? {
      try await next(isolation: nil)
    }
  }
}

@available(*, unavailable)
extension AsyncGroupedSequence.Iterator: Sendable {}
