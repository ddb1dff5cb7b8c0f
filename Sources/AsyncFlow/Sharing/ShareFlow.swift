extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Shares one iteration of this sequence among many consumers.
  ///
  /// The upstream is iterated once, started by the first subscriber's first `next()` (or by a
  /// `sink` or `assignFlow` on the share, as it subscribes), and cancelled when the last
  /// subscriber leaves (a later subscriber starts it again). Every subscriber gets the elements
  /// sent after it subscribed, each buffered by `bufferingPolicy`; a late subscriber first gets
  /// the last `replay` elements. Once the upstream stopped and started again, `replayScope` says
  /// whether those include the previous run's: by default (`.whileRunning`) they do not. The
  /// upstream's finish or failure reaches every subscriber; a subscriber that comes after it ends
  /// at once.
  ///
  /// The upstream runs in the context (task-local values, priority) of the subscriber whose
  /// iteration or `sink` started it; with an `owner`, in the owner's, whoever subscribes (see
  /// ``FlowOwner``).
  ///
  /// The upstream's iterator is made when the upstream starts, so a hot upstream (a subject) has
  /// the share as subscriber from then on. Unlike the other operators, then, a share between a
  /// subject and a generic `sink` (`subject.shareFlow().map { ... }.sink { ... }`) subscribes to
  /// the subject only once the sink's task runs: a value sent right after that `sink` returns may
  /// not reach it. A `sink` on the share itself starts the upstream before it returns.
  ///
  /// ```swift
  /// let prices = api.priceUpdates().shareFlow(replay: 1)
  /// Task { for try await price in prices { print("chart", price) } }   // in one place
  /// Task { for try await price in prices { print("label", price) } }   // and in another, one connection
  /// ```
  ///
  /// With a `gracePeriod`, the last subscriber (an iterator, a `sink` or an `assignFlow`) leaving
  /// does not stop the upstream at once: it runs on for `gracePeriod` on `clock`. A subscriber
  /// that comes within it joins the running upstream and first gets the replay; one that comes
  /// later starts a new run (and, with `.whileRunning`, an empty replay). What the upstream sends
  /// during the grace period reaches the replay only. If it finishes or fails meanwhile, a later
  /// subscriber ends at once, as without a grace period. So a quick switch between two screens
  /// that watch one connection does not reconnect (Kotlin's `WhileSubscribed(stopTimeoutMillis)`,
  /// RxJava's `refCount(timeout)`):
  ///
  /// ```swift
  /// let quotes = api.priceUpdates().shareFlow(replay: 1, gracePeriod: .seconds(5))
  /// let list = quotes.sink { print("list", $0) }       // connects
  /// list.cancel()                                       // the connection stays open for 5 seconds
  /// let detail = quotes.sink { print("detail", $0) }   // within them: the same connection, the last quote first
  /// ```
  ///
  /// - Parameters:
  ///   - replay: How many of the last elements a new subscriber gets first; 0 or greater.
  ///   - replayScope: Whether the replay outlives a stop of the upstream.
  ///   - bufferingPolicy: What each subscriber keeps while it is slower than the upstream.
  ///   - gracePeriod: How long the upstream runs on after the last subscriber left; `.zero` or
  ///     greater. The default, `.zero`, stops it at once.
  ///   - clock: The clock of the grace period (a `TestClock` in tests); unused when it is `.zero`.
  ///   - owner: The ``FlowOwner`` that ends the share when it closes (its upstream cancelled, its
  ///     subscribers finished after what was buffered for them, a later one finished at once),
  ///     and whose shutdown waits until the upstream's task, the grace timer and the `sink`s'
  ///     deliveries have ended. `nil` (the default): the share lives as long as it is used.
  public func shareFlow(
    replay: Int = 0, replayScope: FlowReplayScope = .whileRunning, bufferingPolicy: FlowBufferingPolicy = .unbounded,
    gracePeriod: Duration = .zero, clock: some Clock<Duration> = ContinuousClock(), owner: FlowOwner? = nil
  ) -> AsyncShareFlowSequence<Element, Failure> {
    precondition(
      replay >= 0,
      "shareFlow(replay:replayScope:bufferingPolicy:gracePeriod:clock:owner:): replay must be 0 or greater, "
        + "got \(replay)")
    precondition(
      gracePeriod >= .zero,
      "shareFlow(replay:replayScope:bufferingPolicy:gracePeriod:clock:owner:): gracePeriod must be .zero or greater, "
        + "got \(gracePeriod)")
    return AsyncShareFlowSequence(
      base: self, replay: replay, replayScope: replayScope, bufferingPolicy: bufferingPolicy,
      gracePeriod: gracePeriod, clock: gracePeriod > .zero ? AnyFlowClock(clock) : nil, owner: owner)
  }
}

/// The sequence `shareFlow(replay:replayScope:bufferingPolicy:gracePeriod:clock:owner:)` returns: one
/// iteration of its upstream, shared by every iterator made from it (each iterator is one
/// subscriber). Copies share the same upstream.
///
/// ```swift
/// let prices: AsyncShareFlowSequence<Double, APIError> = api.priceUpdates().shareFlow(replay: 1)
/// for try await price in prices { print(price) }
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
public struct AsyncShareFlowSequence<Element: Sendable, Failure: Error>: HotFlowSource {
  @usableFromInline let storage: SubjectStorage<Element, Failure>

  init<Base: AsyncSequence & Sendable>(
    base: Base, replay: Int, replayScope: FlowReplayScope = .whileRunning, bufferingPolicy: FlowBufferingPolicy,
    gracePeriod: Duration = .zero, clock: AnyFlowClock? = nil, owner: FlowOwner? = nil
  ) where Base.Element == Element, Base.Failure == Failure {
    let machine = SubjectStorage<Element, Failure>.Machine(
      sharingWith: bufferingPolicy, replayLimit: replay, keepsReplayWhenStopped: replayScope == .acrossRestarts,
      hasGracePeriod: clock != nil)
    storage = SubjectStorage(machine, grace: clock.map { ($0, gracePeriod) }, owner: owner) {
      SubjectStorage.iteration(of: base)
    }
  }

  /// Not API: see ``HotFlowSource``.
  ///
  /// ```swift
  /// _ = prices._subscribers
  /// ```
  @inlinable public var _subscribers: _HotFlowSubscribers<Element, Failure> { _HotFlowSubscribers(storage) }

  /// One subscriber of a shared upstream, a ``HotFlowIterator``: releasing it, or cancelling its
  /// task, unsubscribes it, and the last one to leave stops the upstream.
  ///
  /// ```swift
  /// for try await price in prices { print(price) }
  /// ```
  public typealias Iterator = HotFlowIterator<Element, Failure>
}
