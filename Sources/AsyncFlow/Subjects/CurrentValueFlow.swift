/// A hot source with a current value: a new subscriber gets the current value first, then every
/// later one. A slow subscriber sees the latest value (conflated), never an older one after a newer
/// one. `value` can be read and written from any thread; writing it sends.
///
/// ```swift
/// let filter = CurrentValueFlow(Filter.all)
/// for await current in filter { render(current) }   // .all, then each change
/// filter.value = .unread
/// ```
public final class CurrentValueFlow<Element: Sendable>: AsyncSequence, Sendable {
  public typealias Failure = Never

  @usableFromInline let storage: SubjectStorage<Element, Never>

  /// Creates the source with its first value.
  ///
  /// ```swift
  /// let isOnline = CurrentValueFlow(true)
  /// ```
  public init(_ value: Element) {
    storage = SubjectStorage(SubjectStateMachine(policy: .bufferingNewest(1), replay: [value], replayLimit: 1))
  }

  /// The current value; setting it sends the new value to every subscriber.
  ///
  /// ```swift
  /// counter.value += 1
  /// ```
  public var value: Element {
    get { storage.state.withLock { $0.replay[0] } }
    set { send(newValue) }
  }

  /// Makes `element` the current value and delivers it to every subscriber; ignored after the end.
  ///
  /// ```swift
  /// isOnline.send(false)
  /// ```
  public func send(_ element: Element) {
    storage.send(element)
  }

  /// Ends every subscriber once it has taken its pending value; later subscribers finish at once.
  ///
  /// ```swift
  /// isOnline.finish()
  /// ```
  public func finish() {
    storage.end(failure: nil)
  }

  /// The number of subscribers right now.
  ///
  /// ```swift
  /// #expect(filter.subscriberCount == 1)
  /// ```
  public var subscriberCount: Int {
    storage.subscriberCount
  }

  /// Suspends until at least `count` subscribers are registered, or the calling task is
  /// cancelled: a barrier for tests, in place of polling ``subscriberCount``.
  ///
  /// ```swift
  /// let view = Task { for await filter in model.filter { render(filter) } }
  /// await model.filter.subscribers(count: 1)   // the view listens
  /// ```
  public func subscribers(count: Int) async {
    precondition(count >= 0, "CurrentValueFlow.subscribers(count:): count must be 0 or greater, got \(count)")
    await storage.subscribers(count: count)
  }

  /// Subscribes: the current value first, then every later one.
  ///
  /// ```swift
  /// var iterator = filter.makeAsyncIterator()
  /// let current = await iterator.next()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(subscriber: SubjectSubscriber(storage))
  }

  /// One subscription to a ``CurrentValueFlow``.
  ///
  /// ```swift
  /// for await value in filter { print(value) }
  /// ```
  public struct Iterator: AsyncIteratorProtocol {
    let subscriber: SubjectSubscriber<Element, Never>

    /// Returns the current value first, then the newest value each time one is sent.
    ///
    /// ```swift
    /// let value = await iterator.next(isolation: #isolation)
    /// ```
    public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
      await subscriber.next(isolation: actor)
    }

    /// Returns the next value; see ``next(isolation:)``.
    ///
    /// ```swift
    /// let value = await iterator.next()
    /// ```
    public mutating func next() async -> Element? {
      await subscriber.next(isolation: nil)
    }
  }
}

@available(*, unavailable)
extension CurrentValueFlow.Iterator: Sendable {}
