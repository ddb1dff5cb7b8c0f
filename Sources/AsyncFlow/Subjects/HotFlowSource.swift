/// A hot source that sinks subscribe to with no task of their own: ``PassthroughFlow``,
/// ``CurrentValueFlow`` and ``AsyncShareFlowSequence`` (the sequence `shareFlow` returns). Their
/// `sink` and `assignFlow` are written once, here; the library's three types are its only
/// conformances.
///
/// A sink on a hot source is registered before `sink` returns, and costs no task while nothing
/// arrives: it is a mailbox in the source's subscriber table (about 340 bytes, with its
/// subscription). What arrives waits there under the source's buffering policy, and one job drains
/// it on the closure's isolation while it holds values. These members are chosen at compile time
/// over the `AsyncSequence` ones (which iterate in a task) on the three types, and through a
/// generic `some HotFlowSource`.
///
/// ```swift
/// @MainActor final class Label {
///   var text = ""
///   func animate(_ text: String) async { self.text = text }
/// }
/// func show(_ prices: some HotFlowSource<Double, Never>, on label: Label) -> FlowSubscription {
///   prices.sink { @MainActor price in label.text = "\(price)" }
/// }
/// let label = await Label()
/// let subject = PassthroughFlow<Int, Never>()   // the source of the examples below
/// ```
public protocol HotFlowSource<Element, Failure>: AsyncSequence, Sendable where Element: Sendable {
  associatedtype Element
  associatedtype Failure

  /// Not API: the source's subscriber table, public only so that the members written once on
  /// this protocol reach it.
  ///
  /// ```swift
  /// _ = subject._subscribers
  /// ```
  var _subscribers: _HotFlowSubscribers<Element, Failure> { get }
}

/// Not API: a hot source's subscriber table, as ``HotFlowSource`` reaches it.
///
/// ```swift
/// _ = subject._subscribers
/// ```
public struct _HotFlowSubscribers<Element: Sendable, Failure: Error>: Sendable {
  @usableFromInline let storage: SubjectStorage<Element, Failure>

  @inlinable init(_ storage: SubjectStorage<Element, Failure>) {
    self.storage = storage
  }
}

/// One subscriber of a ``HotFlowSource``, made by its `makeAsyncIterator()`: the `Iterator` of
/// ``PassthroughFlow``, ``CurrentValueFlow`` and ``AsyncShareFlowSequence``. It is registered when
/// made, so nothing sent before its first `next()` is lost; releasing it, or cancelling its task,
/// unsubscribes it (the last subscriber of a share to leave stops the upstream).
///
/// ```swift
/// var iterator = subject.makeAsyncIterator()
/// subject.send(1)
/// let one = await iterator.next()  // 1
/// ```
public struct HotFlowIterator<Element: Sendable, Failure: Error>: _FlowIterator {
  @usableFromInline let subscriber: SubjectSubscriber<Element, Failure>

  @usableFromInline init(subscriber: SubjectSubscriber<Element, Failure>) {
    self.subscriber = subscriber
  }

  /// Returns the next element delivered to this subscriber, waiting for it if needed: a
  /// `PassthroughFlow`'s next value sent, a `CurrentValueFlow`'s current value first and then the
  /// newest each time one is sent, a share's replay and then what the upstream produces. `nil`
  /// after the end or when the task is cancelled; throws the source's failure.
  ///
  /// ```swift
  /// let value = try await iterator.next(isolation: #isolation)
  /// ```
  @inlinable
  public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    try await subscriber.next(isolation: actor)
  }

  /// How many of this subscriber's elements the source's buffering policy dropped, because it was
  /// slower than the source and its buffer full: the count so far, and the final one after its end
  /// or cancellation. 0 under `.unbounded`. Every element sent while it was subscribed was
  /// either received or counted here (a late subscriber's replay is received too).
  ///
  /// ```swift
  /// let ticks = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingOldest(2))
  /// var reader = ticks.makeAsyncIterator()
  /// for tick in 1...5 { ticks.send(tick) }
  /// let first = await reader.next()   // 1
  /// print(reader.droppedCount)        // 3: 3, 4 and 5 found the buffer full
  /// ```
  public var droppedCount: Int {
    subscriber.droppedCount
  }
}

