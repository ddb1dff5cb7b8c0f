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
/// For `shareFlow` the upstream's phase lives in the same `State` as the subscribers, under the
/// same lock: deciding to stop the upstream and registering a newcomer, or sending an element and
/// stopping, are each one step, so a subscriber arriving as the last one leaves keeps the upstream
/// and a stopped iteration cannot send a late element.
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
    /// Taking elements: a subject's `send`, or a share's upstream in the phase `upstream`.
    case open(Upstream)
    /// The source ended: every subscriber drains its buffer, then sees the end; a later one ends
    /// at once. A share does not start again.
    case ended(failure: Failure?)
  }

  /// Where the elements of an open source come from.
  @usableFromInline
  enum Upstream {
    /// A subject: elements come from `send`, the end from `end(failure:)`.
    case subject
    /// `shareFlow`'s upstream is not running: never started, or stopped when the last subscriber
    /// left. The next subscriber's `next()` starts it.
    case idle
    /// The task of the upstream's iteration `generation` is being created.
    case starting(generation: Int)
    /// `executor` is the preference the task was started with (`FlowScheduling.executor`: a
    /// `TestClock`'s under test, `nil` in an app), kept for the grace timer of this run.
    case running(generation: Int, task: Work, executor: (any TaskExecutor)?)
    /// The last subscriber left a share with a grace period: its upstream runs on until the grace
    /// timer fires (then `idle`) or a subscriber comes (then `starting` or `running` again). What
    /// the upstream sends meanwhile reaches the replay only.
    case lingering(Lingering)
  }

  /// The grace period of a share nobody listens to.
  @usableFromInline
  struct Lingering {
    /// The upstream iteration that runs on.
    @usableFromInline let generation: Int
    /// Its task; `nil` while it is being created (the last subscriber left while it started).
    @usableFromInline var upstream: Work?
    /// The executor preference that task was started with; the grace timer is started with it.
    @usableFromInline var executor: (any TaskExecutor)?
    /// Tells this grace timer from an older one that fires late.
    @usableFromInline let timer: Int
    /// The timer's task, `nil` until the storage, having started it outside the lock, reports it.
    /// While `upstream` is `nil` the timer is not started yet: it starts when the upstream's task
    /// reports, with that task's executor.
    @usableFromInline var timerTask: Work?
  }

  /// A grace timer for the storage to start, after the lock, then report with `graceTimerStarted`.
  ///
  /// It is started with the executor preference of the upstream's task, not in the context of
  /// whoever left last: a subscriber cancelled from outside the schedule (a test's body cancelling
  /// its consumer task, whose cancellation handler unsubscribes; a `FlowSubscription` cancelled on
  /// the main actor) would otherwise put the timer off the `TestClock`'s executor, where the clock
  /// cannot wait for it to stop the upstream.
  struct StartGraceTimer {
    let timer: Int
    let executor: (any TaskExecutor)?
  }

  @usableFromInline
  struct Subscriber {
    @usableFromInline let id: Int
    @usableFromInline var buffer: RingBuffer<Element>
    @usableFromInline var consumer: Waiter?
  }

  /// Whether a push subscriber's mailbox has a drain: scheduled or running, it takes what is
  /// buffered; idle, the next element starts one.
  @usableFromInline
  enum MailboxPhase {
    case idle
    /// Drain `id` serves the mailbox. Its task is `nil` until the storage, having started it outside
    /// the lock, reports it (`drainStarted`): leaving cancels that task, so that the closure call in
    /// progress sees the cancellation, as a task-based sink's does.
    case draining(id: Int, task: Work?)
  }

  /// A drain for the storage to start, outside the lock, then report with `drainStarted`.
  @usableFromInline
  struct StartDrain {
    @usableFromInline let mailbox: Mailbox
    @usableFromInline let id: Int

    @inlinable init(mailbox: Mailbox, id: Int) {
      self.mailbox = mailbox
      self.id = id
    }
  }

  /// A push subscriber: its buffer, and whether a drain serves it. Idle, it costs this entry and
  /// its mailbox object, no task.
  @usableFromInline
  struct PushSubscriber {
    @usableFromInline let mailbox: Mailbox
    @usableFromInline var buffer: RingBuffer<Element>
    @usableFromInline var phase: MailboxPhase
  }

  /// Everyone subscribed, in every state: iterators and push subscribers with their buffers, the
  /// replay a newcomer starts with, and the tasks waiting for a subscriber count.
  @usableFromInline
  struct Subscribers {
    /// Iterators, with `indexByID` for O(1) removal (the last one moves into the gap).
    @usableFromInline var iterators: [Subscriber] = []
    @usableFromInline var indexByID: [Int: Int] = [:]
    /// Push subscribers, with their index by mailbox (unique while it is registered).
    @usableFromInline var push: [PushSubscriber] = []
    @usableFromInline var pushIndex: [Mailbox: Int] = [:]
    /// The last `replayLimit` elements, given to each new subscriber first.
    @usableFromInline var replay: RingBuffer<Element>
    /// Tasks waiting until at least a count of subscribers is registered (`subscribers(count:)`).
    var watchers = CountWatcherList<Waiter>()
    /// Drains whose subscriber left before their task was reported: cancelled when it is.
    var drainsLeftBeforeStart: Set<Int> = []
    var nextID = 0
    /// Tells a drain from the mailbox's later ones, when its task is reported after it ended.
    @usableFromInline var nextDrainID = 0

    @usableFromInline var count: Int { iterators.count + push.count }

    init(replay: RingBuffer<Element>) {
      self.replay = replay
    }

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

    /// Buffers `element` for every subscriber and in the replay.
    @inlinable
    mutating func deliver(
      _ element: Element, policy: FlowBufferingPolicy, replayLimit: Int
    ) -> SendAction {
      var action = SendAction()
      if replayLimit > 0 {
        while replay.count >= replayLimit { action.released.append(replay.popFirst()!) }
        replay.append(element)
      }
      for index in iterators.indices {
        policy.append(element, to: &iterators[index].buffer, releasing: &action.released)
        if let consumer = iterators[index].consumer.take() { action.resume.append(consumer) }
      }
      for index in push.indices {
        policy.append(element, to: &push[index].buffer, releasing: &action.released)
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
      return StartDrain(mailbox: push[index].mailbox, id: id)
    }

    @usableFromInline
    mutating func removeIterator(_ id: Int) -> Subscriber? {
      guard let index = indexByID.removeValue(forKey: id) else { return nil }
      if index != iterators.count - 1 {
        iterators.swapAt(index, iterators.count - 1)
        indexByID[iterators[index].id] = index
      }
      return iterators.removeLast()
    }

    @usableFromInline
    mutating func removePush(_ mailbox: Mailbox) -> PushSubscriber? {
      guard let index = pushIndex.removeValue(forKey: mailbox) else { return nil }
      if index != push.count - 1 {
        push.swapAt(index, push.count - 1)
        pushIndex[push[index].mailbox] = index
      }
      return push.removeLast()
    }
  }

  /// What an element, or the end, asks of the storage once the lock is released.
  @usableFromInline
  struct SendAction {
    /// Waiting iterators to resume.
    @usableFromInline var resume: [Waiter] = []
    /// Mailboxes that were idle and now have something to take: start one drain for each.
    @usableFromInline var startDrains: [StartDrain] = []
    /// What the buffering policies dropped and the replay evicted: released after the lock.
    @usableFromInline var released = ReleasedElements<Element>()
    /// The grace timer of a share whose upstream ended while nobody listened.
    @usableFromInline var cancelGraceTimer: Work?

    @inlinable init() {}

    /// Nothing to resume, nothing to start, nothing to release.
    var isEmpty: Bool { resume.isEmpty && startDrains.isEmpty && released.isEmpty && cancelGraceTimer == nil }
  }

  @usableFromInline var state: State
  @usableFromInline var subscribers: Subscribers
  @usableFromInline let policy: FlowBufferingPolicy
  @usableFromInline let replayLimit: Int
  /// `FlowReplayScope.acrossRestarts`: a stopped share keeps its replay for the next run.
  let keepsReplayWhenStopped: Bool
  /// `shareFlow(gracePeriod:)` greater than zero: the last subscriber leaving starts a grace timer
  /// instead of stopping the upstream.
  let hasGracePeriod: Bool
  /// Tells the current upstream iteration from one still winding down after it was stopped.
  private var nextGeneration = 0
  /// Tells the current grace timer from an older one.
  private var nextGraceTimer = 0

  /// A subject's machine.
  init(policy: FlowBufferingPolicy, replay: [Element] = [], replayLimit: Int) {
    self.state = .open(.subject)
    self.subscribers = Subscribers(replay: RingBuffer(replay))
    self.policy = policy
    self.replayLimit = replayLimit
    self.keepsReplayWhenStopped = true
    self.hasGracePeriod = false
  }

  /// A `shareFlow` machine: its upstream starts at the first demand.
  init(
    sharingWith policy: FlowBufferingPolicy, replayLimit: Int, keepsReplayWhenStopped: Bool = false,
    hasGracePeriod: Bool = false
  ) {
    self.state = .open(.idle)
    self.subscribers = Subscribers(replay: RingBuffer())
    self.policy = policy
    self.replayLimit = replayLimit
    self.keepsReplayWhenStopped = keepsReplayWhenStopped
    self.hasGracePeriod = hasGracePeriod
  }

  // MARK: Reading the state

  /// The upstream's phase; `nil` once the source ended.
  var upstream: Upstream? {
    if case .open(let upstream) = state { return upstream }
    return nil
  }

  /// `.some(failure)` once the source ended (`.some(nil)`: finished), `nil` while it is open.
  @usableFromInline var ending: Failure?? {
    if case .ended(let failure) = state { return .some(failure) }
    return nil
  }

  @usableFromInline var isEnded: Bool { ending != nil }
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

  // MARK: Changing the state

  /// Runs `body` on the subscribers: `body` cannot reach `self`, so an event's state stays its own.
  @inlinable
  mutating func modifySubscribers<Result>(_ body: (inout Subscribers) -> Result) -> Result {
    body(&subscribers)
  }

  private mutating func setUpstream(_ upstream: Upstream) {
    guard case .open = state else {
      preconditionFailure("Internal inconsistency: state \(state), event setUpstream(\(upstream))")
    }
    state = .open(upstream)
  }

  @usableFromInline
  mutating func startGeneration() -> Int {
    defer { nextGeneration += 1 }
    setUpstream(.starting(generation: nextGeneration))
    return nextGeneration
  }

  /// The share stops its upstream: `idle`, and the replay, unless kept across restarts, emptied
  /// now (a subscriber registering before the restart gets it), to be released after the lock.
  private mutating func stop() -> RingBuffer<Element> {
    setUpstream(.idle)
    guard !keepsReplayWhenStopped else { return RingBuffer() }
    return modifySubscribers { subscribers in
      defer { subscribers.replay = RingBuffer() }
      return subscribers.replay
    }
  }

  // MARK: Subscriber events

  /// Registers a subscriber; after the end it is registered with nothing to receive but the end.
  /// Returns its id, the watchers that the new count satisfies, to be resumed, and the grace timer
  /// to cancel when it comes during a share's grace period (it joins the running upstream).
  mutating func subscribe() -> (id: Int, resumeWatchers: [Waiter], cancelGraceTimer: Work?) {
    let isEnded = isEnded
    let (id, watchers) = modifySubscribers { subscribers in
      let id = subscribers.nextID
      subscribers.nextID += 1
      subscribers.indexByID[id] = subscribers.iterators.count
      subscribers.iterators.append(
        Subscriber(id: id, buffer: isEnded ? RingBuffer() : subscribers.replay, consumer: nil))
      return (id, subscribers.watchers.reached(subscribers.count))
    }
    return (id, watchers, rejoin())
  }

  /// A subscriber came during the grace period: the upstream runs on for it. Returns the timer's
  /// task to cancel (`nil` while it is being created: it is cancelled when it reports).
  private mutating func rejoin() -> Work? {
    guard case .lingering(let lingering)? = upstream else { return nil }
    if let upstream = lingering.upstream {
      setUpstream(.running(generation: lingering.generation, task: upstream, executor: lingering.executor))
    } else {
      setUpstream(.starting(generation: lingering.generation))
    }
    return lingering.timerTask
  }

  @usableFromInline
  struct PushSubscribeAction {
    @usableFromInline var resumeWatchers: [Waiter]
    /// The share was idle: start its upstream iteration `generation`, as an iterator's first
    /// `next()` does (a push subscriber asks at once).
    @usableFromInline var startUpstream: Int?
    /// The mailbox has the replay (a `CurrentValueFlow`'s current value) or the end to take: the
    /// drain to start.
    @usableFromInline var startDrain: Int?
    /// The subscriber came during a share's grace period: the timer to cancel.
    @usableFromInline var cancelGraceTimer: Work?
  }

  /// Registers a push subscriber with the replay in its mailbox; after the end, with nothing to
  /// receive but the end.
  mutating func subscribe(_ mailbox: Mailbox) -> PushSubscribeAction {
    let isEnded = isEnded
    let (startDrain, watchers) = modifySubscribers { subscribers in
      guard subscribers.pushIndex[mailbox] == nil else {
        let state = isEnded ? "ended" : "open"
        preconditionFailure("Internal inconsistency: state \(state), event subscribe(mailbox) twice")
      }
      let buffer = isEnded ? RingBuffer() : subscribers.replay
      subscribers.pushIndex[mailbox] = subscribers.push.count
      subscribers.push.append(PushSubscriber(mailbox: mailbox, buffer: buffer, phase: .idle))
      let startDrain = !buffer.isEmpty || isEnded ? subscribers.beginDrain(at: subscribers.push.count - 1).id : nil
      return (startDrain, subscribers.watchers.reached(subscribers.count))
    }
    let cancelGraceTimer = rejoin()
    var startUpstream: Int?
    if case .idle? = upstream { startUpstream = startGeneration() }
    return PushSubscribeAction(
      resumeWatchers: watchers, startUpstream: startUpstream, startDrain: startDrain,
      cancelGraceTimer: cancelGraceTimer)
  }

  // MARK: Watcher events (subscribers(count:))

  /// A token for a task about to wait for subscribers, so that its cancellation resumes that one.
  mutating func makeWatcherToken() -> Int {
    modifySubscribers { $0.watchers.makeID() }
  }

  /// Registers a task waiting until at least `count` subscribers are registered; returns the
  /// waiter if it must resume at once (the count is reached, or the task was cancelled).
  mutating func watchSubscribers(count: Int, token: Int, _ waiter: Waiter, isCancelled: Bool) -> Waiter? {
    modifySubscribers { subscribers in
      guard !isCancelled,
        subscribers.watchers.register(waiter, id: token, until: count, current: subscribers.count)
      else { return waiter }
      return nil
    }
  }

  /// The task of the watcher `token` was cancelled; returns its waiter if it still waits.
  mutating func watcherCancelled(_ token: Int) -> Waiter? {
    modifySubscribers { $0.watchers.cancel(token) }
  }

  struct UnsubscribeAction {
    /// The leaving subscriber's waiting continuation.
    var resumeConsumer: Waiter?
    /// The upstream's task, when the last subscriber left.
    var cancelUpstream: Work?
    /// The task of the leaving push subscriber's drain, if one runs.
    var cancelDrain: Work?
    /// The leaving subscriber's undelivered elements: released after the lock.
    var releasedBuffer = RingBuffer<Element>()
    /// The replay a stopped share emptied: released after the lock.
    var releasedReplay = RingBuffer<Element>()
    /// The leaving push subscriber's mailbox, which holds its closures: released after the lock.
    var releasedMailbox: Mailbox?
    /// The last subscriber left a share with a grace period whose upstream's task is known: the
    /// grace timer to start, then report with `graceTimerStarted`.
    var startGraceTimer: StartGraceTimer?
  }

  /// Removes a subscriber and frees its buffer. When it was the last, a share stops its upstream
  /// in the same step: a newcomer either came before (and the upstream stays) or comes after (and
  /// starts it again).
  mutating func unsubscribe(_ id: Int) -> UnsubscribeAction {
    guard let removed = modifySubscribers({ $0.removeIterator(id) }) else { return UnsubscribeAction() }
    var action = UnsubscribeAction(resumeConsumer: removed.consumer, releasedBuffer: removed.buffer)
    stopIfNobodyListens(&action)
    return action
  }

  /// Removes a push subscriber (cancelled, or released); its drain, if one runs, is cancelled (a
  /// drain whose task is still being created is cancelled when it reports) and finds it gone at
  /// its next take. As for an iterator, the last one to leave stops a share's upstream.
  mutating func unsubscribe(_ mailbox: Mailbox) -> UnsubscribeAction {
    let removed = modifySubscribers { subscribers -> PushSubscriber? in
      guard let removed = subscribers.removePush(mailbox) else { return nil }
      if case .draining(let id, .none) = removed.phase { subscribers.drainsLeftBeforeStart.insert(id) }
      return removed
    }
    guard let removed else { return UnsubscribeAction() }
    var action = UnsubscribeAction(releasedBuffer: removed.buffer, releasedMailbox: removed.mailbox)
    if case .draining(_, .some(let task)) = removed.phase { action.cancelDrain = task }
    stopIfNobodyListens(&action)
    return action
  }

  /// When the last subscriber of either kind left, a share stops its upstream in the same step: a
  /// newcomer either came before (and the upstream stays) or comes after (and starts it again).
  /// With a grace period it lingers instead, and the grace timer to start goes in `action`. The
  /// task to cancel and the replay emptied go in `action` too, to be released after the lock.
  private mutating func stopIfNobodyListens(_ action: inout UnsubscribeAction) {
    guard subscriberCount == 0, let upstream else { return }
    switch upstream {
    case .subject, .idle, .lingering:
      return
    case .starting(let generation) where hasGracePeriod:
      // No timer yet: its executor is the upstream task's, known when that task reports
      // (`upstreamStarted` starts the timer then), not this leaver's, which may be off the schedule.
      _ = linger(generation: generation, upstream: nil, executor: nil)
    case .running(let generation, let task, let executor) where hasGracePeriod:
      let timer = linger(generation: generation, upstream: task, executor: executor)
      action.startGraceTimer = StartGraceTimer(timer: timer, executor: executor)
    case .starting:
      // The task being created finds a newer state when it reports, and is cancelled then.
      action.releasedReplay = stop()
    case .running(_, let task, _):
      action.cancelUpstream = task
      action.releasedReplay = stop()
    }
  }

  private mutating func linger(generation: Int, upstream: Work?, executor: (any TaskExecutor)?) -> Int {
    defer { nextGraceTimer += 1 }
    setUpstream(
      .lingering(
        Lingering(generation: generation, upstream: upstream, executor: executor, timer: nextGraceTimer, timerTask: nil)
      ))
    return nextGraceTimer
  }

  // MARK: Drain events (push subscribers)

  /// The task of drain `id` exists; returns it if it must be cancelled at once (its subscriber left
  /// while it was being created).
  mutating func drainStarted(_ mailbox: Mailbox, id: Int, task: Work) -> Work? {
    modifySubscribers { subscribers in
      if subscribers.drainsLeftBeforeStart.remove(id) != nil { return task }
      guard let index = subscribers.pushIndex[mailbox] else {
        return nil  // the drain took the end and removed the subscriber: it is delivering the end
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
    let isBounded = policy.isBounded
    let ending = ending
    return modifySubscribers { subscribers in
      guard let index = subscribers.pushIndex[mailbox] else { return .stop }
      guard case .draining = subscribers.push[index].phase else {
        preconditionFailure("Internal inconsistency: state mailbox idle, event take")
      }
      if Subscribers.move(from: &subscribers.push[index].buffer, to: &batch, isBounded: isBounded) {
        return .deliver
      }
      if let failure = ending {
        // Nothing is released: the buffer is empty and the drain holds the mailbox.
        _ = subscribers.removePush(mailbox)
        return .complete(failure)
      }
      subscribers.push[index].phase = .idle
      return .idle
    }
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
    switch state {
    case .open(.subject):
      return deliver(element)
    case .ended:
      return SendAction()
    case .open:
      preconditionFailure("Internal inconsistency: state \(state), event send")
    }
  }

  /// Ends the subject: every subscriber drains its buffer, then sees the end.
  mutating func end(failure: Failure?) -> SendAction {
    switch state {
    case .open(.subject):
      return end(with: failure)
    case .ended:
      return SendAction()
    case .open:
      preconditionFailure("Internal inconsistency: state \(state), event end")
    }
  }

  // MARK: Upstream events (shareFlow)

  enum UpstreamStartedAction {
    /// The task is kept.
    case none
    /// The iteration was stopped, or superseded, while its task was being created: cancel it.
    case cancel(Work)
    /// The last subscriber left while the task was being created: the task is kept, and the grace
    /// timer, which waited for the task's executor, is to be started now with it.
    case startGraceTimer(StartGraceTimer)
  }

  /// The task of iteration `generation` exists, started with the executor preference `executor`
  /// (the one the grace timer of this run is started with).
  mutating func upstreamStarted(
    _ task: Work, generation: Int, executor: (any TaskExecutor)? = nil
  ) -> UpstreamStartedAction {
    switch state {
    case .open(.starting(generation)):
      setUpstream(.running(generation: generation, task: task, executor: executor))
      return .none
    case .open(.lingering(var lingering)) where lingering.generation == generation:
      guard lingering.upstream == nil, lingering.timerTask == nil else {
        preconditionFailure("Internal inconsistency: state \(state), event upstreamStarted(\(generation))")
      }
      lingering.upstream = task
      lingering.executor = executor
      setUpstream(.lingering(lingering))
      return .startGraceTimer(StartGraceTimer(timer: lingering.timer, executor: executor))
    case .open(.running(generation, _, _)), .open(.subject):
      preconditionFailure("Internal inconsistency: state \(state), event upstreamStarted(\(generation))")
    case .open, .ended:
      return .cancel(task)
    }
  }

  /// Iteration `generation` produced `element`; returns the subscribers to wake, or `nil` if the
  /// iteration was stopped and must not deliver anything any more.
  mutating func upstreamElement(_ element: Element, generation: Int) -> SendAction? {
    switch state {
    case .open(.starting(generation)), .open(.running(generation, _, _)):
      return deliver(element)
    case .open(.lingering(let lingering)) where lingering.generation == generation:
      return deliver(element)  // to the replay: nobody is subscribed
    case .open(.subject):
      preconditionFailure("Internal inconsistency: state \(state), event upstreamElement")
    case .open, .ended:
      return nil
    }
  }

  /// Iteration `generation` finished or failed; ends the share unless that iteration was stopped.
  mutating func upstreamEnded(failure: Failure?, generation: Int) -> SendAction {
    switch state {
    case .open(.starting(generation)), .open(.running(generation, _, _)):
      return end(with: failure)
    case .open(.lingering(let lingering)) where lingering.generation == generation:
      // The grace period ends with the upstream: a later subscriber ends at once. The timer's task
      // is cancelled here, or, still being created, when it reports.
      var action = end(with: failure)
      action.cancelGraceTimer = lingering.timerTask
      return action
    case .open(.subject):
      preconditionFailure("Internal inconsistency: state \(state), event upstreamEnded")
    case .open, .ended:
      return SendAction()
    }
  }

  // MARK: Grace timer events (shareFlow(gracePeriod:))

  /// The task of grace timer `timer` exists; returns it if it must be cancelled at once (the grace
  /// period already ended: a subscriber came, or the upstream ended).
  mutating func graceTimerStarted(_ task: Work, timer: Int) -> Work? {
    guard case .lingering(var lingering)? = upstream, lingering.timer == timer else { return task }
    guard lingering.timerTask == nil else {
      preconditionFailure("Internal inconsistency: state \(state), event graceTimerStarted(\(timer)) twice")
    }
    lingering.timerTask = task
    setUpstream(.lingering(lingering))
    return nil
  }

  struct GraceExpiredAction {
    /// The upstream's task (`nil` while it is being created: cancelled when it reports).
    var cancelUpstream: Work?
    /// The replay a stopped share emptied: released after the lock.
    var releasedReplay = RingBuffer<Element>()
  }

  /// Grace timer `timer` fired: nobody came, so the upstream stops, as when the last subscriber of a
  /// share without grace period leaves. A timer of an ended grace period does nothing.
  mutating func graceExpired(timer: Int) -> GraceExpiredAction {
    guard case .lingering(let lingering)? = upstream, lingering.timer == timer else { return GraceExpiredAction() }
    return GraceExpiredAction(cancelUpstream: lingering.upstream, releasedReplay: stop())
  }

  // MARK: Helpers

  @inlinable
  mutating func deliver(_ element: Element) -> SendAction {
    let policy = self.policy
    let replayLimit = self.replayLimit
    return modifySubscribers { $0.deliver(element, policy: policy, replayLimit: replayLimit) }
  }

  private mutating func end(with failure: Failure?) -> SendAction {
    guard case .open = state else { preconditionFailure("Internal inconsistency: state \(state), event end") }
    var action = SendAction()
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
