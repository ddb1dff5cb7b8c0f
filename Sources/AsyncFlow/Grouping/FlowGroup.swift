/// One key's elements of a ``_Concurrency/AsyncSequence/grouped(by:bufferingLimit:)``: its `key`,
/// and the elements of that key as a sequence, iterated once. Releasing the group and its iterator,
/// or cancelling its consumer, lets it go: its buffer is released, and the key's next element
/// starts a new group.
///
/// ```swift
/// let events = PassthroughFlow<(user: String, action: String), Never>()
/// for await group in events.grouped(by: \.user) {
///   print("first event of \(group.key)")  // then hand `group` to that user's pipeline
/// }
/// var groups = events.grouped(by: \.user).makeAsyncIterator()
/// let group: FlowGroup<String, (user: String, action: String), Never>? = await groups.next()
/// ```
public struct FlowGroup<Key: Hashable & Sendable, Element: Sendable, Failure: Error>: AsyncSequence, Sendable {
  /// The key every element of this group has.
  ///
  /// ```swift
  /// let user = group?.key
  /// ```
  public let key: Key
  let handle: any FlowGroupSource<Element, Failure>

  init(key: Key, handle: any FlowGroupSource<Element, Failure>) {
    self.key = key
    self.handle = handle
  }

  /// Makes the group's one iterator; a second is a programmer error.
  ///
  /// ```swift
  /// var elements = group?.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    handle.makeIterator()
    return Iterator(handle: handle)
  }

  /// The iterator of a ``FlowGroup``.
  ///
  /// ```swift
  /// while let element = await elements?.next(isolation: #isolation) { print(element) }
  /// ```
  public struct Iterator: AsyncIteratorProtocol {
    let handle: any FlowGroupSource<Element, Failure>

    /// The group's next element; `nil` at the end, once the group left, or once the consumer's
    /// task is cancelled; throws the base's failure after the group's buffered elements.
    ///
    /// ```swift
    /// let element = await elements?.next(isolation: #isolation)
    /// ```
    public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await handle.next(isolation: actor)
    }

    /// The group's next element; see ``next(isolation:)``.
    ///
    /// ```swift
    /// let element = await elements?.next()
    /// ```
    public mutating func next() async throws(Failure) -> Element? {
      try await handle.next(isolation: nil)
    }
  }
}

@available(*, unavailable)
extension FlowGroup.Iterator: Sendable {}

/// A group's link to its operator, erased so that ``FlowGroup`` names no base type.
protocol FlowGroupSource<Element, Failure>: Sendable {
  associatedtype Element
  associatedtype Failure: Error
  func makeIterator()
  func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element?
}

/// Held by a group and its iterator: when the last of them is released, the group leaves.
final class FlowGroupHandle<Base: AsyncSequence & Sendable, Key: Hashable & Sendable>: FlowGroupSource
where Base.Element: Sendable {
  let id: Int
  let storage: GroupedStorage<Base, Key>

  init(id: Int, storage: GroupedStorage<Base, Key>) {
    self.id = id
    self.storage = storage
  }

  deinit {
    storage.groupLeave(id)
  }

  func makeIterator() {
    storage.makeGroupIterator(id)
  }

  func next(isolation actor: isolated (any Actor)?) async throws(Base.Failure) -> Base.Element? {
    try await storage.groupNext(id, isolation: actor)
  }
}
