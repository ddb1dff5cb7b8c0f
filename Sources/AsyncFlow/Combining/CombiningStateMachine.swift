/// The one machine behind `Flow.combineLatest`, `Flow.zip` and `withLatestFromFlow`, for any number
/// of inputs ("slots"). Each input runs in a task of its own that pulls its elements and offers
/// each (`received`): the slot holds it, and pulls on while it holds fewer than `readAhead`; at
/// `readAhead` its task parks, and is resumed once the consumer has taken it down to half. The
/// consumer takes, in one step, every element that makes an output (a batch, named by a
/// ``CombiningBatch``) and makes the outputs out of the lock. The machine only counts what each
/// slot holds; the elements live in the storage's typed values, so one machine serves every arity.
///
/// Generic over the suspended consumer (`Consumer`), a parked input (`Input`) and an input's task
/// (`Work`), so that its grid is a table of plain values.
@usableFromInline
struct CombiningStateMachine<Failure: Error, Consumer, Input, Work> {
  @usableFromInline typealias EndAction = CombiningEndAction<Consumer, Input, Work>

  @usableFromInline
  enum Slot {
    /// Its task is pulling the next element (or about to).
    case pulling
    /// It holds `readAhead` elements; its task parks (`Input`) until the consumer takes them.
    case parked(Input?)
    /// Its input finished; it may still hold elements and have a latest element.
    case finished
  }

  @usableFromInline
  struct Running {
    @usableFromInline var slots: [Slot]
    /// How many elements each slot holds that the consumer has not taken.
    @usableFromInline var held: [Int]
    /// Whether each slot has ever held an element (withLatestFrom's other: has a latest).
    @usableFromInline var produced: [Bool]
    /// combineLatest: the first output (every slot's first element) was taken.
    @usableFromInline var started = false
    /// combineLatest: the slot of each held element, in the order the elements arrived.
    @usableFromInline var arrivals = RingBuffer<Int>()
    @usableFromInline var consumer: Consumer?
    @usableFromInline var tasks: [Work] = []

    @inlinable init(count: Int) {
      slots = Array(repeating: .pulling, count: count)
      held = Array(repeating: 0, count: count)
      produced = Array(repeating: false, count: count)
    }
  }

  @usableFromInline
  enum State {
    /// Nobody has asked for an element yet: no input has started.
    case initial
    case running(Running)
    /// The result ended (`failure == nil`: finished, after the batch the consumer holds) while the
    /// consumer was away; its next `next()` waits for the input tasks, which were cancelled.
    case ended(failure: Failure?, tasks: [Work])
    /// The consumer left; its next `next()` waits for the input tasks and returns `nil`.
    case cancelled(tasks: [Work])
    case finished
    /// Held only inside an event, so that the payload being mutated is uniquely referenced.
    case modifying
  }

  /// How many elements each input may hold that the consumer has not taken: the same bound as each
  /// input of `Flow.merge`.
  @usableFromInline static var defaultReadAhead: Int { 64 }

  @usableFromInline let mode: CombiningMode
  @usableFromInline let count: Int
  @usableFromInline let readAhead: Int
  @usableFromInline var state = State.initial

  @inlinable init(mode: CombiningMode, count: Int, readAhead: Int = Self.defaultReadAhead) {
    precondition(
      mode == .zip || mode == .combineLatest || count == 2, "Internal inconsistency: withLatestFrom has 2 slots")
    precondition(readAhead > 0, "Internal inconsistency: readAhead \(readAhead)")
    self.mode = mode
    self.count = count
    self.readAhead = readAhead
  }

  /// Whether the consumer may take a batch now. Does not change the state.
  @inlinable func deliverable(_ running: Running) -> Bool {
    switch mode {
    case .zip: return !running.held.contains(0)
    case .combineLatest: return running.started ? !running.arrivals.isEmpty : !running.held.contains(0)
    // Slot 0 holds an element only if slot 1 had a latest when it arrived.
    case .withLatestFrom: return running.held[0] > 0
    }
  }