@available(*, unavailable)
extension HotFlowIterator: Sendable {}

extension HotFlowSource {
  /// Subscribes, and is registered at once, before its first `next()`:
  /// - a ``PassthroughFlow``: values sent from now on are buffered for this iterator;
  /// - a ``CurrentValueFlow``: the current value first, then every later one;
  /// - an ``AsyncShareFlowSequence``: the last `replay` elements first, then everything the upstream
  ///   produces from now on. The upstream starts at the first `next()` of any subscriber, or when a
  ///   sink subscribes.
  ///
  /// ```swift
  /// var iterator = subject.makeAsyncIterator()
  /// subject.send(1)
  /// let one = await iterator.next()  // 1
  /// ```
  public func makeAsyncIterator() -> HotFlowIterator<Element, Failure> {
    HotFlowIterator(subscriber: SubjectSubscriber(_subscribers.storage))
  }

  /// Calls `receiveValue` with every value this source delivers to a new subscriber, in order, on
  /// the closure's own isolation, with no task while nothing arrives:
  /// - a ``PassthroughFlow``: every value sent from now on;
  /// - a ``CurrentValueFlow``: the current value first, then every later one; a slow closure
  ///   receives the latest value, never an older one after a newer one;
  /// - an ``AsyncShareFlowSequence``: the replay, then every element, starting the shared upstream
  ///   if it is not running. The sink counts in ``subscriberCount``; cancelling or releasing its
  ///   subscription stops the upstream when it was the last subscriber.
  ///
  /// The closure runs in the context (task-local values, priority) of the `send` that found the
  /// sink idle, since no task of the caller's is kept for it. To run it in the caller's context,
  /// erase the source first, `subject.eraseToFlow().sink { ... }`: the sequence's `sink` then
  /// keeps a task of its own, started here.
  ///
  /// This overload takes a closure that awaits; a closure that does not `await` picks the
  /// synchronous overload, which delivers the same values for less per value.
  ///
  /// ```swift
  /// let taps = PassthroughFlow<Int, Never>()
  /// let subscription = taps.sink { @MainActor count in await label.animate("\(count)") }
  /// taps.send(1)   // delivered on the main actor
  /// enum Filter: Sendable { case all, unread }
  /// let filter = CurrentValueFlow(Filter.all)
  /// let listing = filter.sink { current in await label.animate("\(current)") }   // .all first
  /// ```
  @inlinable
  public func sink(receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void) -> FlowSubscription {
    _subscribers.storage.subscribe(.sink(value: receiveValue, completion: { _ in }))
  }

  /// Calls the synchronous `receiveValue` as `sink(receiveValue:)` calls its asynchronous
  /// one: the same values, in order, on the closure's own isolation. A closure that does not
  /// `await` picks this overload; the drain calls it with no async frame of its own per value.
  ///
  /// ```swift
  /// let prices = api.priceUpdates().shareFlow(replay: 1)
  /// let priceLabel = prices.sink { @MainActor price in label.text = "\(price)" }
  /// ```
  @inlinable
  public func sink(receiveValue: @escaping @Sendable @isolated(any) (Element) -> Void) -> FlowSubscription {
    _subscribers.storage.subscribe(.syncSink(value: receiveValue, completion: { _ in }))
  }

  /// Like `sink(receiveValue:)`, and reports the end (`finish()`, `fail(_:)`, or the
  /// shared upstream's finish or failure) to `receiveCompletion` once, after every value delivered
  /// before it, unless the subscription was cancelled first. This overload takes closures that
  /// await; when neither closure awaits, the synchronous overload is picked.
  ///
  /// ```swift
  /// let uploads = PassthroughFlow<Double, APIError>()   // an upload's progress, from 0 to 1
  /// let progress = uploads.sink { completion in
  ///   if case .failure(let error) = completion { print(error) }
  /// } receiveValue: { fraction in
  ///   await label.animate("\(Int(fraction * 100)) %")
  /// }
  /// ```
  @inlinable
  public func sink(
    receiveCompletion: @escaping @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void,
    receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void
  ) -> FlowSubscription {
    _subscribers.storage.subscribe(.sink(value: receiveValue, completion: receiveCompletion))
  }

