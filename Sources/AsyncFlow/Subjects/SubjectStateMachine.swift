/// The pure logic of a hot source: a subject (`PassthroughFlow`, `CurrentValueFlow`) or a shared
/// upstream (`shareFlow`). Every subscriber has its own buffer, filled under the buffering policy
/// and taken by the subscriber a whole batch at a time when unbounded, one element at a time when
/// bounded (so that the bound holds for what it receives).
///
/// A push subscriber (a `sink` or `assignFlow` on the source) has a mailbox instead of a waiting
/// consumer: an element buffered for it while no drain runs returns "start a drain", and the drain
/// takes batches through ``take(_:swapping:)`` until that event, under the same lock as `send`,
/// finds nothing left and marks the mailbox idle. So a value sent while the drain ends either is in
/// its last batch or starts the next drain: none waits in an idle mailbox.
///
/// No user value is released inside an event: what leaves the state (an element a policy drops, an
/// evicted replay entry, a leaving subscriber's buffer) is returned in the action, for the storage
/// to let go after its lock, and a batch handed to an event must be empty (its elements were
/// released by the caller before locking). An element's `deinit` may call back into the source.
///
/// One machine for subjects and shares: a share is a subject whose elements come from an upstream
/// task (its events, in `Sharing/SubjectStateMachine+Share.swift`). The upstream's phase lives in
/// the same `State` as the subscribers, under the same lock: deciding to stop the upstream and
/// registering a newcomer, or sending an element and stopping, are each one step, so a subscriber
/// arriving as the last one leaves keeps the upstream and a stopped iteration cannot send a late
/// element.
///
/// Pure: it never locks, resumes, starts or cancels. The waiters (a parked iterator's and a
/// `subscribers(count:)` caller's continuation), the tasks and the mailboxes are generic, so that
/// its grid is a table of plain values; ``SubjectStorage`` uses continuations, `Task`s and
/// ``SubjectMailbox`` objects (hashed by identity).
@usableFromInline
struct SubjectStateMachine<Element: Sendable, Failure: Error, Waiter, Work, Mailbox: Hashable> {
  /// The source's phase. The subscribers, which every phase has, are the table ``subscribers``
  /// beside it: held in the enum's payloads, each event had to move the table out and back (the
  /// `modifying` idiom), and `send` cost 5.8 times as much (measured on `W2.passthrough1`: 560 ns
  /// against 96).
  @usableFromInline
  enum State {
    /// Taking elements: a subject's `send`, or a share's upstream (see ``Upstream``).
    case open(Upstream)
    /// The source ended: every subscriber drains its buffer, then sees the end; a later one ends
    /// at once. A share does not start again.
    case ended(failure: Failure?)
  }

  @usableFromInline
  struct Subscriber {
    @usableFromInline let id: Int
    @usableFromInline var buffer: RingBuffer<Element>
    @usableFromInline var consumer: Waiter?
    /// What the buffering policy dropped of this subscriber's elements.
    @usableFromInline var dropped = 0
  }

  /// Whether a push subscriber's mailbox has a drain; idle, it costs its entry and its mailbox, no
  /// task, and the next element starts one.
  @usableFromInline
  enum MailboxPhase {
    case idle
    /// Drain `id` serves the mailbox. Its task is `nil` until the storage, having started it outside
    /// the lock, reports it (`drainStarted`): leaving cancels that task, so that the closure call in
    /// progress sees the cancellation, as a task-based sink's does.
    case draining(id: Int, task: Work?)
  }

  /// A drain for the storage to start, outside the lock, then report with `drainStarted`.
  @usableFromInline typealias StartDrain = (mailbox: Mailbox, id: Int)

  @usableFromInline
  struct PushSubscriber {
    @usableFromInline let mailbox: Mailbox
    @usableFromInline var buffer: RingBuffer<Element>
    @usableFromInline var phase: MailboxPhase
    /// What the buffering policy dropped of this subscriber's elements.
    @usableFromInline var dropped = 0
  }