  /// Whether no output can ever be made again beyond the batches already taken.
  @inlinable func exhausted(_ running: Running) -> Bool {
    switch mode {
    case .zip:
      for slot in 0..<count where running.held[slot] == 0 {
        if case .finished = running.slots[slot] { return true }
      }
      return false
    case .combineLatest:
      var finished = 0
      for slot in 0..<count {
        guard case .finished = running.slots[slot] else { continue }
        // It finished without ever producing: no output can be made.
        if !running.produced[slot] { return true }
        finished += 1
      }
      return finished == count && running.arrivals.isEmpty && !running.held.contains { $0 > 0 }
    case .withLatestFrom:
      if case .finished = running.slots[0] { return running.held[0] == 0 }
      return false
    }
  }

  // MARK: Consumer events

  @usableFromInline
  enum NextAction {
    case startInputs
    /// Move `batch` to the consumer, resume `resumeInputs` (pull on), perform `end` (not empty when
    /// that batch holds the last outputs: the result has ended).
    case take(CombiningBatch, resumeInputs: [Input], end: EndAction)
    case suspend
    /// The result is over: wait for `awaiting`, then end with `failure`.
    case end(failure: Failure?, awaiting: [Work])
  }

  /// The consumer has made every output of its last batch and asks for more.
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
      guard deliverable(running) else { return .suspend }
      state = .modifying
      let batch: CombiningBatch
      switch mode {
      case .zip:
        let rows = running.held.min()!
        for slot in 0..<count { running.held[slot] -= rows }
        batch = .rows(rows)
      case .combineLatest:
        var arrivals = RingBuffer<Int>()
        swap(&arrivals, &running.arrivals)
        for slot in 0..<count { running.held[slot] = 0 }
        batch = .arrivals(arrivals, first: !running.started)
        running.started = true
      case .withLatestFrom:
        batch = .base(running.held[0])
        running.held[0] = 0
      }
      if exhausted(running) {
        state = .ended(failure: nil, tasks: running.tasks)
        return .take(batch, resumeInputs: [], end: Self.stopping(running))
      }
      var resume: [Input] = []
      for slot in 0..<count where running.held[slot] <= readAhead / 2 {
        // A task that has not parked yet sees `.pulling` when it tries to, and goes on.
        guard case .parked(let parked) = running.slots[slot] else { continue }
        running.slots[slot] = .pulling
        if let parked { resume.append(parked) }
      }
      state = .running(running)
      return .take(batch, resumeInputs: resume, end: EndAction())
    case .ended(let failure, let tasks):
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

  /// The consumer is about to suspend; returns the waiter if it must resume at once.
  @inlinable mutating func suspendConsumer(_ consumer: Consumer) -> Consumer? {
    switch state {
    case .running(var running):
      // An element may have arrived between `next` and this registration.
      guard !deliverable(running) else { return consumer }
      state = .modifying
      precondition(running.consumer == nil, "Internal inconsistency: two consumers suspended on one iteration")
      running.consumer = consumer
      state = .running(running)
      return nil
    case .ended, .cancelled, .finished:
      return consumer
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event suspendConsumer")
    }
  }

