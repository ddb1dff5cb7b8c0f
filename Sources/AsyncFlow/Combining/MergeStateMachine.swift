/// The hand-off behind `Flow.merge`: one task per input appends to one shared buffer, in the order
/// the elements arrive, and the consumer takes everything buffered in one step (a batch). The
/// inputs together run ahead of the consumer by at most `bufferLimit` elements (plus the batch the
/// consumer holds): an input that finds the buffer full parks until the consumer takes it. Generic
/// over the suspended consumer, a parked input and an input's task, so that its grid is a table of
/// plain values.
@usableFromInline
struct MergeStateMachine<Element, Failure: Error, Consumer, Producer, Work> {
  @usableFromInline
  struct Running {
    @usableFromInline var buffer: [Element] = []
    @usableFromInline var consumer: Consumer?
    /// Inputs parked for room, resumed with `true` (go on) or `false` (stop).
    @usableFromInline var producers: [Producer] = []
    @usableFromInline var finishedCount = 0
    @usableFromInline var tasks: [Work] = []

    @inlinable init() {}
  }

  @usableFromInline
  enum State {
    /// Nobody has asked for an element yet: no input has started.
    case initial
    case running(Running)
    /// Every input finished (`failure == nil`) or one failed: the consumer drains the buffer, then
    /// waits for the input tasks and sees the end.
    case draining(buffer: [Element], failure: Failure?, tasks: [Work])
    /// The consumer left; its next `next()` waits for the input tasks and returns `nil`.
    case cancelled(tasks: [Work])
    case finished
    /// Held only inside an event, so that the buffer being appended to is uniquely referenced.
    case modifying
  }

  @usableFromInline let count: Int
  @usableFromInline let bufferLimit: Int
  @usableFromInline var state = State.initial

  @inlinable init(count: Int, bufferLimit: Int) {
    self.count = count
    self.bufferLimit = bufferLimit
  }

  // MARK: Consumer events

  @usableFromInline
  enum NextAction {
    case startInputs
    /// The batch holds elements; resume the inputs that waited for room.
    case deliver(resumeProducers: [Producer])
    case suspend
    /// The result is over: wait for `awaiting`, then end with `failure`.
    case end(failure: Failure?, awaiting: [Work])
  }

  /// The consumer has used up `batch` and emptied it (outside the lock: the elements it held may be
  /// the last references to them), and asks for more; refills it by swapping buffers.
  @inlinable mutating func next(swapping batch: inout [Element]) -> NextAction {
    switch state {
    case .initial:
      guard count > 0 else {
        // No inputs (an empty array): the result is empty.
        state = .finished
        return .end(failure: nil, awaiting: [])
      }
      state = .running(Running())
      return .startInputs
    case .running(var running):
      batch.removeAll(keepingCapacity: true)
      guard !running.buffer.isEmpty else { return .suspend }
      state = .modifying
      swap(&batch, &running.buffer)
      let producers = running.producers
      running.producers.removeAll()
      state = .running(running)
      return .deliver(resumeProducers: producers)
    case .draining(var buffer, let failure, let tasks):
      batch.removeAll(keepingCapacity: false)
      if buffer.isEmpty {
        state = .finished
        return .end(failure: failure, awaiting: tasks)
      }
      state = .modifying
      swap(&batch, &buffer)
      state = .draining(buffer: [], failure: failure, tasks: tasks)
      return .deliver(resumeProducers: [])
    case .cancelled(let tasks):
      batch.removeAll(keepingCapacity: false)
      state = .finished
      return .end(failure: nil, awaiting: tasks)
    case .finished:
      batch.removeAll(keepingCapacity: false)
      return .end(failure: nil, awaiting: [])
    case .modifying:
      preconditionFailure("Internal inconsistency: state modifying, event next")
    }
  }

  /// The consumer is about to suspend; returns the continuation if it must resume at once.
  @inlinable mutating func suspendConsumer(_ continuation: Consumer) -> Consumer? {
    switch state {
    case .running(var running):
      // An element may have arrived between `next` and this registration.
      guard running.buffer.isEmpty else { return continuation }
      state = .modifying
      precondition(running.consumer == nil, "Internal inconsistency: two consumers suspended on one merge")
      running.consumer = continuation
      state = .running(running)
      return nil
    case .draining, .cancelled, .finished:
      return continuation
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event suspendConsumer")
    }
  }

