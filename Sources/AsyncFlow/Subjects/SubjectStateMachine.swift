/// The pure logic of a hot source: a subject (`PassthroughFlow`, `CurrentValueFlow`) or a shared
/// upstream (`shareFlow`). Every subscriber has its own buffer, filled under the buffering policy
/// and taken by the subscriber a whole batch at a time when unbounded, one element at a time when
/// bounded (so that the bound holds for what it receives).
///
/// For `shareFlow` the upstream's phase lives in the same `State` as the subscribers, under the
/// same lock: deciding to stop the upstream and registering a newcomer, or sending an element and
/// stopping, are each one step, so a subscriber arriving as the last one leaves keeps the upstream
/// and a stopped iteration cannot send a late element.
@usableFromInline
struct SubjectStateMachine<Element: Sendable, Failure: Error> {
  @usableFromInline typealias Continuation = UnsafeContinuation<Void, Never>

  @usableFromInline
  enum State {
    /// A subject: elements come from `send`, the end from `end(failure:)`.
    case subject
    /// `shareFlow`'s upstream is not running: never started, or stopped when the last subscriber
    /// left. The next subscriber's `next()` starts it.
    case idle
    /// The task of the upstream's iteration `generation` is being created.
    case starting(generation: Int)
    case running(generation: Int, task: Task<Void, Never>)
    /// The source ended: every subscriber drains its buffer, then sees the end; a later one ends
    /// at once. A share does not start again.
    case ended(failure: Failure?)
  }

  @usableFromInline
  struct Subscriber {
    @usableFromInline let id: Int
    @usableFromInline var buffer: [Element]
    @usableFromInline var consumer: Continuation?

    @inlinable
    init(id: Int, buffer: [Element], consumer: Continuation?) {
      self.id = id
      self.buffer = buffer
      self.consumer = consumer
    }
  }

  @usableFromInline var state: State
  @usableFromInline let policy: FlowBufferingPolicy
  @usableFromInline let replayLimit: Int
  /// `FlowReplayScope.acrossRestarts`: a stopped share keeps its replay for the next run.
  let keepsReplayWhenStopped: Bool
  /// Subscribers, with `indexByID` for O(1) removal (the last one moves into the gap).
  @usableFromInline var subscribers: [Subscriber] = []
  private var indexByID: [Int: Int] = [:]
  private var nextID = 0
  /// Tells the current upstream iteration from one still winding down after it was stopped.
  private var nextGeneration = 0
  /// The last `replayLimit` elements, given to each new subscriber first.
  @usableFromInline var replay: [Element] = []
  /// Tasks waiting until at least `count` subscribers are registered (`subscribers(count:)`).
  private var watchers: [(token: Int, count: Int, continuation: Continuation)] = []
  private var nextWatcherToken = 0

  /// A subject's machine.
  init(policy: FlowBufferingPolicy, replay: [Element] = [], replayLimit: Int) {
    self.state = .subject
    self.policy = policy
    self.replayLimit = replayLimit
    self.replay = replay
    self.keepsReplayWhenStopped = true
  }

  /// A `shareFlow` machine: its upstream starts at the first demand.
  init(sharingWith policy: FlowBufferingPolicy, replayLimit: Int, keepsReplayWhenStopped: Bool = false) {
    self.state = .idle
    self.policy = policy
    self.replayLimit = replayLimit
    self.keepsReplayWhenStopped = keepsReplayWhenStopped
  }

  var subscriberCount: Int { subscribers.count }

  @usableFromInline var isEnded: Bool {
    if case .ended = state { return true }
    return false
  }

  // MARK: Subscriber events

  /// Registers a subscriber; after the end it is registered with nothing to receive but the end.
  /// Returns its id, and the watchers that the new count satisfies, to be resumed.
  mutating func subscribe() -> (id: Int, resumeWatchers: [Continuation]) {
    let id = nextID
    nextID += 1
    indexByID[id] = subscribers.count
    subscribers.append(Subscriber(id: id, buffer: isEnded ? [] : replay, consumer: nil))
    guard !watchers.isEmpty else { return (id, []) }
    var satisfied: [Continuation] = []
    let count = subscribers.count
    watchers.removeAll { watcher in
      guard count >= watcher.count else { return false }
      satisfied.append(watcher.continuation)
      return true
    }
    return (id, satisfied)
  }

  // MARK: Watcher events (subscribers(count:))

  /// A token for a task about to wait for subscribers, so that its cancellation resumes that one.
  mutating func makeWatcherToken() -> Int {
    defer { nextWatcherToken += 1 }
    return nextWatcherToken
  }

  /// Registers a task waiting until at least `count` subscribers are registered; returns the
  /// continuation if it must resume at once (the count is reached, or the task was cancelled).
  mutating func watchSubscribers(
    count: Int, token: Int, _ continuation: Continuation, isCancelled: Bool
  ) -> Continuation? {
    guard !isCancelled, subscribers.count < count else { return continuation }
    watchers.append((token, count, continuation))
    return nil
  }

  /// The task of the watcher `token` was cancelled; returns its continuation if it still waits.
  mutating func watcherCancelled(_ token: Int) -> Continuation? {
    guard let index = watchers.firstIndex(where: { $0.token == token }) else { return nil }
    return watchers.remove(at: index).continuation
  }

  struct UnsubscribeAction {
    /// The leaving subscriber's waiting continuation.
    var resumeConsumer: Continuation?
    /// The upstream's task, when the last subscriber left.
    var cancelUpstream: Task<Void, Never>?
  }