  /// The consumer's task was cancelled or its iterator was released.
  @inlinable mutating func consumerCancelled() -> EndAction {
    switch state {
    case .initial:
      state = .finished
      return EndAction()
    case .running(let running):
      state = .cancelled(tasks: running.tasks)
      return Self.stopping(running)
    case .ended(_, let tasks):
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
    var stop: [Input] = []
    for case .parked(let parked?) in running.slots { stop.append(parked) }
    return EndAction(resumeConsumer: running.consumer, stopInputs: stop, cancelTasks: running.tasks)
  }

  // MARK: Input events

  /// The input tasks exist; returns those to cancel because the result already ended.
  @inlinable mutating func inputsStarted(_ tasks: [Work]) -> [Work] {
    switch state {
    case .running(var running):
      state = .modifying
      running.tasks += tasks
      state = .running(running)
      return []
    case .ended(let failure, let earlier):
      state = .ended(failure: failure, tasks: earlier + tasks)
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
    /// Store the element (withLatestFrom's other: as its latest), resume `resumeConsumer` if it is
    /// there (a batch is ready for it), then pull again, or park (`parks`: `suspendInput`).
    case keep(resumeConsumer: Consumer?, parks: Bool)
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
      if mode == .withLatestFrom {
        // The other only replaces its latest, which never makes an output by itself.
        if slot == 1 {
          if !running.produced[1] {
            state = .modifying
            running.produced[1] = true
            state = .running(running)
          }
          return .keep(resumeConsumer: nil, parks: false)
        }
        // Before the other's first element there is nothing to pair it with.
        guard running.produced[1] else { return .drop(pullAgain: true) }
      }
      state = .modifying
      running.held[slot] += 1
      running.produced[slot] = true
      if mode == .combineLatest { running.arrivals.append(slot) }
      let consumer = deliverable(running) ? running.consumer.take() : nil
      let parks = running.held[slot] >= readAhead
      if parks { running.slots[slot] = .parked(nil) }
      state = .running(running)
      return .keep(resumeConsumer: consumer, parks: parks)
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
    /// Resume the input at once: pull again (`true`) or stop (`false`).
    case resume(pullAgain: Bool)
  }

  /// The task of `slot` is about to park until the consumer takes its elements.
  @inlinable mutating func suspendInput(_ slot: Int, _ input: Input) -> SuspendInputAction {
    switch state {
    case .running(var running):
      switch running.slots[slot] {
      case .parked(nil):
        state = .modifying
        running.slots[slot] = .parked(input)
        state = .running(running)
        return .park
      case .pulling:
        // The consumer took a batch between `received` and this registration.
        return .resume(pullAgain: true)
      case .parked(.some), .finished:
        preconditionFailure("Internal inconsistency: slot \(slot) is \(running.slots[slot]), event suspendInput")
      }
    case .ended, .cancelled, .finished:
      return .resume(pullAgain: false)
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event suspendInput(\(slot))")
    }
  }

  /// The input of `slot` finished (`failure == nil`) or failed. The first failure ends the result at
  /// once, and the elements not yet made into outputs (held here, or in the consumer's batch) are
  /// dropped. A finish ends it once no output can be made any more: zip, once a finished slot holds
  /// nothing; combineLatest, at once if the slot never produced, else once every slot finished and
  /// their elements were taken; withLatestFrom, once the base finished and its elements were taken
  /// (the batch the consumer holds is still its own). Returns `nil` when the result had already
  /// ended (a failure is not the first).
  @inlinable mutating func inputEnded(_ slot: Int, failure: Failure? = nil) -> EndAction? {
    switch state {
    case .running(var running):
      guard case .pulling = running.slots[slot] else {
        preconditionFailure("Internal inconsistency: slot \(slot) is \(running.slots[slot]), event inputEnded")
      }
      state = .modifying
      running.slots[slot] = .finished
      if failure != nil || exhausted(running) {
        state = .ended(failure: failure, tasks: running.tasks)
        return Self.stopping(running)
      }
      state = .running(running)
      return EndAction()
    case .ended, .cancelled, .finished:
      return nil
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event inputEnded(\(slot))")
    }
  }
}

/// Which held elements the consumer takes in one step, and how they make outputs.
@usableFromInline
enum CombiningBatch {
  /// zip: the oldest `rows` elements of every slot; one output per row.
  case rows(Int)
  /// combineLatest: every held element; one output per element, in this order of slots, with the
  /// latest of the others. `first`: the first output takes the first element of every slot.
  case arrivals(RingBuffer<Int>, first: Bool)
  /// withLatestFrom: every held element of the base; one output each, with the other's latest.
  case base(Int)
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
struct CombiningEndAction<Consumer, Input, Work> {
  @usableFromInline var resumeConsumer: Consumer?
  /// Parked inputs, to be resumed with `false`: stop.
  @usableFromInline var stopInputs: [Input]
  @usableFromInline var cancelTasks: [Work]

  @inlinable init(resumeConsumer: Consumer? = nil, stopInputs: [Input] = [], cancelTasks: [Work] = []) {
    self.resumeConsumer = resumeConsumer
    self.stopInputs = stopInputs
    self.cancelTasks = cancelTasks
  }

  @inlinable var isEmpty: Bool { resumeConsumer == nil && stopInputs.isEmpty && cancelTasks.isEmpty }
}

extension CombiningEndAction
where Consumer == UnsafeContinuation<Void, Never>, Input == UnsafeContinuation<Bool, Never>, Work == Task<Void, Never> {
  /// Cancels first, so that an input resumed to stop sees its task cancelled.
  @inlinable func perform() {
    for task in cancelTasks { task.cancel() }
    for input in stopInputs { input.resume(returning: false) }
    resumeConsumer?.resume()
  }
}
