/// The one life cycle of an operator that runs a task for its consumer, around its per-operator
/// ``OperatorLogic``: the first `next()` starts the task; the task runs the input (pulling an
/// upstream, or a callbacks setup) and, if the logic uses one, a timer; each waits here for the
/// word to go on; the consumer's cancellation or the logic's end tells them all to leave, and the
/// consumer gets `nil` (or the failure) only once the task has ended.
///
/// Pure: it never locks, resumes, starts or cancels anything; each event returns what to do.
/// ``OperatorStorage`` holds it under its lock and carries the actions out after releasing it. The
/// waiters and the task are generic so that its grid is a table of integers.
///
/// The task is cancelled only while a child is busy where only cancellation reaches it (an input
/// inside its upstream's `next()` or a setup, a timer asleep): a parked child is told to leave
/// instead, and a child that left (an input running its cleanup) is never cancelled.
@usableFromInline
struct OperatorLifecycle<Logic: OperatorLogic, Consumer, Input, Timer, Work> {
  @usableFromInline
  enum State {
    /// Nobody has asked for an output yet: no task.
    case idle
    case running(Running)
    /// The consumer left while the task may still run; its next `next()` waits for the task.
    case cancelled(Cancelled)
    /// The end was delivered, or the consumer left and has seen the end.
    case finished
    /// Held only inside an event, so that the running payload is uniquely referenced (its buffers
    /// are not copied) while it is taken apart.
    case modifying
  }

  /// Where a child of the task is.
  @usableFromInline
  enum Child<Waiter> {
    /// Working (inside its upstream's `next()`, a setup, a sleep): only a cancellation reaches it.
    case busy
    /// Waiting on its continuation for the word to go on.
    case parked(Waiter)
    /// Told to leave, or absent (no timer): it needs nothing more.
    case left

    @inlinable
    var isBusy: Bool {
      if case .busy = self { return true }
      return false
    }
  }

  @usableFromInline
  struct Running {
    @usableFromInline
    var consumer: Consumer?
    @usableFromInline
    var input: Child<Input>
    @usableFromInline
    var timer: Child<Timer>
    /// `nil` until the consumer's `next()` that started it registers it.
    @usableFromInline
    var task: Work?
    /// The input reported its end: whatever it still does (a setup returning) is not interrupted.
    @usableFromInline
    var inputEnded = false

    @inlinable
    init(consumer: Consumer? = nil, input: Child<Input>, timer: Child<Timer>, task: Work? = nil) {
      self.consumer = consumer
      self.input = input
      self.timer = timer
      self.task = task
    }
  }

  @usableFromInline
  struct Cancelled {
    /// `nil` until the consumer's `next()` that started it registers it.
    @usableFromInline
    var task: Work?
    /// Whether the input or the timer was busy at the cancellation and has not asked since: a task
    /// registered now is cancelled, as it would have been had it been registered in time.
    @usableFromInline
    var inputBusy: Bool
    @usableFromInline
    var timerBusy: Bool

    @inlinable
    init(task: Work?, inputBusy: Bool, timerBusy: Bool) {
      self.task = task
      self.inputBusy = inputBusy
      self.timerBusy = timerBusy
    }
  }

  /// What an event lets go: each waiter with what to resume it with, the task to cancel, and what
  /// left the state (released by the storage after its lock: a `deinit` may call back).
  @usableFromInline
  struct Wakeups {
    @usableFromInline
    var consumer: Consumer?
    /// The input and whether it may go on (`false`: the operator is over, leave).
    @usableFromInline
    var input: (continuation: Input, proceed: Bool)?
    /// The timer and the deadline to sleep until (`nil`: the operator is over, leave).
    @usableFromInline
    var timer: (continuation: Timer, deadline: Logic.Instant?)?
    @usableFromInline
    var cancel: Work?
    /// The element the logic let go of during the event.
    @usableFromInline
    var released: Logic.Element?

    @inlinable
    init(consumer: Consumer? = nil, cancel: Work? = nil, released: Logic.Element? = nil) {
      self.consumer = consumer
      self.cancel = cancel
      self.released = released
    }
  }

  @usableFromInline
  enum NextAction {
    /// Start the task, register it with ``taskStarted(_:)``, and ask again.
    case startTask
    case deliver(Logic.Output, Wakeups)
    /// The iteration is over: perform the wakeups, wait for `awaiting`, then end with `failure`
    /// (or finish, for `nil`). `retired` is the logic, released after the lock.
    case end(failure: Logic.Failure?, Wakeups, awaiting: Work?, retired: Logic?)
    case suspend
  }

  @usableFromInline
  var state: State
  /// The operator's logic, outside `state` so that events mutate it in place (unspecialized
  /// generic code would copy it in and out of the enum at every event); `nil` once retired.
  @usableFromInline
  var logic: Logic?

