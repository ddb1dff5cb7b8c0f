/// The one machine behind `Flow.combineLatest`, `Flow.zip` and `withLatestFromFlow`, for any number
/// of inputs ("slots"). Each input runs in a task of its own that pulls an element and offers it
/// (`received`). An element that can already make an output (zip: every slot has its n-th;
/// combineLatest: every slot has produced) parks its input until the consumer has taken it: then no
/// input is more than one element ahead of the consumer. An element that cannot make an output yet
/// (it waits for another input) does not park its input, which is pulled on, up to `readAhead`
/// elements: so an input's end or failure is seen when it happens, not once the others catch up
/// (the first failure wins). When an element completes an output while the consumer is suspended,
/// the output is made for the consumer there and then (a hand-off). The machine only counts what
/// each slot holds; the elements themselves live in the storage's typed values, so one machine
/// serves every arity.
@usableFromInline
struct CombiningStateMachine<Failure: Error> {
  @usableFromInline typealias Mode = CombiningMode

  @usableFromInline
  enum Slot {
    /// Its task is pulling the next element (or about to).
    case pulling
    /// Its elements wait for the consumer; its task parks (`continuation`) until one is taken.
    case holding(UnsafeContinuation<Bool, Never>?)
    /// Its input finished; it may still hold elements and have a latest element.
    case finished
  }

  @usableFromInline
  struct Running {
    @usableFromInline var slots: [Slot]
    /// How many elements each slot holds that the consumer has not taken.
    @usableFromInline var held: [Int]
    @usableFromInline var hasLatest: [Bool]
    @usableFromInline var latestCount = 0
    @usableFromInline var finishedCount = 0
    /// The slot of each held element, in the order the elements arrived (not kept for zip, whose
    /// outputs take one element of every slot).
    @usableFromInline var arrivals = RingBuffer<Int>()
    @usableFromInline var consumer: UnsafeContinuation<Void, Never>?
    /// An output was made for the suspended consumer by the input whose element completed it (a
    /// hand-off), and the consumer has not returned it yet.
    @usableFromInline var outputReady = false
    @usableFromInline var tasks: [Task<Void, Never>] = []

    @inlinable init(count: Int) {
      slots = Array(repeating: .pulling, count: count)
      held = Array(repeating: 0, count: count)
      hasLatest = Array(repeating: false, count: count)
    }
  }

  @usableFromInline
  enum State {
    /// Nobody has asked for an element yet: no input has started.
    case initial
    case running(Running)
    /// The result ended (`failure == nil`: finished) while the consumer was away; its next `next()`
    /// returns the output handed over before the end if there is one (`outputReady`), then waits for
    /// the input tasks, which were cancelled, and sees the end.
    case ended(failure: Failure?, tasks: [Task<Void, Never>], outputReady: Bool)
    /// The consumer left; its next `next()` waits for the input tasks and returns `nil`.
    case cancelled(tasks: [Task<Void, Never>])
    case finished
    /// Held only inside an event, so that the payload being mutated is uniquely referenced.
    case modifying
  }

  /// How many elements an input is pulled ahead while its elements wait for the other inputs: the
  /// same bound as each input of `Flow.merge`.
  @usableFromInline static var defaultReadAhead: Int { 64 }

  @usableFromInline let mode: Mode
  @usableFromInline let count: Int
  @usableFromInline let readAhead: Int
  @usableFromInline var state = State.initial

  @inlinable init(mode: Mode, count: Int, readAhead: Int = Self.defaultReadAhead) {
    precondition(
      mode == .zip || mode == .combineLatest || count == 2, "Internal inconsistency: withLatestFrom has 2 slots")
    self.mode = mode
    self.count = count
    self.readAhead = readAhead
  }

  @usableFromInline typealias Delivery = CombiningDelivery