  @usableFromInline
  struct Subscribers {
    /// Iterators and push subscribers, each with its index by key (id, mailbox) for O(1) removal.
    @usableFromInline var iterators: [Subscriber] = []
    @usableFromInline var indexByID: [Int: Int] = [:]
    @usableFromInline var push: [PushSubscriber] = []
    @usableFromInline var pushIndex: [Mailbox: Int] = [:]
    /// The last `replayLimit` elements, given to each new subscriber first.
    @usableFromInline var replay = RingBuffer<Element>()
    /// The callers of `subscribers(count:)`.
    var watchers = CountWatcherList<Waiter>()
    /// Drains whose subscriber left before their task was reported: cancelled when it is.
    var drainsLeftBeforeStart: Set<Int> = []
    /// Drains delivering the end (their subscriber is out of the table), with their task once
    /// reported: the subscriber leaving meanwhile cancels it, as it cancels a draining one, so that
    /// a completion closure in progress sees the cancellation.
    @usableFromInline var completing: [Mailbox: (id: Int, task: Work?)] = [:]
    var nextID = 0
    /// Tells a drain from the mailbox's later ones, when its task is reported after it ended.
    @usableFromInline var nextDrainID = 0
    /// The drop counts of subscribers out of the table (ended, cancelled, left) that dropped
    /// something, kept until their iterator or subscription is released: a count stays readable
    /// after the end, whichever path removed the entry (a cancellation handler's, on another
    /// thread, included).
    var departedIterators: [Int: Int] = [:]
    var departedPush: [Mailbox: Int] = [:]

    @usableFromInline var count: Int { iterators.count + push.count }

    /// Moves what `buffer` holds for a subscriber into its empty `batch`; `false` if it holds nothing.
    @inlinable
    static func move(from buffer: inout RingBuffer<Element>, to batch: inout RingBuffer<Element>, isBounded: Bool)
      -> Bool
    {
      guard !buffer.isEmpty else { return false }
      if isBounded, buffer.count > 1 {
        // One at a time: what the subscriber has not received stays in the buffer, where the policy
        // counts it. A whole batch would sit outside the bound, and the subscriber would receive up to
        // 2n - 1 elements, older ones among them, after falling behind. (A batch of one is received
        // at once: swapping it costs less, as for `CurrentValueFlow`.)
        batch.append(buffer.popFirst()!)
      } else {
        swap(&batch, &buffer)
      }
      return true
    }

    @inlinable
    mutating func deliver(_ element: Element, policy: FlowBufferingPolicy, replayLimit: Int) -> SendAction {
      var action = SendAction()
      if replayLimit > 0 {
        while replay.count >= replayLimit { action.released.append(replay.popFirst()!) }
        replay.append(element)
      }
      for index in iterators.indices {
        let dropped = policy.append(element, to: &iterators[index].buffer, releasing: &action.released)
        if dropped != 0 {
          iterators[index].dropped &+= dropped
          action.dropped &+= dropped
        }
        if let consumer = iterators[index].consumer.take() { action.resume.append(consumer) }
      }
      for index in push.indices {
        let dropped = policy.append(element, to: &push[index].buffer, releasing: &action.released)
        if dropped != 0 {
          push[index].dropped &+= dropped
          action.dropped &+= dropped
        }
        // `bufferingNewest(0)` keeps nothing: then there is nothing to drain either.
        if case .idle = push[index].phase, !push[index].buffer.isEmpty {
          action.startDrains.append(beginDrain(at: index))
        }
      }
      return action
    }

    /// Marks the idle mailbox at `index` as served by a new drain, for the storage to start.
    @inlinable
    mutating func beginDrain(at index: Int) -> StartDrain {
      let id = nextDrainID
      nextDrainID &+= 1
      push[index].phase = .draining(id: id, task: nil)
      return (push[index].mailbox, id)
    }

    /// Removes the entry of `key`, moving the last one into its gap.
    @inlinable
    static func remove<Key: Hashable, Entry>(
      _ key: Key, from entries: inout [Entry], _ index: inout [Key: Int], keyOf: (Entry) -> Key
    ) -> Entry? {
      guard let position = index.removeValue(forKey: key) else { return nil }
      if position != entries.count - 1 {
        entries.swapAt(position, entries.count - 1)
        index[keyOf(entries[position])] = position
      }
      return entries.removeLast()
    }

