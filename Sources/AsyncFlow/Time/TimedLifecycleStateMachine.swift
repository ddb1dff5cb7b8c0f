/// The life cycle of one iteration of a timed operator, around its per-operator logic (a
/// ``TimedStateMachine``): when the iteration's task starts, who waits for what (the consumer for
/// an output, the pump for leave to pull upstream, the timer for a deadline), and which of them an
/// event lets go.
///
/// Pure: it never locks, resumes, starts or cancels anything; each event returns what to do.
/// ``TimedStorage`` holds it under its lock and carries the actions out after releasing it. The
/// waiters and the task are generic so that tests can drive the machine with plain values.
struct TimedLifecycleStateMachine<Logic: TimedStateMachine, Consumer, Pump, Timer, Work> {
  enum State {
    /// Nobody has asked for an element yet: no task.
    case idle
    case running(Running)
    /// The consumer left while the task may still run; its next `next()` waits for the task
    /// (`nil` until the task has started: `taskStarted` then cancels it).
    case cancelled(task: Work?)
    /// The end was delivered, or the consumer left and has seen the end.
    case finished
    /// Held only inside an event, while the running payload is taken apart.
    case modifying
  }

  struct Running {
    var consumer: Consumer?
    var pump: Pump?
    var timer: Timer?
    var task: Work?
  }

  /// What an event lets go: each waiter with what to resume it with, and the task to cancel.
  struct Wakeups {
    var consumer: Consumer?
    /// The pump and whether it may pull (`false`: the operator is over, leave).
    var pump: (continuation: Pump, proceed: Bool)?
    /// The timer and the deadline to sleep until (`nil`: the operator is over, leave).
    var timer: (continuation: Timer, deadline: Logic.Instant?)?
    var cancel: Work?
    /// The element the logic let go during the event: the storage releases it after its lock,
    /// since its `deinit` may call back into the operator.
    var released: Logic.Element?
  }

  enum NextAction {
    case startTask
    case deliver(Logic.Output, Wakeups)
    /// The iteration is over: perform the wakeups, wait for `awaiting`, then end with `failure`
    /// (or finish, for `nil`).
    case end(failure: Logic.Failure?, Wakeups, awaiting: Work?)
    case suspend
  }

  private(set) var logic: Logic
  private(set) var state: State

  init(logic: Logic, state: State = .idle) {
    self.logic = logic
    self.state = state
  }

  // MARK: Consumer events

  /// The consumer asks for the next output.
  mutating func next(at now: Logic.Instant) -> NextAction {
    switch state {
    case .idle:
      logic.start(at: now)
      state = .running(Running())
      return .startTask
    case .running(var running):
      state = .modifying
      guard let output = logic.nextOutput(at: now) else {
        state = .running(running)
        return .suspend
      }
      let wakeups = wakeups(&running)
      switch output {
      case .element(let element):
        state = .running(running)
        return .deliver(element, wakeups)
      case .end(let failure):
        state = .finished
        // No work outlives the iteration: the end is delivered once the task has ended.
        return .end(failure: failure, wakeups, awaiting: running.task)
      }
    case .cancelled(let task):
      state = .finished
      return .end(failure: nil, Wakeups(), awaiting: task)
    case .finished:
      return .end(failure: nil, Wakeups(), awaiting: nil)
    case .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event next")
    }
  }

  /// The consumer is about to suspend; returns the continuation if it must resume at once.
  mutating func suspendConsumer(_ consumer: Consumer) -> Consumer? {
    switch state {
    case .running(var running):
      // An output may have arrived between `next` and this registration.
      guard !logic.hasOutput, !logic.isEnding else { return consumer }
      precondition(running.consumer == nil, "Internal inconsistency: two consumers suspended on one timed iteration")
      state = .modifying
      running.consumer = consumer
      state = .running(running)
      return nil
    case .cancelled, .finished:
      return consumer
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event suspendConsumer")
    }
  }

  /// The consumer's task was cancelled or its iterator released.
  mutating func cancel() -> Wakeups {
    switch state {
    case .idle:
      state = .finished
      return Wakeups()
    case .running(let running):
      state = .cancelled(task: running.task)
      return Wakeups(
        consumer: running.consumer, pump: running.pump.map { ($0, false) }, timer: running.timer.map { ($0, nil) },
        cancel: running.task)
    case .cancelled, .finished:
      return Wakeups()
    case .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event cancel")
    }
  }

  // MARK: Task events