  @inlinable
  init(logic: Logic?, state: State = .idle) {
    self.logic = logic
    self.state = state
  }

  // MARK: Consumer events

  /// The consumer asks for the next output.
  @inlinable
  mutating func next(at now: Logic.Instant) -> NextAction {
    switch state {
    case .idle:
      logic!.start(at: now)
      state = .running(Running(input: .busy, timer: Logic.usesTimer ? .busy : .left))
      return .startTask
    case .running(var running):
      state = .modifying
      guard let output = logic!.nextOutput(at: now) else {
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
        return .end(failure: failure, wakeups, awaiting: running.task, retired: logic.take())
      }
    case .cancelled(let cancelled):
      state = .finished
      return .end(failure: nil, Wakeups(), awaiting: cancelled.task, retired: nil)
    case .finished:
      return .end(failure: nil, Wakeups(), awaiting: nil, retired: nil)
    case .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event next")
    }
  }

  /// The consumer is about to suspend; returns the continuation if it must resume at once.
  @inlinable
  mutating func suspendConsumer(_ consumer: Consumer) -> Consumer? {
    switch state {
    case .running(var running):
      // An output may have arrived between `next` and this registration.
      guard !logic!.hasOutput, !logic!.isEnding else { return consumer }
      precondition(running.consumer == nil, "Internal inconsistency: state running, two consumers suspended")
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

  /// The consumer's task was cancelled or its iterator released. `retired` is the logic: what it
  /// still holds is never delivered, and is released after the lock.
  @inlinable
  mutating func cancel() -> (wakeups: Wakeups, retired: Logic?) {
    switch state {
    case .idle:
      state = .finished
      return (Wakeups(), logic.take())
    case .running(let running):
      let inputBusy = running.input.isBusy
      let timerBusy = running.timer.isBusy
      state = .cancelled(Cancelled(task: running.task, inputBusy: inputBusy, timerBusy: timerBusy))
      var wakeups = Wakeups(consumer: running.consumer, cancel: inputBusy || timerBusy ? running.task : nil)
      if case .parked(let input) = running.input { wakeups.input = (input, false) }
      if case .parked(let timer) = running.timer { wakeups.timer = (timer, nil) }
      return (wakeups, logic.take())
    case .cancelled, .finished:
      return (Wakeups(), nil)
    case .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event cancel")
    }
  }

  // MARK: Task events

  /// The task exists; returns it if it must be cancelled at once (the consumer left, or the logic
  /// ended, while a child is busy).
  @inlinable
  mutating func taskStarted(_ task: Work) -> Work? {
    switch state {
    case .running(var running) where running.task == nil:
      state = .modifying
      running.task = task
      state = .running(running)
      return logic!.isEnding && Self.interruptsAtEnd(running) ? task : nil
    case .cancelled(var cancelled) where cancelled.task == nil:
      cancelled.task = task
      state = .cancelled(cancelled)
      return cancelled.inputBusy || cancelled.timerBusy ? task : nil
    case .idle, .running, .cancelled, .finished, .modifying:
      // `finished` needs the consumer's `next`, which is busy starting this task.
      preconditionFailure("Internal inconsistency: state \(state), event taskStarted")
    }
  }

  /// The input asks whether to go on (pull its upstream); returns it with the answer if it must
  /// resume at once (`false`: the operator is over, leave).
  @inlinable
  mutating func inputWaits(_ input: Input, isCancelled: Bool) -> (continuation: Input, proceed: Bool)? {
    // The path of every element pulled: no copy of the running payload.
    if case .running = state, !isCancelled, !logic!.isEnding, logic!.wantsInput { return (input, true) }
    switch state {
    case .running(var running):
      state = .modifying
      defer { state = .running(running) }
      if isCancelled || logic!.isEnding {
        running.input = .left
        return (input, false)
      }
      if logic!.wantsInput { return (input, true) }
      precondition(!running.input.isParked, "Internal inconsistency: state running, two inputs waiting")
      running.input = .parked(input)
      return nil
    case .cancelled(var cancelled):
      cancelled.inputBusy = false
      state = .cancelled(cancelled)
      return (input, false)
    case .finished:
      return (input, false)
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event inputWaits")
    }
  }

  /// The input's task was cancelled while it waited; returns it, to be resumed with `false`.
  @inlinable
  mutating func inputCancelled() -> Input? {
    switch state {
    case .running(var running):
      guard case .parked(let input) = running.input else { return nil }
      state = .modifying
      running.input = .left
      state = .running(running)
      return input
    case .cancelled, .finished:
      return nil
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event inputCancelled")
    }
  }

  /// The timer asks for a deadline; returns it with the answer if it must resume at once (`nil`:
  /// the operator is over, leave).
  @inlinable
  mutating func timerWaits(_ timer: Timer, isCancelled: Bool) -> (continuation: Timer, deadline: Logic.Instant?)? {
    if case .running = state, !isCancelled, !logic!.isEnding, let deadline = logic!.deadline {
      return (timer, deadline)
    }
    switch state {
    case .running(var running):
      state = .modifying
      defer { state = .running(running) }
      if isCancelled || logic!.isEnding {
        running.timer = .left
        return (timer, nil)
      }
      if let deadline = logic!.deadline { return (timer, deadline) }
      precondition(!running.timer.isParked, "Internal inconsistency: state running, two timers waiting")
      running.timer = .parked(timer)
      return nil
    case .cancelled(var cancelled):
      cancelled.timerBusy = false
      state = .cancelled(cancelled)
      return (timer, nil)
    case .finished:
      return (timer, nil)
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event timerWaits")
    }
  }

  /// The timer's task was cancelled while it waited; returns it, to be resumed with `nil`.
  @inlinable
  mutating func timerCancelled() -> Timer? {
    switch state {
    case .running(var running):
      guard case .parked(let timer) = running.timer else { return nil }
      state = .modifying
      running.timer = .left
      state = .running(running)
      return timer
    case .cancelled, .finished:
      return nil
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event timerCancelled")
    }
  }

  // MARK: Logic events

  /// An element from the input; `accepted` says whether it will reach the consumer unless it
  /// leaves first. Once the logic or the consumer is over, it is handed back in `released`.
  @inlinable
  mutating func input(_ element: Logic.Element, at now: Logic.Instant) -> (wakeups: Wakeups, accepted: Bool) {
    switch state {
    case .running(var running):
      guard !running.inputEnded, !logic!.isEnding else { return (Wakeups(released: element), false) }
      state = .modifying
      let verdict = logic!.input(element, at: now)
      var wakeups = wakeups(&running)
      state = .running(running)
      switch verdict {
      case .kept:
        return (wakeups, true)
      case .keptDisplacing(let displaced):
        wakeups.released = displaced
        return (wakeups, true)
      case .refused(let refused):
        wakeups.released = refused
        return (wakeups, false)
      }
    case .cancelled, .finished:
      return (Wakeups(released: element), false)
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event input")
    }
  }

  /// The input ended (`nil`: it finished); the first end wins.
  @inlinable
  mutating func inputEnded(_ failure: Logic.InputFailure?, at now: Logic.Instant) -> Wakeups {
    switch state {
    case .running(var running):
      guard !running.inputEnded, !logic!.isEnding else { return Wakeups() }
      state = .modifying
      running.inputEnded = true
      let released = logic!.inputEnded(failure, at: now)
      var wakeups = wakeups(&running)
      wakeups.released = released
      state = .running(running)
      return wakeups
    case .cancelled, .finished:
      return Wakeups()
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event inputEnded")
    }
  }

  @inlinable
  mutating func timerFired(at now: Logic.Instant) -> Wakeups {
    switch state {
    case .running(var running):
      guard !logic!.isEnding else { return Wakeups() }
      state = .modifying
      let released = logic!.timerFired(at: now)
      var wakeups = wakeups(&running)
      wakeups.released = released
      state = .running(running)
      return wakeups
    case .cancelled, .finished:
      return Wakeups()
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event timerFired")
    }
  }

  // MARK: Helpers

  /// Whether the logic's end must cancel the task: a child is busy where only a cancellation
  /// reaches it. An input that reported its end is left to finish what it does (a setup returns,
  /// then runs its cleanup uncancelled).
  @inlinable
  static func interruptsAtEnd(_ running: Running) -> Bool {
    (running.input.isBusy && !running.inputEnded) || running.timer.isBusy
  }

  /// The waiters that the logic's new state lets go. Once the end waits, the input and the timer
  /// are of no use: they are told to leave, and the task is cancelled if one of them is busy.
  @inlinable
  func wakeups(_ running: inout Running) -> Wakeups {
    var wakeups = Wakeups()
    let ending = logic!.isEnding
    if running.consumer != nil, ending || logic!.hasOutput {
      wakeups.consumer = running.consumer.take()
    }
    if case .parked(let input) = running.input, ending || logic!.wantsInput {
      wakeups.input = (input, !ending)
      running.input = ending ? .left : .busy
    }
    if case .parked(let timer) = running.timer, ending || logic!.deadline != nil {
      wakeups.timer = (timer, ending ? nil : logic!.deadline)
      running.timer = ending ? .left : .busy
    }
    if ending, Self.interruptsAtEnd(running) { wakeups.cancel = running.task }
    return wakeups
  }
}

extension OperatorLifecycle.Child {
  @inlinable
  var isParked: Bool {
    if case .parked = self { return true }
    return false
  }
}