    /// Removes an iterator's entry; its drop count, if any, is kept (``departedIterators``).
    @usableFromInline
    mutating func removeIterator(_ id: Int) -> Subscriber? {
      let removed = Self.remove(id, from: &iterators, &indexByID) { $0.id }
      if let removed, removed.dropped != 0 { departedIterators[id] = removed.dropped }
      return removed
    }

    /// Removes a push subscriber's entry; its drop count, if any, is kept (``departedPush``).
    @usableFromInline
    mutating func removePush(_ mailbox: Mailbox) -> PushSubscriber? {
      let removed = Self.remove(mailbox, from: &push, &pushIndex) { $0.mailbox }
      if let removed, removed.dropped != 0 { departedPush[mailbox] = removed.dropped }
      return removed
    }
  }

  /// What an element, or the end, asks of the storage once the lock is released.
  @usableFromInline
  struct SendAction {
    @usableFromInline var resume: [Waiter] = []
    /// Mailboxes that were idle and now have something to take: start one drain for each.
    @usableFromInline var startDrains: [StartDrain] = []
    /// What the buffering policies dropped and the replay evicted: released after the lock.
    @usableFromInline var released = ReleasedElements<Element>()
    /// How many elements the buffering policy dropped, over every subscriber: reported to the
    /// policy's drop handler after the lock.
    @usableFromInline var dropped = 0
    /// The grace timer of a share whose upstream ended while nobody listened.
    @usableFromInline var cancelGraceTimer: Work?

    @inlinable init() {}

    var isEmpty: Bool { resume.isEmpty && startDrains.isEmpty && released.isEmpty && cancelGraceTimer == nil }
  }

  @usableFromInline var state = State.open(.idle)
  @usableFromInline var subscribers = Subscribers()
  @usableFromInline let policy: FlowBufferingPolicy
  @usableFromInline let replayLimit: Int
  /// `FlowReplayScope.acrossRestarts`: a stopped share keeps its replay for the next run.
  let keepsReplayWhenStopped: Bool
  /// `shareFlow(gracePeriod:)` greater than zero: the last subscriber leaving starts a grace timer
  /// instead of stopping the upstream.
  let hasGracePeriod: Bool
  /// Tells the current upstream iteration from one still winding down after it was stopped.
  var nextGeneration = 0
  /// Tells the current grace timer from an older one.
  var nextGraceTimer = 0

  /// A `shareFlow` machine: its upstream starts at the first demand.
  init(
    sharingWith policy: FlowBufferingPolicy, replayLimit: Int, keepsReplayWhenStopped: Bool = false,
    hasGracePeriod: Bool = false
  ) {
    self.policy = policy
    self.replayLimit = replayLimit
    self.keepsReplayWhenStopped = keepsReplayWhenStopped
    self.hasGracePeriod = hasGracePeriod
  }

  init(policy: FlowBufferingPolicy, replay: [Element] = [], replayLimit: Int) {
    self.init(sharingWith: policy, replayLimit: replayLimit, keepsReplayWhenStopped: true)
    self.state = .open(.subject)
    self.subscribers.replay = RingBuffer(replay)
  }

  // MARK: Reading the state

  var isEnded: Bool {
    if case .ended = state { return true }
    return false
  }
  var replay: RingBuffer<Element> { subscribers.replay }
  var pushSubscribers: [PushSubscriber] { subscribers.push }
  var subscriberCount: Int { subscribers.count }

  /// The mailboxes that have a drain scheduled or running: 0 when every push subscriber is idle.
  var drainingCount: Int {
    subscribers.push.count {
      if case .draining = $0.phase { return true }
      return false
    }
  }

  /// What the buffering policy has dropped of iterator `id`'s elements, in the table or out of it.
  func dropped(_ id: Int) -> Int {
    subscribers.indexByID[id].map { subscribers.iterators[$0].dropped } ?? subscribers.departedIterators[id] ?? 0
  }

  /// What the buffering policy has dropped of `mailbox`'s elements, in the table or out of it.
  func dropped(_ mailbox: Mailbox) -> Int {
    subscribers.pushIndex[mailbox].map { subscribers.push[$0].dropped } ?? subscribers.departedPush[mailbox] ?? 0
  }