  /// Like `sink(receiveCompletion:receiveValue:)`, with synchronous closures: picked when
  /// neither closure awaits. Each value is delivered with no async frame of its own.
  ///
  /// ```swift
  /// let subscription = filter.sink { _ in print("done") } receiveValue: { print($0) }
  /// ```
  @inlinable
  public func sink(
    receiveCompletion: @escaping @Sendable @isolated(any) (FlowCompletion<Failure>) -> Void,
    receiveValue: @escaping @Sendable @isolated(any) (Element) -> Void
  ) -> FlowSubscription {
    _subscribers.storage.subscribe(.syncSink(value: receiveValue, completion: receiveCompletion))
  }

  /// The number of subscribers right now: iterators made, and sinks subscribed, not yet released,
  /// cancelled or ended; a cancelled or released one is removed at once. A share with none runs
  /// its upstream only during its grace period.
  ///
  /// ```swift
  /// #expect(prices.subscriberCount == 0)   // the upstream is stopped
  /// ```
  public var subscriberCount: Int {
    _subscribers.storage.subscriberCount
  }

  /// Suspends until at least `count` subscribers are registered, or the calling task is
  /// cancelled: a barrier for tests, in place of polling ``subscriberCount``.
  ///
  /// On a test clock's schedule (`@Test(.onTestClock)`, `withTestClock`, `clock.task`), the clock
  /// runs meanwhile, and when it is idle with fewer subscribers, nothing it can see will bring
  /// more: this records an issue naming the count it waited for and the subscribers there are
  /// (`PassthroughFlow<Int, Never>.subscribers(count: 1): 0 subscribers`), and returns, as the
  /// testing library's own barriers do.
  ///
  /// ```swift
  /// let consumer = Task { await subject.prefix(2).reduce(into: []) { $0.append($1) } }
  /// await subject.subscribers(count: 1)   // the consumer listens: nothing sent now is lost
  /// subject.send(1)
  /// subject.send(2)
  /// ```
  public func subscribers(
    count: Int, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column
  ) async {
    precondition(count >= 0, "\(Self.self).subscribers(count:): count must be 0 or greater, got \(count)")
    let storage = _subscribers.storage
    let name = "\(Self.self)"
    await FlowScheduling.barrier(
      {
        let there = storage.subscriberCount
        return "\(name).subscribers(count: \(count)): \(there) subscriber\(there == 1 ? "" : "s")"
      }, isMet: { storage.subscriberCount >= count }, wait: { await storage.subscribers(count: count) },
      fileID: fileID, filePath: filePath, line: line, column: column)
  }
}

extension HotFlowSource where Failure == Never {
  /// Writes every value this source delivers to a new subscriber (as `sink(receiveValue:)`
  /// lists them) into `object`'s property at `keyPath`, on the caller's isolation, holding
  /// `object` weakly; as ``_Concurrency/AsyncSequence/assignFlow(to:on:isolation:)``, with no task
  /// while nothing arrives (the values wait in a mailbox drained on that isolation). On a share it
  /// starts the upstream as a sink does.
  ///
  /// ```swift
  /// @MainActor final class Model {
  ///   var query = ""
  ///   var subscriptions = Set<FlowSubscription>()
  ///   func bind(_ queries: PassthroughFlow<String, Never>) {
  ///     queries.assignFlow(to: \.query, on: self).store(in: &subscriptions)
  ///   }
  /// }
  /// ```
  @inlinable
  public func assignFlow<Root: AnyObject & Sendable>(
    to keyPath: ReferenceWritableKeyPath<Root, Element>, on object: Root,
    isolation: isolated (any Actor)? = #isolation
  ) -> FlowSubscription {
    let target = AssignTarget(object: object, keyPath: keyPath)
    return _subscribers.storage.subscribe(
      .assign(isolation: isolation) { value, isolation in target.write(value, isolation: isolation) }, gate: target.gate)
  }
}