  /// Removes a subscriber and frees its buffer. When it was the last, a share stops its upstream
  /// in the same step: a newcomer either came before (and the upstream stays) or comes after (and
  /// starts it again).
  mutating func unsubscribe(_ id: Int) -> UnsubscribeAction {
    guard let index = indexByID.removeValue(forKey: id) else { return UnsubscribeAction() }
    let removed = subscribers[index]
    let last = subscribers.count - 1
    if index != last {
      subscribers.swapAt(index, last)
      indexByID[subscribers[index].id] = index
    }
    subscribers.removeLast()
    var action = UnsubscribeAction(resumeConsumer: removed.consumer)
    guard subscribers.isEmpty else { return action }
    switch state {
    case .subject, .idle, .ended:
      break
    case .starting:
      // The task being created finds a newer state when it reports, and is cancelled then.
      state = .idle
    case .running(_, let task):
      state = .idle
      action.cancelUpstream = task
    }
    // Emptied here, not at the restart: a subscriber registering in between gets the replay.
    if case .idle = state, !keepsReplayWhenStopped { replay.removeAll() }
    return action
  }

  @usableFromInline
  enum NextAction {
    case deliver
    case suspend
    /// Start the share's upstream iteration `generation`, then ask again.
    case startUpstream(generation: Int)
    case end(Failure?)
  }

  /// The subscriber has used up `batch`; refills it with everything buffered for it.
  mutating func next(_ id: Int, swapping batch: inout [Element]) -> NextAction {
    batch.removeAll(keepingCapacity: true)
    guard let index = indexByID[id] else { return .end(nil) }
    if case .idle = state {
      let generation = nextGeneration
      nextGeneration += 1
      state = .starting(generation: generation)
      return .startUpstream(generation: generation)
    }
    if !subscribers[index].buffer.isEmpty {
      if policy.isBounded, subscribers[index].buffer.count > 1 {
        // One at a time: what the subscriber has not received stays in the buffer, where the
        // policy counts it. A whole batch would sit outside the bound, and the subscriber would
        // receive up to 2n - 1 elements, older ones among them, after falling behind. (A batch of
        // one is received at once: swapping it costs less, as for `CurrentValueFlow`.)
        batch.append(subscribers[index].buffer.removeFirst())
      } else {
        swap(&batch, &subscribers[index].buffer)
      }
      return .deliver
    }
    if case .ended(let failure) = state {
      _ = unsubscribe(id)
      return .end(failure)
    }
    return .suspend
  }

  /// Registers the waiting subscriber, or returns its continuation to be resumed at once.
  mutating func suspend(_ id: Int, _ continuation: Continuation) -> Continuation? {
    guard let index = indexByID[id], subscribers[index].buffer.isEmpty, !isEnded else { return continuation }
    subscribers[index].consumer = continuation
    return nil
  }

  // MARK: Subject events

  /// Buffers `element` for every subscriber; returns the ones to wake (no allocation if none waits).
  @inlinable
  mutating func send(_ element: Element) -> [Continuation] {
    switch state {
    case .subject:
      return deliver(element)
    case .ended:
      return []
    case .idle, .starting, .running:
      preconditionFailure("Internal inconsistency: state \(state), event send")
    }
  }

  /// Ends the subject: every subscriber drains its buffer, then sees the end.
  mutating func end(failure: Failure?) -> [Continuation] {
    switch state {
    case .subject:
      return end(with: failure)
    case .ended:
      return []
    case .idle, .starting, .running:
      preconditionFailure("Internal inconsistency: state \(state), event end")
    }
  }

  // MARK: Upstream events (shareFlow)

  /// The task of iteration `generation` exists; returns it if it must be cancelled at once (it was
  /// stopped, or superseded, while it was being created).
  mutating func upstreamStarted(_ task: Task<Void, Never>, generation: Int) -> Task<Void, Never>? {
    switch state {
    case .starting(generation):
      state = .running(generation: generation, task: task)
      return nil
    case .running(generation, _):
      preconditionFailure("Internal inconsistency: state \(state), event upstreamStarted(\(generation))")
    case .idle, .starting, .running, .ended:
      return task
    case .subject:
      preconditionFailure("Internal inconsistency: state subject, event upstreamStarted")
    }
  }

  /// Iteration `generation` produced `element`; returns the subscribers to wake, or `nil` if the
  /// iteration was stopped and must not deliver anything any more.
  mutating func upstreamElement(_ element: Element, generation: Int) -> [Continuation]? {
    switch state {
    case .starting(generation), .running(generation, _):
      return deliver(element)
    case .idle, .starting, .running, .ended:
      return nil
    case .subject:
      preconditionFailure("Internal inconsistency: state subject, event upstreamElement")
    }
  }

  /// Iteration `generation` finished or failed; ends the share unless that iteration was stopped.
  mutating func upstreamEnded(failure: Failure?, generation: Int) -> [Continuation] {
    switch state {
    case .starting(generation), .running(generation, _):
      return end(with: failure)
    case .idle, .starting, .running, .ended:
      return []
    case .subject:
      preconditionFailure("Internal inconsistency: state subject, event upstreamEnded")
    }
  }

  // MARK: Helpers

  @inlinable
  mutating func deliver(_ element: Element) -> [Continuation] {
    if replayLimit > 0 {
      if replay.count >= replayLimit { replay.removeFirst(replay.count - replayLimit + 1) }
      replay.append(element)
    }
    var waking: [Continuation] = []
    for index in subscribers.indices {
      policy.append(element, to: &subscribers[index].buffer)
      if let consumer = subscribers[index].consumer.take() { waking.append(consumer) }
    }
    return waking
  }

  private mutating func end(with failure: Failure?) -> [Continuation] {
    state = .ended(failure: failure)
    var waking: [Continuation] = []
    for index in subscribers.indices {
      if let consumer = subscribers[index].consumer.take() { waking.append(consumer) }
    }
    return waking
  }
}