  /// The iterator `id` is released: its count is no longer read.
  mutating func forgetDrops(_ id: Int) {
    subscribers.departedIterators[id] = nil
  }

  /// The subscription of `mailbox` is released: its count is no longer read. Returns the mailbox
  /// the table let go of, to be released after the lock (it holds the sink's closures).
  mutating func forgetDrops(_ mailbox: Mailbox) -> Mailbox? {
    subscribers.departedPush.removeEntry(mailbox)?.key
  }

  // MARK: Subscriber events

  /// What a newcomer asks of the storage once the lock is released.
  struct SubscribeAction {
    /// An iterator's id (a push subscriber is known by its mailbox).
    var id = 0
    /// The watchers that the new count satisfies.
    var resumeWatchers: [Waiter]
    /// The subscriber came during a share's grace period (it joins the running upstream): the
    /// timer to cancel.
    var cancelGraceTimer: Work?
    /// A push subscriber found the share idle: start its upstream iteration `generation`, as an
    /// iterator's first `next()` does (a push subscriber asks at once).
    var startUpstream: Int?
    /// The mailbox has the replay (a `CurrentValueFlow`'s current value) or the end to take.
    var startDrain: StartDrain?
  }

  /// Registers an iterator with the replay to receive; after the end, with nothing but the end.
  mutating func subscribe() -> SubscribeAction {
    let id = subscribers.nextID
    subscribers.nextID += 1
    subscribers.indexByID[id] = subscribers.iterators.count
    subscribers.iterators.append(Subscriber(id: id, buffer: newcomerBuffer, consumer: nil))
    return joined(id: id)
  }

  /// Registers a push subscriber as `subscribe()` registers an iterator, the replay in its mailbox.
  mutating func subscribe(_ mailbox: Mailbox) -> SubscribeAction {
    guard subscribers.pushIndex[mailbox] == nil else {
      preconditionFailure("Internal inconsistency: state \(state), event subscribe(mailbox) twice")
    }
    let buffer = newcomerBuffer
    subscribers.pushIndex[mailbox] = subscribers.push.count
    subscribers.push.append(PushSubscriber(mailbox: mailbox, buffer: buffer, phase: .idle))
    var action = joined()
    if isEnded || !buffer.isEmpty { action.startDrain = subscribers.beginDrain(at: subscribers.push.count - 1) }
    if case .open(.idle) = state { action.startUpstream = startGeneration() }
    return action
  }

  private var newcomerBuffer: RingBuffer<Element> { isEnded ? RingBuffer() : subscribers.replay }

  private mutating func joined(id: Int = 0) -> SubscribeAction {
    SubscribeAction(id: id, resumeWatchers: subscribers.watchers.reached(subscribers.count), cancelGraceTimer: rejoin())
  }

  /// What a leaving subscriber, or a share's expired grace period, asks of the storage. What leaves
  /// the state here (buffer, replay, mailbox) is released when the action goes, after the lock.
  struct UnsubscribeAction {
    /// The leaving subscriber's waiting continuation.
    var resumeConsumer: Waiter?
    /// The upstream's task, when the last subscriber left or the grace period expired (`nil` while
    /// it is being created: cancelled when it reports).
    var cancelUpstream: Work?
    /// The task of the leaving push subscriber's drain, if one runs.
    var cancelDrain: Work?
    /// The leaving subscriber's undelivered elements.
    var releasedBuffer = RingBuffer<Element>()
    /// The replay a stopped share emptied.
    var releasedReplay = RingBuffer<Element>()
    /// The leaving push subscriber's mailbox, which holds its closures.
    var releasedMailbox: Mailbox?
    /// The last subscriber left a share with a grace period whose upstream's task is known: the
    /// grace timer to start, then report with `graceTimerStarted`.
    var startGraceTimer: StartGraceTimer?
  }

  /// Removes a subscriber and frees its buffer (the last one stops a share's upstream).
  mutating func unsubscribe(_ id: Int) -> UnsubscribeAction {
    guard let removed = subscribers.removeIterator(id) else { return UnsubscribeAction() }
    var action = UnsubscribeAction(resumeConsumer: removed.consumer, releasedBuffer: removed.buffer)
    stopIfNobodyListens(&action)
    return action
  }

