/// A hot source with a current value: a new subscriber gets the current value first, then every
/// later one. A slow subscriber sees the latest value (conflated), never an older one after a newer
/// one. `value` can be read and written from any thread; writing it sends.
///
/// ```swift
/// enum Filter: Sendable { case all, unread }
/// let filter = CurrentValueFlow(Filter.all)
/// Task { for await current in filter { print(current) } }   // .all, then each change
/// filter.value = .unread
/// ```
///
/// ## Topics
///
/// ### Subscribing with no task while idle
///
/// - ``HotFlowSource/sink(receiveValue:)``
/// - ``HotFlowSource/sink(receiveCompletion:receiveValue:)``
/// - ``HotFlowSource/assignFlow(to:on:isolation:)``
/// - ``HotFlowSource/subscriberCount``
/// - ``HotFlowSource/subscribers(count:fileID:filePath:line:column:)``
public final class CurrentValueFlow<Element: Sendable>: HotFlowSource {
  /// How it can fail: `Never`.
  public typealias Failure = Never

  @usableFromInline let storage: SubjectStorage<Element, Never>

  /// Creates the source with its first value. With an `owner`, the source finishes when the
  /// owner closes, as by `finish()`, and the owner's shutdown waits for its `sink`s' deliveries
  /// (see ``FlowOwner``).
  ///
  /// ```swift
  /// let isOnline = CurrentValueFlow(true)
  /// let status = CurrentValueFlow("starting", owner: FlowOwner())   // a service's
  /// ```
  public init(_ value: Element, owner: FlowOwner? = nil) {
    storage = SubjectStorage(
      SubjectStateMachine(policy: .bufferingNewest(1), replay: [value], replayLimit: 1), owner: owner)
  }

  /// The current value; setting it sends the new value to every subscriber.
  ///
  /// ```swift
  /// isOnline.value.toggle()   // sends the new value
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
  @inlinable
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

  /// Not API: see ``HotFlowSource``.
  ///
  /// ```swift
  /// _ = filter._subscribers
  /// ```
  @inlinable public var _subscribers: _HotFlowSubscribers<Element, Never> { _HotFlowSubscribers(storage) }

  /// One subscription to a ``CurrentValueFlow``: a ``HotFlowIterator`` that returns the current
  /// value first, then the newest value each time one is sent.
  ///
  /// ```swift
  /// for await value in filter { print(value) }
  /// ```
  public typealias Iterator = HotFlowIterator<Element, Never>
}
