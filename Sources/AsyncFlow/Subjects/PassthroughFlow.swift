/// A hot source: values sent while nobody listens are dropped, and every subscriber gets every
/// value sent after it subscribed, in order, subject to its buffering policy. `send` is
/// synchronous, never blocks, and can be called from any isolation.
///
/// A subscriber is registered when its iterator is made, not at its first `next()`, so nothing
/// sent in between is lost. A slow subscriber never slows `send` or the other subscribers.
///
/// ```swift
/// let searchText = PassthroughFlow<String, Never>()
/// let results = searchText.debounceFlow(for: .milliseconds(300)).switchToLatestFlow { api.search($0) }
/// searchText.send("swift")
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
public final class PassthroughFlow<Element: Sendable, Failure: Error>: HotFlowSource {
  @usableFromInline let storage: SubjectStorage<Element, Failure>

  /// Creates a subject whose subscribers each buffer by `bufferingPolicy`. With an `owner`, the
  /// subject finishes when the owner closes, as by `finish()`, and the owner's shutdown waits for
  /// its `sink`s' deliveries (see ``FlowOwner``).
  ///
  /// ```swift
  /// let taps = PassthroughFlow<Void, Never>(bufferingPolicy: .bufferingNewest(1))
  /// let subject = PassthroughFlow<Int, AppError>()   // unread counts from a socket, until it fails
  /// let events = PassthroughFlow<String, Never>(owner: FlowOwner())   // a service's
  /// ```
  public init(bufferingPolicy: FlowBufferingPolicy = .unbounded, owner: FlowOwner? = nil) {
    storage = SubjectStorage(SubjectStateMachine(policy: bufferingPolicy, replayLimit: 0), owner: owner)
  }

  /// Delivers `element` to every current subscriber; ignored after the end.
  ///
  /// ```swift
  /// subject.send(42)
  /// ```
  @inlinable
  public func send(_ element: Element) {
    storage.send(element)
  }

  /// Ends every subscriber once it has drained what was already buffered for it; later
  /// subscribers finish at once.
  ///
  /// ```swift
  /// subject.finish()
  /// ```
  public func finish() {
    storage.end(failure: nil)
  }

  /// Fails every subscriber with `error` once it has drained its buffer; later subscribers fail
  /// at once.
  ///
  /// ```swift
  /// subject.fail(.offline)
  /// ```
  public func fail(_ error: Failure) {
    storage.end(failure: error)
  }

  /// Not API: see ``HotFlowSource``.
  ///
  /// ```swift
  /// _ = subject._subscribers
  /// ```
  @inlinable public var _subscribers: _HotFlowSubscribers<Element, Failure> { _HotFlowSubscribers(storage) }

  /// One subscription to a ``PassthroughFlow``: a ``HotFlowIterator``.
  ///
  /// ```swift
  /// for try await value in subject { print(value) }
  /// ```
  public typealias Iterator = HotFlowIterator<Element, Failure>
}
