/// `shareFlow`'s part of the hot-source machine: the upstream's phase, its events, and the grace
/// period. The subscribers, their buffers and their events are the subject's (`Subjects/`).
extension SubjectStateMachine {
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
    /// `timers`: where that task starts the grace timers of this run (`nil` without a grace period).
    case running(generation: Int, task: Work, timers: GraceTimerStarter?)
    /// The last subscriber left a share with a grace period: its upstream runs on until the grace
    /// timer fires (then `idle`) or a subscriber comes (then `starting` or `running` again). What
    /// the upstream sends meanwhile reaches the replay only.
    case lingering(Lingering)

    /// The iteration that may deliver: the running, starting or lingering one; `nil` when none runs.
    var generation: Int? {
      switch self {
      case .starting(let generation), .running(let generation, _, _): generation
      case .lingering(let lingering): lingering.generation
      case .idle: nil
      case .subject: preconditionFailure("Internal inconsistency: state open(subject), event upstream")
      }
    }
  }

  /// The grace period of a share nobody listens to.
  @usableFromInline
  struct Lingering {
    /// The upstream iteration that runs on.
    @usableFromInline let generation: Int
    /// Its task; `nil` while it is being created (the last subscriber left while it started).
    @usableFromInline var upstream: Work?
    /// Where that task starts its grace timers.
    @usableFromInline var timers: GraceTimerStarter?
    /// Tells this grace timer from an older one that fires late.
    @usableFromInline let timer: Int
    /// The timer's task, `nil` until the storage, having started it outside the lock, reports it.
    /// While `upstream` is `nil` the timer is not asked for yet: it is when the upstream's task
    /// reports, with where that task starts its timers.
    @usableFromInline var timerTask: Work?
  }

  /// A grace timer for the storage to ask the upstream's task for (`timers`), after the lock; the
  /// timer reports with `graceTimerStarted`.
  ///
  /// The upstream's task starts it, in its own context, not whoever left last: the task-local
  /// values and priority of the subscriber that started the upstream, and its executor preference.
  /// A subscriber cancelled from outside the schedule (a test's body cancelling its consumer task,
  /// whose cancellation handler unsubscribes; a `FlowSubscription` cancelled on the main actor)
  /// would otherwise put the timer off the `TestClock`'s executor, where the clock cannot wait for
  /// it to stop the upstream.
  struct StartGraceTimer {
    let timer: Int
    let timers: GraceTimerStarter?
  }

  /// The upstream's phase; `nil` once the source ended.
  var upstream: Upstream? {
    if case .open(let upstream) = state { return upstream }
    return nil
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
    defer { subscribers.replay = RingBuffer() }
    return subscribers.replay
  }

  // MARK: Subscribers coming and leaving

  /// A subscriber came: during the grace period the upstream runs on for it. Returns the timer's
  /// task to cancel (`nil` while it is being created: it is cancelled when it reports).
  mutating func rejoin() -> Work? {
    guard case .lingering(let lingering)? = upstream else { return nil }
    if let upstream = lingering.upstream {
      setUpstream(.running(generation: lingering.generation, task: upstream, timers: lingering.timers))
    } else {
      setUpstream(.starting(generation: lingering.generation))
    }
    return lingering.timerTask
  }

  /// When the last subscriber of either kind left, a share stops its upstream in the same step: a
  /// newcomer either came before (and the upstream stays) or comes after (and starts it again).
  /// With a grace period it lingers instead, and the grace timer to start goes in `action`.
  mutating func stopIfNobodyListens(_ action: inout UnsubscribeAction) {
    guard subscriberCount == 0, let upstream else { return }
    switch upstream {
    case .subject, .idle, .lingering:
      return
    case .starting(let generation) where hasGracePeriod:
      // No timer yet: the upstream's task starts it, asked once that task reports
      // (`upstreamStarted`), not this leaver, which may be off the schedule.
      _ = linger(generation: generation, upstream: nil, timers: nil)
    case .running(let generation, let task, let timers) where hasGracePeriod:
      action.startGraceTimer = linger(generation: generation, upstream: task, timers: timers)
    case .starting:
      // The task being created finds a newer state when it reports, and is cancelled then.
      action.releasedReplay = stop()
    case .running(_, let task, _):
      action.cancelUpstream = task
      action.releasedReplay = stop()
    }
  }

  private mutating func linger(generation: Int, upstream: Work?, timers: GraceTimerStarter?) -> StartGraceTimer {
    defer { nextGraceTimer += 1 }
    let lingering = Lingering(
      generation: generation, upstream: upstream, timers: timers, timer: nextGraceTimer, timerTask: nil)
    setUpstream(.lingering(lingering))
    return StartGraceTimer(timer: nextGraceTimer, timers: timers)
  }

  // MARK: Upstream events

  enum UpstreamStartedAction {
    /// The task is kept.
    case none
    /// The iteration was stopped, or superseded, while its task was being created: cancel it.
    case cancel(Work)
    /// The last subscriber left while the task was being created: the task is kept, and the grace
    /// timer, which waited for the task, is to be asked of it now.
    case startGraceTimer(StartGraceTimer)
  }

  /// The task of iteration `generation` exists, and starts its grace timers in `timers`.
  mutating func upstreamStarted(
    _ task: Work, generation: Int, timers: GraceTimerStarter? = nil
  ) -> UpstreamStartedAction {
    switch state {
    case .open(.starting(generation)):
      setUpstream(.running(generation: generation, task: task, timers: timers))
      return .none
    case .open(.lingering(var lingering)) where lingering.generation == generation:
      guard lingering.upstream == nil, lingering.timerTask == nil else {
        preconditionFailure("Internal inconsistency: state \(state), event upstreamStarted(\(generation))")
      }
      lingering.upstream = task
      lingering.timers = timers
      setUpstream(.lingering(lingering))
      return .startGraceTimer(StartGraceTimer(timer: lingering.timer, timers: timers))
    case .open(.running(generation, _, _)), .open(.subject):
      preconditionFailure("Internal inconsistency: state \(state), event upstreamStarted(\(generation))")
    case .open, .ended:
      return .cancel(task)
    }
  }

  /// Whether iteration `generation` is the one that delivers (during the grace period, to the
  /// replay only: nobody is subscribed); a stopped or superseded one does not.
  private func delivers(_ generation: Int) -> Bool {
    upstream?.generation == generation
  }

  /// Iteration `generation` produced `element`; returns the subscribers to wake, or `nil` if the
  /// iteration was stopped and must not deliver anything any more.
  mutating func upstreamElement(_ element: Element, generation: Int) -> SendAction? {
    delivers(generation) ? subscribers.deliver(element, policy: policy, replayLimit: replayLimit) : nil
  }

  /// Iteration `generation` finished or failed; ends the share unless that iteration was stopped.
  /// During the grace period, a later subscriber ends at once; the timer's task is cancelled here,
  /// or, still being created, when it reports.
  mutating func upstreamEnded(failure: Failure?, generation: Int) -> SendAction {
    delivers(generation) ? end(with: failure) : SendAction()
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

  /// Grace timer `timer` fired: nobody came, so the upstream stops, as when the last subscriber of a
  /// share without grace period leaves. A timer of an ended grace period does nothing.
  mutating func graceExpired(timer: Int) -> UnsubscribeAction {
    guard case .lingering(let lingering)? = upstream, lingering.timer == timer else { return UnsubscribeAction() }
    return UnsubscribeAction(cancelUpstream: lingering.upstream, releasedReplay: stop())
  }
}