  /// The output the consumer may take now, if any. Does not change the state.
  @inlinable func deliverable(_ running: Running) -> Delivery? {
    switch mode {
    case .zip:
      return running.held.allSatisfy { $0 > 0 } ? .all : nil
    case .combineLatest:
      if running.latestCount == count { return running.arrivals.first.map { .one($0) } }
      // Before the first output no slot has a latest: it needs an element from every one.
      return running.held.allSatisfy { $0 > 0 } ? .all : nil
    case .withLatestFrom:
      // Slot 0 holds an element only if slot 1 had a latest when it arrived.
      return running.held[0] > 0 ? .one(0) : nil
    }
  }

  /// Whether the task of `slot`, whose newest element was just stored, pulls on rather than parks:
  /// while its newest element cannot make an output (it waits for another input), up to
  /// `readAhead` held elements. A slot whose elements can all make outputs waits for the consumer.
  @inlinable func pullsOn(_ slot: Int, _ running: Running) -> Bool {
    let held = running.held[slot]
    if held == 0 { return true }
    if held >= readAhead { return false }
    switch mode {
    case .zip:
      // Its newest is the held-th: it waits while a slot that can still produce holds fewer.
      for other in 0..<count where other != slot && running.held[other] < held {
        if case .finished = running.slots[other] { continue }
        return true
      }
      return false
    case .combineLatest:
      // After the first output every element makes one; before, it waits for a slot holding none.
      return running.latestCount < count && running.held.contains(0)
    case .withLatestFrom:
      return false
    }
  }

  /// Whether no output can ever be made again, and none is left to take.
  @inlinable func exhausted(_ running: Running) -> Bool {
    switch mode {
    case .zip:
      for slot in 0..<count where running.held[slot] == 0 {
        if case .finished = running.slots[slot] { return true }
      }
      return false
    case .combineLatest:
      for slot in 0..<count where running.held[slot] == 0 && !running.hasLatest[slot] {
        // It finished without ever producing: no output can be made.
        if case .finished = running.slots[slot] { return true }
      }
      return running.finishedCount == count && !running.held.contains { $0 > 0 }
    case .withLatestFrom:
      if case .finished = running.slots[0] { return running.held[0] == 0 }
      return false
    }
  }

  // MARK: Consumer events

  @usableFromInline
  enum NextAction {
    case startInputs
    /// Return the output an input made for the consumer while it was suspended.
    case deliverReady
    /// Make the output from `delivery`, then resume the parked inputs that pull on, and perform
    /// `end` (not empty when this was the last output: the result has ended).
    case deliver(Delivery, resumeInputs: [UnsafeContinuation<Bool, Never>], end: CombiningEndAction)
    case suspend
    /// The result is over: cancel nothing more, wait for `awaiting`, then end with `failure`.
    case end(failure: Failure?, awaiting: [Task<Void, Never>])
  }

  /// The consumer asks for an output.
  @inlinable mutating func next() -> NextAction {
    switch state {
    case .initial:
      guard count > 0 else {
        // No inputs (an empty array): nothing to combine, the result is empty.
        state = .finished
        return .end(failure: nil, awaiting: [])
      }
      state = .running(Running(count: count))
      return .startInputs
    case .running(var running):
      if running.outputReady {
        state = .modifying
        running.outputReady = false
        state = .running(running)
        return .deliverReady
      }
      guard let delivery = deliverable(running) else { return .suspend }
      state = .modifying
      var resume: [UnsafeContinuation<Bool, Never>] = []
      if let end = took(delivery, from: &running, outputReady: false, resume: &resume) {
        return .deliver(delivery, resumeInputs: [], end: end)
      }
      state = .running(running)
      return .deliver(delivery, resumeInputs: resume, end: EndAction())
    case .ended(let failure, let tasks, let outputReady):
      // An output made before the end was already the consumer's: it comes first.
      if outputReady {
        state = .ended(failure: failure, tasks: tasks, outputReady: false)
        return .deliverReady
      }
      state = .finished
      return .end(failure: failure, awaiting: tasks)
    case .cancelled(let tasks):
      state = .finished
      return .end(failure: nil, awaiting: tasks)
    case .finished:
      return .end(failure: nil, awaiting: [])
    case .modifying:
      preconditionFailure("Internal inconsistency: state modifying, event next")
    }
  }

