/// The hand-off between a ``Flow`` body (the producer) and its iterator (the consumer).
///
/// The consumer takes everything buffered in one step (a batch), so a busy producer and consumer
/// meet under the lock once per batch rather than once per element. The producer may run ahead
/// of the consumer's demand by at most `bufferSize` elements, counting the ones the consumer
/// still holds from its last batch (plus one per further task of the body emitting at once: each
/// `emit` buffers its element before it waits).
///
/// No element is released inside an event: the buffer a cancelled consumer leaves is returned in
/// the action, and the storage empties the consumer's used-up batch before it locks (an element's
/// `deinit` may call back into this iteration, say by cancelling a task of the body that waits to
/// emit).
@usableFromInline
struct EmitterStateMachine<Element: Sendable, Failure: Error> {
  @usableFromInline
  enum State {
    /// Nobody has asked for an element yet, so the body has not started.
    case idle
    case producing(Producing)
    /// The body returned or threw; the consumer drains the buffer, then sees the end.
    case bodyEnded(buffer: [Element], failure: Failure?)
    /// The consumer left while the body may still run; its next `next()` waits for the body.
    case cancelled(body: Task<Void, Never>?)
    case finished
    /// Held only inside an event, so that the payload being mutated is uniquely referenced and
    /// appending to the buffer does not copy it.
    case modifying
  }

  @usableFromInline
  struct Producing {
    @usableFromInline var buffer: [Element] = []
    /// Elements of the consumer's last batch beyond the one it returned at once.
    @usableFromInline var consumerBacklog = 0
    /// The consumer has asked for an element and has not taken a batch since.
    @usableFromInline var demand = true
    @usableFromInline var consumer: UnsafeContinuation<Void, Never>?
    /// Every `emit` waiting for room, by token. Usually one, but the emitter is `Sendable`: a body
    /// may emit from several child tasks at once, and each waiting one must be resumed.
    @usableFromInline var producers: [(token: Int, continuation: UnsafeContinuation<Void, Never>)] = []
    @usableFromInline var body: Task<Void, Never>?

    /// Takes every waiting producer, to be resumed.
    @inlinable mutating func takeProducers() -> [UnsafeContinuation<Void, Never>] {
      guard !producers.isEmpty else { return [] }
      defer { producers.removeAll() }
      return producers.map { $0.continuation }
    }

    @inlinable init() {}

    @inlinable func producerMayContinue(bufferSize: Int) -> Bool {
      buffer.count + consumerBacklog < bufferSize + (demand ? 1 : 0)
    }
  }

  @usableFromInline let bufferSize: Int
  @usableFromInline var state = State.idle
  @usableFromInline var nextProducerToken = 0

  @inlinable init(bufferSize: Int) {
    self.bufferSize = bufferSize
  }

  // MARK: Consumer events

  @usableFromInline
  enum NextAction {
    /// The batch holds elements; resume the producers that were waiting for room.
    case deliver(resumeProducers: [UnsafeContinuation<Void, Never>])
    case startBody
    case suspend(resumeProducers: [UnsafeContinuation<Void, Never>])
    /// The flow is over; wait for the body's task if it may still run, then end with `failure`.
    case end(failure: Failure?, awaiting: Task<Void, Never>?)
  }

  /// The consumer has used up `batch` and asks for more; refills it by swapping buffers. The
  /// storage hands it over empty (so the `removeAll` calls below free capacity, no element).
  @inlinable mutating func next(swapping batch: inout [Element]) -> NextAction {
    switch state {
    case .idle:
      state = .producing(Producing())
      return .startBody

    case .producing(var producing):
      state = .modifying
      batch.removeAll(keepingCapacity: true)
      if producing.buffer.isEmpty {
        producing.consumerBacklog = 0
        producing.demand = true
      } else {
        swap(&batch, &producing.buffer)
        producing.consumerBacklog = batch.count - 1
        producing.demand = false
      }
      var resume: [UnsafeContinuation<Void, Never>] = []
      if producing.producerMayContinue(bufferSize: bufferSize) {
        resume = producing.takeProducers()
      }
      state = .producing(producing)
      return batch.isEmpty ? .suspend(resumeProducers: resume) : .deliver(resumeProducers: resume)

    case .bodyEnded(var buffer, let failure):
      state = .modifying
      batch.removeAll(keepingCapacity: false)
      if buffer.isEmpty {
        state = .finished
        return .end(failure: failure, awaiting: nil)
      }
      swap(&batch, &buffer)
      state = .bodyEnded(buffer: [], failure: failure)
      return .deliver(resumeProducers: [])

    case .cancelled(let body):
      batch.removeAll(keepingCapacity: false)
      state = .finished
      return .end(failure: nil, awaiting: body)

    case .finished:
      batch.removeAll(keepingCapacity: false)
      return .end(failure: nil, awaiting: nil)

    case .modifying:
      preconditionFailure("Internal inconsistency: state modifying, event next")
    }
  }