  /// The iteration's task exists; returns it if it must be cancelled at once (the consumer left,
  /// or the end is already waiting).
  mutating func taskStarted(_ task: Work) -> Work? {
    switch state {
    case .running(var running) where running.task == nil:
      state = .modifying
      running.task = task
      state = .running(running)
      return logic.isEnding ? task : nil
    case .cancelled(task: .none):
      state = .cancelled(task: task)
      return task
    case .idle, .running, .cancelled, .finished, .modifying:
      // `finished` needs the consumer's `next`, which is busy starting this task.
      preconditionFailure("Internal inconsistency: state \(state), event taskStarted")
    }
  }

  /// The pump asks whether to pull upstream; returns it with the answer if it must resume at once
  /// (`false`: the operator is over).
  mutating func pumpWaits(_ pump: Pump, isCancelled: Bool) -> (continuation: Pump, proceed: Bool)? {
    switch state {
    case .running(var running):
      if isCancelled || logic.isEnding { return (pump, false) }
      if logic.wantsUpstream { return (pump, true) }
      precondition(running.pump == nil, "Internal inconsistency: two pumps waiting on one timed iteration")
      state = .modifying
      running.pump = pump
      state = .running(running)
      return nil
    case .cancelled, .finished:
      return (pump, false)
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event pumpWaits")
    }
  }

  /// The pump's task was cancelled while it waited; returns it, to be resumed with `false`.
  mutating func pumpCancelled() -> Pump? {
    switch state {
    case .running(var running):
      state = .modifying
      let pump = running.pump.take()
      state = .running(running)
      return pump
    case .cancelled, .finished:
      return nil
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event pumpCancelled")
    }
  }

  /// The timer asks for a deadline; returns it with the answer if it must resume at once (`nil`:
  /// the operator is over).
  mutating func timerWaits(
    _ timer: Timer, isCancelled: Bool
  ) -> (continuation: Timer, deadline: Logic.Instant?)? {
    switch state {
    case .running(var running):
      if isCancelled || logic.isEnding { return (timer, nil) }
      if let deadline = logic.deadline { return (timer, deadline) }
      precondition(running.timer == nil, "Internal inconsistency: two timers waiting on one timed iteration")
      state = .modifying
      running.timer = timer
      state = .running(running)
      return nil
    case .cancelled, .finished:
      return (timer, nil)
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event timerWaits")
    }
  }

  /// The timer's task was cancelled while it waited; returns it, to be resumed with `nil`.
  mutating func timerCancelled() -> Timer? {
    switch state {
    case .running(var running):
      state = .modifying
      let timer = running.timer.take()
      state = .running(running)
      return timer
    case .cancelled, .finished:
      return nil
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event timerCancelled")
    }
  }

  // MARK: Logic events

  /// Once the consumer left, the element is not kept: it comes back in `released`.
  mutating func upstreamElement(_ element: Logic.Element, at now: Logic.Instant) -> Wakeups {
    logicEvent("upstreamElement", unused: element) { $0.upstreamElement(element, at: now) }
  }

  mutating func upstreamEnded(_ failure: Logic.UpstreamFailure?, at now: Logic.Instant) -> Wakeups {
    logicEvent("upstreamEnded") { $0.upstreamEnded(failure, at: now) }
  }

  mutating func timerFired(at now: Logic.Instant) -> Wakeups {
    logicEvent("timerFired") { $0.timerFired(at: now) }
  }

  /// Runs `body` on the logic while running; once the consumer left or the end was delivered,
  /// what the pump or the timer still reports is of no use (`unused` is handed back).
  private mutating func logicEvent(
    _ event: StaticString, unused: Logic.Element? = nil, _ body: (inout Logic) -> Logic.Element?
  ) -> Wakeups {
    switch state {
    case .running(var running):
      state = .modifying
      let released = body(&logic)
      var wakeups = wakeups(&running)
      wakeups.released = released
      state = .running(running)
      return wakeups
    case .cancelled, .finished:
      var wakeups = Wakeups()
      wakeups.released = unused
      return wakeups
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event \(event)")
    }
  }

  /// The waiters that the logic's new state lets go. Once the end waits, the upstream and the
  /// timer are of no use: they are told to leave and the task is cancelled.
  private func wakeups(_ running: inout Running) -> Wakeups {
    var wakeups = Wakeups()
    let ending = logic.isEnding
    if running.consumer != nil, ending || logic.hasOutput {
      wakeups.consumer = running.consumer.take()
    }
    if let pump = running.pump, ending || logic.wantsUpstream {
      wakeups.pump = (pump, !ending)
      running.pump = nil
    }
    if let timer = running.timer, ending || logic.deadline != nil {
      wakeups.timer = (timer, ending ? nil : logic.deadline)
      running.timer = nil
    }
    if ending { wakeups.cancel = running.task }
    return wakeups
  }
}