  @usableFromInline typealias EndAction = CombiningEndAction<Consumer, Producer, Work>

  /// The consumer's task was cancelled or its iterator was released. Returns the elements it will
  /// never take, for the storage to release after the lock (an element's `deinit` may call back
  /// into the pipeline).
  @inlinable mutating func consumerCancelled() -> (EndAction, dropped: [Element]) {
    switch state {
    case .initial:
      state = .finished
      return (EndAction(), [])
    case .running(let running):
      state = .cancelled(tasks: running.tasks)
      return (
        EndAction(resumeConsumer: running.consumer, stopInputs: running.producers, cancelTasks: running.tasks),
        running.buffer
      )
    case .draining(let buffer, _, let tasks):
      // A cancelled consumer neither drains nor throws.
      state = .cancelled(tasks: tasks)
      return (EndAction(), buffer)
    case .cancelled, .finished:
      return (EndAction(), [])
    case .modifying:
      preconditionFailure("Internal inconsistency: state modifying, event consumerCancelled")
    }
  }

  // MARK: Input events

  /// The input tasks exist; returns those to cancel because the result already ended.
  @inlinable mutating func inputsStarted(_ tasks: [Work]) -> [Work] {
    switch state {
    case .running(var running):
      state = .modifying
      running.tasks = tasks
      state = .running(running)
      return []
    case .draining(let buffer, let failure, let earlier):
      state = .draining(buffer: buffer, failure: failure, tasks: earlier + tasks)
      // Every input may have finished before this: only a failure cancels the others.
      return failure == nil ? [] : tasks
    case .cancelled(let earlier):
      state = .cancelled(tasks: earlier + tasks)
      return tasks
    case .initial, .finished, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event inputsStarted")
    }
  }

  @usableFromInline
  enum OfferAction {
    /// Buffered; the input may pull again at once.
    case proceed(resumeConsumer: Consumer?)
    /// Buffered; the buffer is full, so the input parks for room (`suspendProducer`).
    case wait(resumeConsumer: Consumer?)
    /// Dropped: the result has ended, the input stops.
    case stop
  }

  /// An input produced `element`.
  @inlinable mutating func offer(_ element: Element) -> OfferAction {
    guard case .running(var running) = state else {
      switch state {
      case .draining, .cancelled, .finished:
        // An input that ignores cancellation cannot deliver after the end.
        return .stop
      default:
        preconditionFailure("Internal inconsistency: state \(state), event offer")
      }
    }
    state = .modifying
    running.buffer.append(element)
    let consumer = running.consumer.take()
    let full = running.buffer.count >= bufferLimit
    state = .running(running)
    return full ? .wait(resumeConsumer: consumer) : .proceed(resumeConsumer: consumer)
  }

  /// An input is about to park for room; returns whether to resume it at once, and with what.
  @inlinable mutating func suspendProducer(_ continuation: Producer) -> Bool? {
    switch state {
    case .running(var running):
      // The consumer may have taken the buffer between `offer` and this registration.
      guard running.buffer.count >= bufferLimit else { return true }
      state = .modifying
      running.producers.append(continuation)
      state = .running(running)
      return nil
    case .draining, .cancelled, .finished:
      return false
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event suspendProducer")
    }
  }

  /// An input finished; the last one to finish ends the result once the buffer is drained.
  @inlinable mutating func inputFinished() -> EndAction {
    switch state {
    case .running(var running):
      state = .modifying
      running.finishedCount += 1
      guard running.finishedCount == count else {
        state = .running(running)
        return EndAction()
      }
      state = .draining(buffer: running.buffer, failure: nil, tasks: running.tasks)
      return EndAction(resumeConsumer: running.consumer)
    case .draining, .cancelled, .finished:
      return EndAction()
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event inputFinished")
    }
  }

  /// An input failed: the first failure ends the result (after what is buffered) and cancels the
  /// other inputs.
  @inlinable mutating func inputFailed(_ failure: Failure) -> EndAction {
    switch state {
    case .running(let running):
      state = .draining(buffer: running.buffer, failure: failure, tasks: running.tasks)
      return EndAction(resumeConsumer: running.consumer, stopInputs: running.producers, cancelTasks: running.tasks)
    case .draining, .cancelled, .finished:
      return EndAction()
    case .initial, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event inputFailed")
    }
  }
}