  /// Removes a push subscriber (cancelled, or released); its drain, if one runs, is cancelled (a
  /// drain whose task is still being created is cancelled when it reports) and finds it gone at
  /// its next take. As for an iterator, the last one to leave stops a share's upstream.
  mutating func unsubscribe(_ mailbox: Mailbox) -> UnsubscribeAction {
    guard let removed = subscribers.removePush(mailbox) else {
      // Its drain may be delivering the end: cancelled, or, not reported yet, when it is.
      guard let (key, (id, task)) = subscribers.completing.removeEntry(mailbox) else { return UnsubscribeAction() }
      if case .none = task { subscribers.drainsLeftBeforeStart.insert(id) }
      return UnsubscribeAction(cancelDrain: task, releasedMailbox: key)
    }
    var action = UnsubscribeAction(releasedBuffer: removed.buffer, releasedMailbox: removed.mailbox)
    switch removed.phase {
    case .draining(let id, .none): subscribers.drainsLeftBeforeStart.insert(id)
    case .draining(_, .some(let task)): action.cancelDrain = task
    case .idle: break
    }
    stopIfNobodyListens(&action)
    return action
  }

  // MARK: Drain events (push subscribers)

  /// The task of drain `id` exists; returns it if it must be cancelled at once (its subscriber left
  /// while it was being created).
  @usableFromInline
  mutating func drainStarted(_ mailbox: Mailbox, id: Int, task: Work) -> Work? {
    if subscribers.drainsLeftBeforeStart.remove(id) != nil { return task }
    guard let index = subscribers.pushIndex[mailbox] else {
      // The drain took the end and removed the subscriber: it is delivering the end.
      if case (id, .none)? = subscribers.completing[mailbox] { subscribers.completing[mailbox] = (id, task) }
      return nil
    }
    switch subscribers.push[index].phase {
    case .draining(id, .none):
      subscribers.push[index].phase = .draining(id: id, task: task)
    case .draining(id, .some):
      preconditionFailure("Internal inconsistency: state drain \(id) running, event drainStarted(\(id))")
    case .idle, .draining:
      break  // that drain has already found the mailbox empty and ended (another may serve it now)
    }
    return nil
  }

  @usableFromInline
  enum DrainAction {
    /// Deliver the batch, then take again.
    case deliver
    /// Nothing is left: the mailbox is idle again and the drain ends (the next element starts
    /// another).
    case idle
    /// The subscriber was cancelled: the drain ends, delivering nothing more.
    case stop
    /// The source ended and the mailbox is empty: deliver the end, once; the subscriber is removed.
    case complete(Failure?)
  }

  /// The drain of `mailbox` has delivered `batch`, which is empty; refills it with what is
  /// buffered, or decides, in this one step, that the drain ends.
  @inlinable
  mutating func take(_ mailbox: Mailbox, swapping batch: inout RingBuffer<Element>) -> DrainAction {
    guard batch.isEmpty else {
      preconditionFailure("Internal inconsistency: state \(state), event take with a batch not released")
    }
    guard let index = subscribers.pushIndex[mailbox] else { return .stop }
    guard case .draining = subscribers.push[index].phase else {
      preconditionFailure("Internal inconsistency: state mailbox idle, event take")
    }
    if Subscribers.move(from: &subscribers.push[index].buffer, to: &batch, isBounded: policy.isBounded) {
      return .deliver
    }
    if case .ended(let failure) = state {
      // Nothing is released: the buffer is empty and the drain holds the mailbox.
      if case .draining(let id, let task)? = subscribers.removePush(mailbox)?.phase {
        subscribers.completing[mailbox] = (id, task)
      }
      return .complete(failure)
    }
    subscribers.push[index].phase = .idle
    return .idle
  }

  /// The drain of `mailbox` has delivered the end (or had no completion to deliver); returns the
  /// mailbox it let go of, to be released after the lock.
  mutating func endDelivered(_ mailbox: Mailbox) -> Mailbox? {
    subscribers.completing.removeEntry(mailbox)?.key
  }

  // MARK: Iterator events

