/// The one life cycle of an operator that runs a task for its consumer, around its per-operator
/// ``OperatorLogic``: the first `next()` starts the task; the task runs the inputs (each pulling
/// an upstream, or a callbacks setup) and, if the logic uses one, a timer; each waits here for the
/// word to go on; the consumer's cancellation or the logic's end tells them all to leave, and the
/// consumer gets `nil` (or the failure) only once the task has ended.
///
/// Pure: it never locks, resumes, starts or cancels anything; each event returns what to do.
/// ``OperatorStorage`` holds it under its lock and carries the actions out after releasing it. The
/// waiters and the task are generic so that its grid is a table of integers.
///
/// The task is cancelled only while a child is busy where only cancellation reaches it (an input
/// inside its upstream's `next()` or a setup, a timer asleep): a parked child is told to leave
/// instead, and a child that left (an input that reported its end, running its cleanup) is never
/// cancelled. Inputs are numbered from 0 (`index`); a single-input operator has only input 0.
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
    /// Told to leave, reported its end, or absent (no timer): it is never interrupted.
    case left

    @inlinable
    var isBusy: Bool {
      if case .busy = self { return true }
      return false
    }
  }

  /// The inputs' children by index, with what the events ask of them kept at hand: how many are
  /// busy, and which are parked (woken together, in the order they parked, without a scan).
  @usableFromInline
  struct Inputs {
    @usableFromInline
    var children: [Child<Input>]
    @usableFromInline
    var parked: [Int] = []
    @usableFromInline
    var busy: Int

    @inlinable
    init(count: Int) {
      children = Array(repeating: .busy, count: count)
      busy = count
    }

    /// What the two counts kept at hand must agree with: `busy` counts the busy children, and
    /// `parked` lists each parked child once. Checked by debug builds after every change.
    @inlinable
    var isConsistent: Bool {
      busy == children.count(where: \.isBusy) && parked.count == children.count(where: \.isParked)
        && parked.allSatisfy { children[$0].isParked }
    }

    @inlinable
    mutating func set(_ index: Int, _ child: Child<Input>) {
      defer { assert(isConsistent, "Internal inconsistency: inputs \(children), busy \(busy), parked \(parked)") }
      switch children[index] {
      case .busy: busy -= 1
      case .parked: parked.removeAll { $0 == index }
      case .left: break
      }
      switch child {
      case .busy: busy += 1
      case .parked: parked.append(index)
      case .left: break
      }
      children[index] = child
    }

    /// Lets every parked input go (with `asking`, those it wants), now `busy` (`proceed`) or
    /// `left`, into `wakeups`.
    @inlinable
    mutating func wake(proceed: Bool, into wakeups: inout Wakeups, asking logic: Logic? = nil) {
      defer { assert(isConsistent, "Internal inconsistency: inputs \(children), busy \(busy), parked \(parked)") }
      var waiting: [Int] = []
      for index in parked {
        guard case .parked(let input) = children[index] else { continue }
        if logic?.wantsInput(from: index) == false {
          waiting.append(index)
          continue
        }
        children[index] = proceed ? .busy : .left
        if proceed { busy += 1 }
        if wakeups.input == nil {
          wakeups.input = (input, proceed)
        } else {
          wakeups.moreInputs.append(input)
        }
      }
      // Its capacity stays: a single input that parks again does not allocate.
      parked.removeAll(keepingCapacity: true)
      parked += waiting
    }
  }

  @usableFromInline
  struct Running {
    @usableFromInline
    var consumer: Consumer?
    @usableFromInline
    var timer: Child<Timer>
    /// `nil` until the consumer's `next()` that started it registers it.
    @usableFromInline
    var task: Work?

    @inlinable
    init(consumer: Consumer? = nil, timer: Child<Timer>, task: Work? = nil) {
      self.consumer = consumer
      self.timer = timer
      self.task = task
    }
  }

  @usableFromInline
  struct Cancelled {
    /// `nil` until the consumer's `next()` that started it registers it.
    @usableFromInline
    var task: Work?
    /// Whether the timer was busy at the cancellation and has not asked since: a task registered
    /// now is cancelled, as it would have been in time (so is it while an input is still busy).
    @usableFromInline
    var timerBusy: Bool

    @inlinable
    init(task: Work?, timerBusy: Bool) {
      self.task = task
      self.timerBusy = timerBusy
    }
  }

  /// What an event lets go: each waiter with what to resume it with, the task to cancel, and what
  /// left the state (released by the storage after its lock: a `deinit` may call back).
  @usableFromInline
  struct Wakeups {
    @usableFromInline
    var consumer: Consumer?
    /// An input and whether it may go on (`false`: the operator is over, leave).
    @usableFromInline
    var input: (continuation: Input, proceed: Bool)?
    /// The other inputs let go by the same event, with the same answer (empty for one input).
    @usableFromInline
    var moreInputs: [Input] = []
    /// The timer and the deadline to sleep until (`nil`: the operator is over, leave).
    @usableFromInline
    var timer: (continuation: Timer, deadline: Logic.Instant?)?
    @usableFromInline
    var cancel: Work?
    /// The element the logic let go of during the event.
    @usableFromInline
    var released: Logic.Element?
    /// The end is known and drops what the consumer took but has not returned yet
    /// (``OperatorLogic/dropsTakenOutputs``): the consumer, serving a batch out of the lock, is
    /// told through ``OperatorStorage/takenOutputsDropped``.
    @usableFromInline
    var dropsTakenOutputs = false
    /// The logic dropped an element of the input (displaced or refused it): reported to the drop
    /// handler after the lock.
    @usableFromInline
    var dropped = false

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

  /// What an element did: `accepted`, it will reach the consumer unless it leaves first;
  /// `proceed`, its input may pull again at once, without waiting here.
  @usableFromInline
  typealias InputAnswer = (wakeups: Wakeups, accepted: Bool, proceed: Bool)

  /// Every event that retires the logic does so before it leaves `running` or `idle`, so that a
  /// debug build checks at each change what the logic beside it must agree with.
  @usableFromInline
  var state: State {
    didSet {
      assert(logicAgreesWithState, "Internal inconsistency: logic \(logic == nil ? "retired" : "kept") in \(state)")
      assert(inputsAgreeWithState, "Internal inconsistency: inputs \(inputs.children) in \(state)")
    }
  }
  /// The operator's logic, outside `state` so that events mutate it in place (unspecialized
  /// generic code would copy it in and out of the enum at every event); `nil` once retired.
  @usableFromInline
  var logic: Logic?
  /// The inputs' children, outside `state` for the same reason: the running payload stays
  /// trivial to move, and an element costs no retain of their arrays. What they must agree with
  /// is checked by debug builds at each change of `state` (``inputsAgreeWithState``).
  @usableFromInline
  var inputs: Inputs
  /// How many input elements the logic let go of while running without delivering them (displaced
  /// or refused): a `bufferFlow`'s drops. Outside the logic, so that it outlives its retirement.
  @usableFromInline
  var dropped = 0

  /// What the logic kept beside `state` must agree with: it is there while the operator is idle or
  /// running (and inside an event), and retired once the operator is cancelled or finished.
  @inlinable
  var logicAgreesWithState: Bool {
    switch state {
    case .idle, .running, .modifying: logic != nil
    case .cancelled, .finished: logic == nil
    }
  }

  /// What the inputs kept beside `state` must agree with: all busy until the task starts them
  /// (`idle`), and none parked once the operator is cancelled or finished, since no event would
  /// wake it then: every event that leaves `running` lets the parked inputs go first.
  @inlinable
  var inputsAgreeWithState: Bool {
    switch state {
    case .idle: inputs.busy == inputs.children.count
    case .running, .modifying: true
    case .cancelled, .finished: inputs.parked.isEmpty
    }
  }

  @inlinable
  init(logic: Logic?, inputs count: Int = 1, state: State = .idle) {
    self.logic = logic
    self.inputs = Inputs(count: count)
    self.state = state
  }

  // MARK: Consumer events

  /// The consumer asks for the next output.
  @inlinable
  mutating func next(at now: Logic.Instant) -> NextAction {
    switch state {
    case .idle:
      logic!.start(at: now)
      state = .running(Running(timer: Logic.usesTimer ? .busy : .left))
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
        let retired = logic.take()
        state = .finished
        // No work outlives the iteration: the end is delivered once the task has ended.
        return .end(failure: failure, wakeups, awaiting: running.task, retired: retired)
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
      let retired = logic.take()
      state = .finished
      return (Wakeups(), retired)
    case .running(let running):
      let timerBusy = running.timer.isBusy
      var wakeups = Wakeups(consumer: running.consumer)
      inputs.wake(proceed: false, into: &wakeups)
      if inputs.busy > 0 || timerBusy { wakeups.cancel = running.task }
      if case .parked(let timer) = running.timer { wakeups.timer = (timer, nil) }
      let retired = logic.take()
      state = .cancelled(Cancelled(task: running.task, timerBusy: timerBusy))
      return (wakeups, retired)
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
      return logic!.isEnding && Self.isBusy(inputs, timer: running.timer.isBusy) ? task : nil
    case .cancelled(var cancelled) where cancelled.task == nil:
      cancelled.task = task
      state = .cancelled(cancelled)
      return Self.isBusy(inputs, timer: cancelled.timerBusy) ? task : nil
    case .idle, .running, .cancelled, .finished, .modifying:
      // `finished` needs the consumer's `next`, which is busy starting this task.
      preconditionFailure("Internal inconsistency: state \(state), event taskStarted")
    }
  }

  /// Input `index` asks whether to go on (pull its upstream); returns it with the answer if it
  /// must resume at once (`false`: the operator is over, leave).
  @inlinable
  mutating func inputWaits(_ input: Input, index: Int = 0, isCancelled: Bool) -> (Input, Bool)? {
    // The path of every element pulled: no copy of the running payload.
    if case .running = state, !isCancelled, !logic!.isEnding, logic!.wantsInput(from: index) { return (input, true) }
    return childWaits(
      input, leave: false, isCancelled: isCancelled, event: "inputWaits",
      goOn: { $0.wantsInput(from: index) ? true : nil },
      park: { _, inputs, input in
        precondition(!inputs.children[index].isParked, "Internal inconsistency: state running, input parked twice")
        inputs.set(index, .parked(input))
      },
      leaveInputs: { inputs in inputs.set(index, .left) }, leaveCancelled: { _ in })
  }

  /// Input `index`'s task was cancelled while it waited; returns it, to be resumed with `false`.
  @inlinable
  mutating func inputCancelled(index: Int = 0) -> Input? {
    childCancelled(event: "inputCancelled") { _, inputs in
      guard case .parked(let input) = inputs.children[index] else { return nil }
      inputs.set(index, .left)
      return input
    }
  }

  /// The timer asks for a deadline; returns it with the answer if it must resume at once (`nil`:
  /// the operator is over, leave).
  @inlinable
  mutating func timerWaits(_ timer: Timer, isCancelled: Bool) -> (Timer, Logic.Instant?)? {
    if case .running = state, !isCancelled, !logic!.isEnding, let deadline = logic!.deadline {
      return (timer, deadline)
    }
    return childWaits(
      timer, leave: Logic.Instant?.none, isCancelled: isCancelled, event: "timerWaits",
      goOn: { logic in logic.deadline.map { .some($0) } },
      park: { running, _, timer in
        precondition(!running.timer.isParked, "Internal inconsistency: state running, two timers waiting")
        running.timer = .parked(timer)
      },
      leaveInputs: { _ in }, leaveRunning: { $0.timer = .left }, leaveCancelled: { $0.timerBusy = false })
  }

  /// The timer's task was cancelled while it waited; returns it, to be resumed with `nil`.
  @inlinable
  mutating func timerCancelled() -> Timer? {
    childCancelled(event: "timerCancelled") { running, _ in
      guard case .parked(let timer) = running.timer else { return nil }
      running.timer = .left
      return timer
    }
  }

  // MARK: Logic events

  /// An element from input `index`; returns whether it will reach the consumer unless it leaves
  /// first, and whether the input may go on at once. Once the input reported its end, or the
  /// logic or the consumer is over, it is handed back in `released`.
  @inlinable
  mutating func input(_ element: Logic.Element, from index: Int = 0, at now: Logic.Instant) -> InputAnswer {
    switch state {
    case .running(var running):
      if case .left = inputs.children[index] { return (Wakeups(released: element), false, false) }
      guard !logic!.isEnding else { return (Wakeups(released: element), false, false) }
      state = .modifying
      // Only a busy input (one that pulls) goes on at once; a parked one is woken by the wakeups.
      let busy = inputs.children[index].isBusy
      let verdict = logic!.input(element, at: now)
      var wakeups = wakeups(&running)
      let proceed = busy && !logic!.isEnding && logic!.wantsInput(from: index)
      state = .running(running)
      switch verdict {
      case .kept:
        return (wakeups, true, proceed)
      case .keptDisplacing(let displaced):
        wakeups.released = displaced
        dropped &+= 1
        wakeups.dropped = true
        return (wakeups, true, proceed)
      case .refused(let refused):
        wakeups.released = refused
        dropped &+= 1
        wakeups.dropped = true
        return (wakeups, false, proceed)
      }
    case .cancelled, .finished:
      return (Wakeups(released: element), false, false)
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event input")
    }
  }

  /// An element from input `index` where nobody can need waking: the input is busy (it pushes, as
  /// a `Flow` body's `emit` does), no input and not the consumer is parked, the logic measures no
  /// time and is not ending. Then the logic takes the element and `then` reads it (the emitter's
  /// room), and no wakeups are made: the path of most elements of a `Flow` body. `nil` where that
  /// does not hold: ask ``input(_:from:at:)``. For a logic that keeps every element (a displaced
  /// one would need its wakeups).
  @inlinable
  mutating func inputWakingNobody<R>(
    _ element: Logic.Element, from index: Int = 0, at now: Logic.Instant, then body: (inout Logic) -> R
  ) -> R? {
    guard !Logic.usesTimer, case .running(let running) = state, running.consumer == nil, inputs.parked.isEmpty,
      inputs.children[index].isBusy, !logic!.isEnding
    else { return nil }
    guard case .kept = logic!.input(element, at: now) else {
      preconditionFailure("Internal inconsistency: state running, event inputWakingNobody let an element go")
    }
    return body(&logic!)
  }

  /// A logic's own event that wakes nobody and that the life cycle does not read (a `Flow` body's
  /// emitters waiting for room, their cancellation, their release at the body's end); `nil` once
  /// the logic is retired.
  @inlinable
  mutating func withLogic<R>(_ body: (inout Logic) -> R) -> R? {
    guard logic != nil else { return nil }
    return body(&logic!)
  }

  /// Input `index` ended (`nil`: it finished); only its first end counts.
  ///
  /// `fromItsOwnCode`: the input reports its own end (its upstream ended, the body returned) and
  /// has left. Otherwise the end comes from outside it (a callbacks source's `finish` or `fail`,
  /// from any thread): an input still busy (an `async` setup) stays busy, so that the end known
  /// cancels the task at once, and it leaves when it asks for the word; a parked one (a setup that
  /// returned) is left to the wakeups, which resume it.
  @inlinable
  mutating func inputEnded(
    _ failure: Logic.InputFailure?, from index: Int = 0, at now: Logic.Instant, fromItsOwnCode: Bool = true
  ) -> Wakeups {
    if case .running = state, case .left = inputs.children[index] { return Wakeups() }
    return logicEvent("inputEnded") { logic, inputs in
      if fromItsOwnCode, inputs.children[index].isBusy { inputs.set(index, .left) }
      return logic.inputEnded(failure, from: index, at: now)
    }
  }

  @inlinable
  mutating func timerFired(at now: Logic.Instant) -> Wakeups {
    logicEvent("timerFired") { logic, _ in logic.timerFired(at: now) }
  }

  /// An event that only the logic answers, once running and not ending: `body` returns the
  /// element it let go of, released with the wakeups.
  @inlinable
  mutating func logicEvent(_ event: StaticString, _ body: (inout Logic, inout Inputs) -> Logic.Element?) -> Wakeups {
    switch state {
    case .running(var running):
      guard !logic!.isEnding else { return Wakeups() }
      state = .modifying
      let released = body(&logic!, &inputs)
      var wakeups = wakeups(&running)
      wakeups.released = released
      state = .running(running)
      return wakeups
    case .cancelled, .finished:
      return Wakeups()
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event \(event)")
    }
  }

  // MARK: Helpers

  /// Whether a child is busy where only a cancellation reaches it: the task must be cancelled.
  @inlinable
  static func isBusy(_ inputs: Inputs, timer: Bool) -> Bool {
    inputs.busy > 0 || timer
  }

  /// One child (an input or the timer) asks for the word: `goOn` is the logic's answer that lets
  /// it go on (`nil`: it parks), `leave` the answer that tells it to leave.
  @inlinable
  mutating func childWaits<Waiter, Answer>(
    _ waiter: Waiter, leave: Answer, isCancelled: Bool, event: StaticString, goOn: (Logic) -> Answer?,
    park: (inout Running, inout Inputs, Waiter) -> Void, leaveInputs: (inout Inputs) -> Void,
    leaveRunning: (inout Running) -> Void = { _ in }, leaveCancelled: (inout Cancelled) -> Void
  ) -> (Waiter, Answer)? {
    // Not the path of an element that goes on at once: the callers answer that one first.
    switch state {
    case .running(var running):
      state = .modifying
      defer { state = .running(running) }
      if isCancelled || logic!.isEnding {
        leaveInputs(&inputs)
        leaveRunning(&running)
        return (waiter, leave)
      }
      if let answer = goOn(logic!) { return (waiter, answer) }
      park(&running, &inputs, waiter)
      return nil
    case .cancelled(var cancelled):
      leaveInputs(&inputs)
      leaveCancelled(&cancelled)
      state = .cancelled(cancelled)
      return (waiter, leave)
    case .finished:
      return (waiter, leave)
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event \(event)")
    }
  }

  /// A parked child's task was cancelled: `unpark` takes it out of `running`, if it is parked.
  @inlinable
  mutating func childCancelled<Waiter>(event: StaticString, unpark: (inout Running, inout Inputs) -> Waiter?) -> Waiter? {
    switch state {
    case .running(var running):
      state = .modifying
      defer { state = .running(running) }
      return unpark(&running, &inputs)
    case .cancelled, .finished:
      return nil
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event \(event)")
    }
  }

  /// The waiters that the logic's new state lets go. Once the end waits, the inputs and the timer
  /// are of no use: they are told to leave, and the task is cancelled if one of them is busy.
  @inlinable
  mutating func wakeups(_ running: inout Running) -> Wakeups {
    var wakeups = Wakeups()
    let ending = logic!.isEnding
    if running.consumer != nil, ending || logic!.hasOutput {
      wakeups.consumer = running.consumer.take()
    }
    if !inputs.parked.isEmpty {
      if ending {
        inputs.wake(proceed: false, into: &wakeups)
      } else if inputs.parked.contains(where: { logic!.wantsInput(from: $0) }) {
        // Each input the logic wants (all, for a logic that bounds them together); the path of
        // every element while another input is parked, so it neither copies nor allocates.
        inputs.wake(proceed: true, into: &wakeups, asking: logic)
      }
    }
    if case .parked(let timer) = running.timer, ending || logic!.deadline != nil {
      wakeups.timer = (timer, ending ? nil : logic!.deadline)
      running.timer = ending ? .left : .busy
    }
    if ending {
      if Self.isBusy(inputs, timer: running.timer.isBusy) { wakeups.cancel = running.task }
      wakeups.dropsTakenOutputs = logic!.dropsTakenOutputs
    }
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