  /// The consumer takes the output `delivery` names (in `next`, or for it in a hand-off). Returns
  /// what ending asks if that was the last output (the state is then set to ended); otherwise the
  /// caller puts `running` back, and the parked slots that now pull on are in `resume`.
  @inlinable mutating func took(
    _ delivery: Delivery, from running: inout Running, outputReady: Bool, resume: inout [UnsafeContinuation<Bool, Never>]
  ) -> CombiningEndAction? {
    switch delivery {
    case .all:
      for slot in 0..<count { Self.take(slot, from: &running) }
      if mode != .zip {
        // combineLatest's first output: the first arrival of each slot leaves the order.
        var taken = Array(repeating: false, count: count)
        var arrivals = RingBuffer<Int>()
        while let slot = running.arrivals.popFirst() {
          if taken[slot] { arrivals.append(slot) } else { taken[slot] = true }
        }
        running.arrivals = arrivals
      }
    case .one(let slot):
      Self.take(slot, from: &running)
      if mode != .zip {
        let first = running.arrivals.popFirst()
        precondition(first == slot, "Internal inconsistency: slot \(slot) is not the first arrival, event take")
      }
    }
    if exhausted(running) {
      state = .ended(failure: nil, tasks: running.tasks, outputReady: outputReady)
      return Self.stopping(running)
    }
    for slot in 0..<count {
      // A task that has not parked yet sees `.pulling` when it tries to, and goes on.
      guard case .holding(let parked) = running.slots[slot], pullsOn(slot, running) else { continue }
      running.slots[slot] = .pulling
      if let parked { resume.append(parked) }
    }
    running.outputReady = outputReady
    return nil
  }

  /// The consumer takes the oldest element `slot` holds.
  @inlinable static func take(_ slot: Int, from running: inout Running) {
    precondition(running.held[slot] > 0, "Internal inconsistency: slot \(slot) holds nothing, event take")
    running.held[slot] -= 1
    if !running.hasLatest[slot] {
      running.hasLatest[slot] = true
      running.latestCount += 1
    }
  }

  /// The consumer is about to suspend; returns the continuation if it must resume at once.
  @inlinable mutating func suspendConsumer(
    _ continuation: UnsafeContinuation<Void, Never>
  ) -> UnsafeContinuation<Void, Never>? {
    switch state {
    case .running(var running):
      // An element may have arrived between `next` and this registration.
      guard !running.outputReady, deliverable(running) == nil else { return continuation }
      state = .modifying
      precondition(running.consumer == nil, "Internal inconsistency: two consumers suspended on one iteration")
      running.consumer = continuation
      state = .running(running)
      return nil
    case .ended, .cancelled, .finished:
      return continuation
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event suspendConsumer")
    }
  }

  @usableFromInline typealias EndAction = CombiningEndAction

  /// The consumer's task was cancelled or its iterator was released.
  @inlinable mutating func consumerCancelled() -> EndAction {
    switch state {
    case .initial:
      state = .finished
      return EndAction()
    case .running(let running):
      state = .cancelled(tasks: running.tasks)
      return Self.stopping(running)
    case .ended(_, let tasks, _):
      // Already cancelled when it ended; a cancelled consumer finishes rather than throws.
      state = .cancelled(tasks: tasks)
      return EndAction()
    case .cancelled, .finished:
      return EndAction()
    case .modifying:
      preconditionFailure("Internal inconsistency: state modifying, event consumerCancelled")
    }
  }

  @inlinable static func stopping(_ running: Running) -> EndAction {
    var stop: [UnsafeContinuation<Bool, Never>] = []
    for case .holding(let parked?) in running.slots { stop.append(parked) }
    return EndAction(resumeConsumer: running.consumer, stopInputs: stop, cancelTasks: running.tasks)
  }

  // MARK: Input events

