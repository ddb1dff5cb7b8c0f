/// The pure logic of a hot source: every subscriber has its own buffer, filled by `send` under its
/// buffering policy and taken by the subscriber a whole batch at a time.
@usableFromInline
struct SubjectStateMachine<Element: Sendable, Failure: Error> {
  @usableFromInline typealias Continuation = UnsafeContinuation<Void, Never>

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

  @usableFromInline let policy: FlowBufferingPolicy
  @usableFromInline let replayLimit: Int
  /// Subscribers, with `indexByID` for O(1) removal (the last one moves into the gap).
  @usableFromInline var subscribers: [Subscriber] = []
  private var indexByID: [Int: Int] = [:]
  private var nextID = 0
  /// The last `replayLimit` elements, given to each new subscriber first.
  @usableFromInline var replay: [Element] = []
  @usableFromInline var ended = false
  private var failure: Failure?

  init(policy: FlowBufferingPolicy, replay: [Element] = [], replayLimit: Int) {
    self.policy = policy
    self.replayLimit = replayLimit
    self.replay = replay
  }

  var subscriberCount: Int { subscribers.count }

  /// Registers a subscriber; after the end it is registered with nothing to receive but the end.
  mutating func subscribe() -> Int {
    let id = nextID
    nextID += 1
    indexByID[id] = subscribers.count
    subscribers.append(Subscriber(id: id, buffer: ended ? [] : replay, consumer: nil))
    return id
  }

  /// Removes a subscriber and frees its buffer; returns its waiting continuation, if any.
  mutating func unsubscribe(_ id: Int) -> Continuation? {
    guard let index = indexByID.removeValue(forKey: id) else { return nil }
    let removed = subscribers[index]
    let last = subscribers.count - 1
    if index != last {
      subscribers.swapAt(index, last)
      indexByID[subscribers[index].id] = index
    }
    subscribers.removeLast()
    return removed.consumer
  }

  /// Buffers `element` for every subscriber; returns the ones to wake (no allocation if none waits).
  @inlinable
  mutating func send(_ element: Element) -> [Continuation] {
    guard !ended else { return [] }
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

  /// Ends the source: every subscriber drains its buffer, then sees the end.
  mutating func end(failure: Failure?) -> [Continuation] {
    guard !ended else { return [] }
    ended = true
    self.failure = failure
    var waking: [Continuation] = []
    for index in subscribers.indices {
      if let consumer = subscribers[index].consumer.take() { waking.append(consumer) }
    }
    return waking
  }

  @usableFromInline
  enum NextAction {
    case deliver
    case suspend
    case end(Failure?)
  }

  /// The subscriber has used up `batch`; refills it with everything buffered for it.
  mutating func next(_ id: Int, swapping batch: inout [Element]) -> NextAction {
    batch.removeAll(keepingCapacity: true)
    guard let index = indexByID[id] else { return .end(nil) }
    if !subscribers[index].buffer.isEmpty {
      swap(&batch, &subscribers[index].buffer)
      return .deliver
    }
    if ended {
      _ = unsubscribe(id)
      return .end(failure)
    }
    return .suspend
  }

  /// Registers the waiting subscriber, or returns its continuation to be resumed at once.
  mutating func suspend(_ id: Int, _ continuation: Continuation) -> Continuation? {
    guard let index = indexByID[id], subscribers[index].buffer.isEmpty, !ended else { return continuation }
    subscribers[index].consumer = continuation
    return nil
  }
}