  /// The consumer is about to suspend; returns the continuation if it must resume at once.
  @inlinable mutating func suspendConsumer(
    _ continuation: UnsafeContinuation<Void, Never>
  ) -> UnsafeContinuation<Void, Never>? {
    switch state {
    case .producing(var producing):
      state = .modifying
      // An element may have arrived between `next` and this registration.
      guard producing.buffer.isEmpty else {
        state = .producing(producing)
        return continuation
      }
      precondition(producing.consumer == nil, "Internal inconsistency: two consumers suspended on one Flow iteration")
      producing.consumer = continuation
      state = .producing(producing)
      return nil
    case .bodyEnded, .cancelled, .finished:
      return continuation
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event suspendConsumer")
    }
  }

  @usableFromInline
  struct CancelAction {
    @usableFromInline var resumeConsumer: UnsafeContinuation<Void, Never>?
    @usableFromInline var resumeProducers: [UnsafeContinuation<Void, Never>]
    @usableFromInline var cancelBody: Task<Void, Never>?
    /// The elements nobody will read: released after the lock.
    @usableFromInline var released: [Element]

    @inlinable init(
      resumeConsumer: UnsafeContinuation<Void, Never>? = nil, resumeProducers: [UnsafeContinuation<Void, Never>] = [],
      cancelBody: Task<Void, Never>? = nil, released: [Element] = []
    ) {
      self.resumeConsumer = resumeConsumer
      self.resumeProducers = resumeProducers
      self.cancelBody = cancelBody
      self.released = released
    }
  }

  /// The consumer's task was cancelled or its iterator was released.
  @inlinable mutating func consumerCancelled() -> CancelAction {
    switch state {
    case .idle:
      state = .finished
      return CancelAction()
    case .bodyEnded(let buffer, _):
      state = .finished
      return CancelAction(released: buffer)
    case .producing(var producing):
      state = .cancelled(body: producing.body)
      return CancelAction(
        resumeConsumer: producing.consumer, resumeProducers: producing.takeProducers(), cancelBody: producing.body,
        released: producing.buffer)
    case .cancelled, .finished:
      return CancelAction()
    case .modifying:
      preconditionFailure("Internal inconsistency: state modifying, event consumerCancelled")
    }
  }

  // MARK: Producer events

  /// The body's task exists; returns it if the consumer already left, so that it is cancelled.
  @inlinable mutating func bodyStarted(_ body: Task<Void, Never>) -> Task<Void, Never>? {
    switch state {
    case .producing(var producing):
      state = .modifying
      producing.body = body
      state = .producing(producing)
      return nil
    case .cancelled:
      state = .cancelled(body: body)
      return body
    case .bodyEnded, .finished:
      return nil
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event bodyStarted")
    }
  }

  @usableFromInline
  enum EmitAction {
    case proceed(resumeConsumer: UnsafeContinuation<Void, Never>?)
    case suspend(resumeConsumer: UnsafeContinuation<Void, Never>?)
    /// Nobody will read the value: the consumer left, or the emitter escaped its body.
    case drop
  }

  @inlinable mutating func emit(_ value: Element) -> EmitAction {
    guard case .producing(var producing) = state else { return .drop }
    state = .modifying
    producing.buffer.append(value)
    let consumer = producing.consumer.take()
    let mayContinue = producing.producerMayContinue(bufferSize: bufferSize)
    state = .producing(producing)
    return mayContinue ? .proceed(resumeConsumer: consumer) : .suspend(resumeConsumer: consumer)
  }

  /// A token for an `emit` about to wait for room, so that its cancellation resumes that one.
  @inlinable mutating func makeProducerToken() -> Int {
    defer { nextProducerToken += 1 }
    return nextProducerToken
  }

  /// The producer is about to suspend for room; returns the continuation if it must resume at once.
  @inlinable mutating func suspendProducer(
    _ continuation: UnsafeContinuation<Void, Never>, token: Int, isCancelled: Bool
  ) -> UnsafeContinuation<Void, Never>? {
    guard case .producing(var producing) = state, !isCancelled,
      // The consumer may have taken a batch between `emit` and this registration.
      !producing.producerMayContinue(bufferSize: bufferSize)
    else { return continuation }
    state = .modifying
    producing.producers.append((token, continuation))
    state = .producing(producing)
    return nil
  }

  /// The task of the `emit` with `token` was cancelled while it waited for room.
  @inlinable mutating func producerCancelled(token: Int) -> UnsafeContinuation<Void, Never>? {
    guard case .producing(var producing) = state,
      let index = producing.producers.firstIndex(where: { $0.token == token })
    else { return nil }
    state = .modifying
    let producer = producing.producers.remove(at: index).continuation
    state = .producing(producing)
    return producer
  }

  /// The body returned (`failure == nil`) or threw. Returns the consumer and any `emit` still
  /// waiting (from a task the body left running), to be resumed.
  @inlinable mutating func bodyEnded(failure: Failure?) -> [UnsafeContinuation<Void, Never>] {
    guard case .producing(var producing) = state else { return [] }
    state = .bodyEnded(buffer: producing.buffer, failure: failure)
    var resume = producing.takeProducers()
    if let consumer = producing.consumer { resume.append(consumer) }
    return resume
  }
}
