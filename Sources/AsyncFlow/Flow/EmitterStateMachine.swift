/// The hand-off between a ``Flow`` body (the producer) and its iterator (the consumer).
///
/// The consumer takes everything buffered in one step (a batch), so a busy producer and consumer
/// meet under the lock once per batch rather than once per element. The producer may run ahead
/// of the consumer's demand by at most `bufferSize` elements, counting the ones the consumer
/// still holds from its last batch (plus one per further task of the body emitting at once: each
/// `emit` buffers its element before it waits).
///
/// Pure: it never locks, resumes or cancels; each event returns what to do. The waiters (the
/// consumer's and each waiting `emit`'s continuation) and the body's task are generic, so that its
/// grid is a table of plain values; ``EmitterStorage`` uses continuations and a `Task`.
///
/// No element is released inside an event: the buffer a cancelled consumer leaves is returned in
/// the action, and the storage empties the consumer's used-up batch before it locks (an element's
/// `deinit` may call back into this iteration, say by cancelling a task of the body that waits to
/// emit).
@usableFromInline
struct EmitterStateMachine<Element, Failure: Error, Waiter, Work> {
  @usableFromInline
  enum State {
    /// Nobody has asked for an element yet, so the body has not started.
    case idle
    case producing(Producing)
    /// The body returned or threw; the consumer drains the buffer, then sees the end.
    case bodyEnded(buffer: [Element], failure: Failure?)
    /// The consumer left while the body may still run; its next `next()` waits for the body.
    case cancelled(body: Work?)
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
    @usableFromInline var consumer: Waiter?
    /// Every `emit` waiting for room, by token. Usually one, but the emitter is `Sendable`: a body
    /// may emit from several child tasks at once, and each waiting one must be resumed.
    @usableFromInline var producers: [(token: Int, waiter: Waiter)] = []
    @usableFromInline var body: Work?

    @inlinable init() {}

    /// Takes every waiting producer, to be resumed.
    @inlinable mutating func takeProducers() -> [Waiter] {
      guard !producers.isEmpty else { return [] }
      defer { producers.removeAll() }
      return producers.map(\.waiter)
    }

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

  /// Runs `body` on the producing payload, with `state` set to `modifying` meanwhile so that the
  /// payload is uniquely referenced; `nil` in any other state.
  @inlinable mutating func modifyProducing<Result>(_ body: (inout Producing) -> Result) -> Result? {
    guard case .producing(var producing) = state else { return nil }
    state = .modifying
    defer { state = .producing(producing) }
    return body(&producing)
  }

  // MARK: Consumer events

  @usableFromInline
  enum NextAction {
    /// The batch holds elements; resume the producers that were waiting for room.
    case deliver(resumeProducers: [Waiter])
    case startBody
    case suspend(resumeProducers: [Waiter])
    /// The flow is over; wait for the body's task if it may still run, then end with `failure`.
    case end(failure: Failure?, awaiting: Work?)
  }

  /// The consumer has used up `batch` and asks for more; refills it by swapping buffers. The
  /// storage hands it over empty (so the `removeAll` calls below free capacity, no element).
  @inlinable mutating func next(swapping batch: inout [Element]) -> NextAction {
    switch state {
    case .idle:
      state = .producing(Producing())
      return .startBody
    case .producing:
      let bufferSize = self.bufferSize
      return modifyProducing { producing in
        batch.removeAll(keepingCapacity: true)
        swap(&batch, &producing.buffer)
        producing.demand = batch.isEmpty
        producing.consumerBacklog = Swift.max(batch.count - 1, 0)
        let resume = producing.producerMayContinue(bufferSize: bufferSize) ? producing.takeProducers() : []
        return batch.isEmpty ? .suspend(resumeProducers: resume) : .deliver(resumeProducers: resume)
      }!
    case .bodyEnded(var buffer, let failure):
      state = .modifying
      batch.removeAll(keepingCapacity: false)
      swap(&batch, &buffer)
      state = batch.isEmpty ? .finished : .bodyEnded(buffer: [], failure: failure)
      return batch.isEmpty ? .end(failure: failure, awaiting: nil) : .deliver(resumeProducers: [])
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

  /// The consumer is about to suspend; returns its waiter if it must resume at once.
  @inlinable mutating func suspendConsumer(_ consumer: Waiter) -> Waiter? {
    switch state {
    case .producing:
      return modifyProducing { producing in
        // An element may have arrived between `next` and this registration.
        guard producing.buffer.isEmpty else { return consumer }
        precondition(producing.consumer == nil, "Internal inconsistency: two consumers suspended on one Flow iteration")
        producing.consumer = consumer
        return nil
      }!
    case .bodyEnded, .cancelled, .finished:
      return consumer
    case .idle, .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event suspendConsumer")
    }
  }

  @usableFromInline
  struct CancelAction {
    @usableFromInline var resumeConsumer: Waiter?
    @usableFromInline var resumeProducers: [Waiter]
    @usableFromInline var cancelBody: Work?
    /// The elements nobody will read: released after the lock.
    @usableFromInline var released: [Element]

    @inlinable init(
      resumeConsumer: Waiter? = nil, resumeProducers: [Waiter] = [], cancelBody: Work? = nil, released: [Element] = []
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
  @inlinable mutating func bodyStarted(_ body: Work) -> Work? {
    switch state {
    case .producing:
      modifyProducing { $0.body = body }
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
    case proceed(resumeConsumer: Waiter?)
    case suspend(resumeConsumer: Waiter?)
    /// Nobody will read the value: the consumer left, or the emitter escaped its body.
    case drop
  }

  @inlinable mutating func emit(_ value: Element) -> EmitAction {
    let bufferSize = self.bufferSize
    return modifyProducing { producing in
      producing.buffer.append(value)
      let consumer = producing.consumer.take()
      return producing.producerMayContinue(bufferSize: bufferSize)
        ? .proceed(resumeConsumer: consumer) : .suspend(resumeConsumer: consumer)
    } ?? .drop
  }

  /// A token for an `emit` about to wait for room, so that its cancellation resumes that one.
  @inlinable mutating func makeProducerToken() -> Int {
    defer { nextProducerToken += 1 }
    return nextProducerToken
  }

  /// The producer is about to suspend for room; returns its waiter if it must resume at once.
  @inlinable mutating func suspendProducer(_ producer: Waiter, token: Int, isCancelled: Bool) -> Waiter? {
    let bufferSize = self.bufferSize
    guard !isCancelled else { return producer }
    return modifyProducing { producing in
      // The consumer may have taken a batch between `emit` and this registration.
      guard !producing.producerMayContinue(bufferSize: bufferSize) else { return producer }
      producing.producers.append((token, producer))
      return nil
    } ?? producer
  }

  /// The task of the `emit` with `token` was cancelled while it waited for room.
  @inlinable mutating func producerCancelled(token: Int) -> Waiter? {
    modifyProducing { producing in
      producing.producers.firstIndex { $0.token == token }.map { producing.producers.remove(at: $0).waiter }
    } ?? nil
  }

  /// The body returned (`failure == nil`) or threw. Returns the consumer and any `emit` still
  /// waiting (from a task the body left running), to be resumed.
  @inlinable mutating func bodyEnded(failure: Failure?) -> [Waiter] {
    guard case .producing(var producing) = state else { return [] }
    state = .bodyEnded(buffer: producing.buffer, failure: failure)
    var resume = producing.takeProducers()
    if let consumer = producing.consumer { resume.append(consumer) }
    return resume
  }
}