  /// The input tasks exist; returns those to cancel because the result already ended.
  @inlinable mutating func inputsStarted(_ tasks: [Task<Void, Never>]) -> [Task<Void, Never>] {
    switch state {
    case .running(var running):
      state = .modifying
      running.tasks += tasks
      state = .running(running)
      return []
    case .ended(let failure, let earlier, let outputReady):
      state = .ended(failure: failure, tasks: earlier + tasks, outputReady: outputReady)
      return tasks
    case .cancelled(let earlier):
      state = .cancelled(tasks: earlier + tasks)
      return tasks
    case .initial, .finished, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event inputsStarted")
    }
  }

  @usableFromInline
  enum ReceiveAction {
    /// Store the element as the slot's newest held one; its task then parks (`suspendInput`).
    case hold
    /// Store the element as the slot's newest held one; its task pulls again at once (the element
    /// waits for another input: the slot reads ahead).
    case store
    /// The element completes an output and the consumer is suspended: store it, make the output
    /// `delivery` names for the consumer at once, resume the consumer and the parked inputs that
    /// pull on, and perform `end` (the last output: the result has ended). The slot's own task
    /// pulls again (`pullOn`) or parks: no wake-up is spent on a slot that goes on.
    case handOff(
      CombiningDelivery, resumeConsumer: UnsafeContinuation<Void, Never>,
      resumeInputs: [UnsafeContinuation<Bool, Never>], end: CombiningEndAction, pullOn: Bool)
    /// Store the element as the slot's latest at once; its task pulls again. (Never makes an
    /// output deliverable: slot 0's elements before slot 1's first were dropped.)
    case replaceLatest
    /// Discard the element; its task pulls again (`true`) or stops (`false`).
    case drop(pullAgain: Bool)
  }

  /// The input of `slot` produced an element.
  @inlinable mutating func received(_ slot: Int) -> ReceiveAction {
    switch state {
    case .running(var running):
      guard case .pulling = running.slots[slot] else {
        preconditionFailure("Internal inconsistency: slot \(slot) is \(running.slots[slot]), event received")
      }
      state = .modifying
      if mode == .withLatestFrom {
        if slot == 1 {
          if !running.hasLatest[1] {
            running.hasLatest[1] = true
            running.latestCount += 1
          }
          state = .running(running)
          return .replaceLatest
        }
        // Before the other's first element there is nothing to pair it with.
        guard running.hasLatest[1] else {
          state = .running(running)
          return .drop(pullAgain: true)
        }
      }
      running.held[slot] += 1
      if mode != .zip { running.arrivals.append(slot) }
      if let consumer = running.consumer, let delivery = deliverable(running) {
        running.consumer = nil
        var resume: [UnsafeContinuation<Bool, Never>] = []
        if let end = took(delivery, from: &running, outputReady: true, resume: &resume) {
          return .handOff(delivery, resumeConsumer: consumer, resumeInputs: [], end: end, pullOn: false)
        }
        // The slot is still pulling: it goes on, or parks if its elements all wait for the consumer.
        let pullOn = pullsOn(slot, running)
        if !pullOn { running.slots[slot] = .holding(nil) }
        state = .running(running)
        return .handOff(delivery, resumeConsumer: consumer, resumeInputs: resume, end: EndAction(), pullOn: pullOn)
      }
      defer { state = .running(running) }
      if pullsOn(slot, running) { return .store }
      running.slots[slot] = .holding(nil)
      return .hold
    case .ended, .cancelled, .finished:
      // Nobody will take it: an input that ignores cancellation cannot deliver after the end.
      return .drop(pullAgain: false)
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event received(\(slot))")
    }
  }

  @usableFromInline
  enum SuspendInputAction: Equatable {
    case park
    /// Resume the continuation at once: pull again (`true`) or stop (`false`).
    case resume(pullAgain: Bool)
  }

  /// The task of `slot` is about to park until one of its elements is taken.
  @inlinable mutating func suspendInput(_ slot: Int, _ continuation: UnsafeContinuation<Bool, Never>)
    -> SuspendInputAction
  {
    switch state {
    case .running(var running):
      switch running.slots[slot] {
      case .holding(nil):
        state = .modifying
        running.slots[slot] = .holding(continuation)
        state = .running(running)
        return .park
      case .pulling:
        // The consumer took an element between `received` and this registration.
        return .resume(pullAgain: true)
      case .holding(.some), .finished:
        preconditionFailure("Internal inconsistency: slot \(slot) is \(running.slots[slot]), event suspendInput")
      }
    case .ended, .cancelled, .finished:
      return .resume(pullAgain: false)
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event suspendInput(\(slot))")
    }
  }