  @usableFromInline
  enum NextAction {
    case deliver
    case suspend
    /// Start the share's upstream iteration `generation`, then ask again.
    case startUpstream(generation: Int)
    case end(Failure?)
  }

  /// The subscriber has used up `batch`, which is empty; refills it with everything buffered for it.
  ///
  /// Inlinable, as `send` is: it runs once per batch (per element for a `CurrentValueFlow`), and,
  /// unspecialized, each read of `state` and of the tables went through the value witnesses of
  /// five type parameters (`W2.currentValue1` cost 1.39 times as much).
  @inlinable
  mutating func next(_ id: Int, swapping batch: inout RingBuffer<Element>) -> NextAction {
    guard batch.isEmpty else {
      preconditionFailure("Internal inconsistency: state \(state), event next with a batch not released")
    }
    guard let index = subscribers.indexByID[id] else { return .end(nil) }
    if case .open(.idle) = state { return .startUpstream(generation: startGeneration()) }
    if Subscribers.move(from: &subscribers.iterators[index].buffer, to: &batch, isBounded: policy.isBounded) {
      return .deliver
    }
    guard case .ended(let failure) = state else { return .suspend }
    // Nothing is released: the buffer is empty, and an ended share keeps its replay.
    _ = subscribers.removeIterator(id)
    return .end(failure)
  }

  /// Registers the waiting subscriber, or returns its waiter to be resumed at once.
  @inlinable
  mutating func suspend(_ id: Int, _ consumer: Waiter) -> Waiter? {
    if case .ended = state { return consumer }
    guard let index = subscribers.indexByID[id], subscribers.iterators[index].buffer.isEmpty else { return consumer }
    subscribers.iterators[index].consumer = consumer
    return nil
  }

  // MARK: Subject events

  /// Buffers `element` for every subscriber; returns the iterators to wake and the mailboxes to
  /// drain (no allocation if none waits and every mailbox has its drain).
  @inlinable
  mutating func send(_ element: Element) -> SendAction {
    isOpenSubject(event: "send") ? subscribers.deliver(element, policy: policy, replayLimit: replayLimit) : SendAction()
  }

  /// Ends the subject: every subscriber drains its buffer, then sees the end.
  mutating func end(failure: Failure?) -> SendAction {
    isOpenSubject(event: "end") ? end(with: failure) : SendAction()
  }

  /// The owner closed: the source ends with no failure, a share's upstream (running, or running
  /// on in its grace period) to be cancelled with it. An ended source does nothing.
  mutating func close() -> (SendAction, cancelUpstream: Work?) {
    guard case .open(let upstream) = state else { return (SendAction(), nil) }
    var task: Work?
    switch upstream {
    case .running(_, let running, _): task = running
    case .lingering(let lingering): task = lingering.upstream
    case .subject, .idle, .starting: break
    }
    return (end(with: nil), task)
  }

  /// Whether a subject takes `event`: an ended one ignores it; a share never gets it.
  @inlinable
  func isOpenSubject(event: StaticString) -> Bool {
    switch state {
    case .open(.subject): return true
    case .ended: return false
    case .open: preconditionFailure("Internal inconsistency: state \(state), event \(event)")
    }
  }

  // MARK: Helpers

  mutating func end(with failure: Failure?) -> SendAction {
    guard case .open = state else { preconditionFailure("Internal inconsistency: state \(state), event end") }
    var action = SendAction()
    if case .open(.lingering(let lingering)) = state { action.cancelGraceTimer = lingering.timerTask }
    for index in subscribers.iterators.indices {
      if let consumer = subscribers.iterators[index].consumer.take() { action.resume.append(consumer) }
    }
    // An idle mailbox is empty: its drain delivers the end. A draining one finds it at its next take.
    for index in subscribers.push.indices {
      if case .idle = subscribers.push[index].phase { action.startDrains.append(subscribers.beginDrain(at: index)) }
    }
    state = .ended(failure: failure)
    return action
  }
}

extension Dictionary {
  /// Removes the entry of `key`, returning the stored key with its value (so that the key, an
  /// object, can be released where the caller chooses).
  @inlinable
  mutating func removeEntry(_ key: Key) -> (key: Key, value: Value)? {
    guard let index = index(forKey: key) else { return nil }
    return remove(at: index)
  }
}