  /// The input of `slot` finished. The result ends once no output can be made any more and none is
  /// left to take: zip, once a finished slot holds nothing; combineLatest, at once if the slot never
  /// produced, else once every slot finished and their elements were taken; withLatestFrom, once
  /// the base finished and its element was taken.
  @inlinable mutating func inputFinished(_ slot: Int) -> EndAction {
    switch state {
    case .running(var running):
      guard case .pulling = running.slots[slot] else {
        preconditionFailure("Internal inconsistency: slot \(slot) is \(running.slots[slot]), event inputFinished")
      }
      state = .modifying
      running.slots[slot] = .finished
      running.finishedCount += 1
      if exhausted(running) {
        state = .ended(failure: nil, tasks: running.tasks, outputReady: running.outputReady)
        return Self.stopping(running)
      }
      state = .running(running)
      return EndAction()
    case .ended, .cancelled, .finished:
      return EndAction()
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event inputFinished(\(slot))")
    }
  }

  /// The input of `slot` failed: the first failure ends the result at once. An output already
  /// handed to the consumer is still returned; elements not yet taken are dropped.
  @inlinable mutating func inputFailed(_ slot: Int, _ failure: Failure) -> EndAction {
    switch state {
    case .running(let running):
      guard case .pulling = running.slots[slot] else {
        preconditionFailure("Internal inconsistency: slot \(slot) is \(running.slots[slot]), event inputFailed")
      }
      state = .ended(failure: failure, tasks: running.tasks, outputReady: running.outputReady)
      return Self.stopping(running)
    case .ended, .cancelled, .finished:
      return EndAction()
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event inputFailed(\(slot))")
    }
  }
}

/// Which pending elements make a combining operator's next output.
@usableFromInline
enum CombiningDelivery: Equatable, Sendable {
  /// Every slot's pending element becomes its latest (zip; combineLatest's first output).
  case all
  /// This slot's pending element becomes its latest.
  case one(Int)
}

/// What makes an output, and what ends the result.
@usableFromInline
enum CombiningMode: Sendable {
  /// An output when every slot holds an element; it takes one of each. A slot's end ends it once
  /// that slot's elements were taken.
  case zip
  /// The first output when every slot has produced; then one per element of any slot, with the
  /// latest of the others. A slot that ends without ever producing ends it; otherwise all must,
  /// and their elements be taken.
  case combineLatest
  /// Slot 0 drives: one output per element of slot 0 with the latest of slot 1, whose elements
  /// only replace its latest (slot 1 is pulled eagerly, keeping one). Slot 0's elements before
  /// slot 1's first are dropped. Slot 0's end ends it; slot 1's end does not.
  case withLatestFrom
}

/// What ending (or leaving) a combining or merge iteration asks the storage to do, after the lock is
/// released. One type for both machines: their ends have the same effects.
@usableFromInline
struct CombiningEndAction {
  @usableFromInline var resumeConsumer: UnsafeContinuation<Void, Never>?
  /// Parked inputs, to be resumed with `false`: stop.
  @usableFromInline var stopInputs: [UnsafeContinuation<Bool, Never>]
  @usableFromInline var cancelTasks: [Task<Void, Never>]

  @inlinable init(
    resumeConsumer: UnsafeContinuation<Void, Never>? = nil, stopInputs: [UnsafeContinuation<Bool, Never>] = [],
    cancelTasks: [Task<Void, Never>] = []
  ) {
    self.resumeConsumer = resumeConsumer
    self.stopInputs = stopInputs
    self.cancelTasks = cancelTasks
  }

  @inlinable var isEmpty: Bool { resumeConsumer == nil && stopInputs.isEmpty && cancelTasks.isEmpty }
}
