/// Owns the lock around an ``EmitterStateMachine`` and carries out its actions after the lock is
/// released: continuations are resumed, tasks cancelled and elements released outside it.
@usableFromInline
final class EmitterStorage<Element: Sendable, Failure: Error>: Sendable {
  @usableFromInline
  typealias Machine = EmitterStateMachine<Element, Failure, UnsafeContinuation<Void, Never>, Task<Void, Never>>
  @usableFromInline let machine: LockedState<Machine>
  @usableFromInline let body: @Sendable (FlowEmitter<Element>) async throws(Failure) -> Void

  @inlinable init(bufferSize: Int, body: @escaping @Sendable (FlowEmitter<Element>) async throws(Failure) -> Void) {
    self.machine = LockedState(Machine(bufferSize: bufferSize))
    self.body = body
  }

  // MARK: Consumer side

  @inlinable func next(swapping batch: inout [Element]) -> Machine.NextAction {
    // The used-up batch is released here, before the lock: an element's `deinit` may call back in.
    batch.removeAll(keepingCapacity: true)
    return machine.withLock { $0.next(swapping: &batch) }
  }

  @inlinable func suspendConsumer(_ continuation: UnsafeContinuation<Void, Never>) {
    machine.withLock { $0.suspendConsumer(continuation) }?.resume()
  }

  /// The buffer nobody will read is released when `action` goes, after the lock.
  @inlinable func consumerCancelled() {
    let action = machine.withLock { $0.consumerCancelled() }
    action.cancelBody?.cancel()
    for producer in action.resumeProducers { producer.resume() }
    action.resumeConsumer?.resume()
  }

  @inlinable func startBody() {
    let body = FlowScheduling.startTask {
      let emitter = FlowEmitter(offer: self.offer, waitForRoom: self.waitForRoom)
      do throws(Failure) {
        try await self.body(emitter)
        for waiting in self.machine.withLock({ $0.bodyEnded(failure: nil) }) { waiting.resume() }
      } catch {
        for waiting in self.machine.withLock({ $0.bodyEnded(failure: error) }) { waiting.resume() }
      }
    }
    machine.withLock { $0.bodyStarted(body) }?.cancel()
  }

  // MARK: Producer side

  /// Buffers `value` for the consumer; returns `false` if the producer must then wait for room
  /// (``waitForRoom()``). Synchronous, so that an `emit` with room left costs no suspension point.
  @inlinable func offer(_ value: Element) -> Bool {
    switch machine.withLock({ $0.emit(value) }) {
    case .drop:
      return true
    case .proceed(let consumer):
      consumer?.resume()
      return true
    case .suspend(let consumer):
      consumer?.resume()
      return false
    }
  }

  @inlinable func waitForRoom() async {
    let token = machine.withLock { $0.makeProducerToken() }
    await withTaskCancellationHandler {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
        machine.withLock { $0.suspendProducer(continuation, token: token, isCancelled: Task.isCancelled) }?.resume()
      }
    } onCancel: {
      machine.withLock { $0.producerCancelled(token: token) }?.resume()
    }
  }
}

/// The consumer's end of one ``Flow`` iteration. It serves the current batch without locking and
/// ends the iteration when it is released, as when the consumer breaks out of its loop.
@usableFromInline
final class EmitterConsumer<Element: Sendable, Failure: Error> {
  @usableFromInline let storage: EmitterStorage<Element, Failure>
  @usableFromInline var batch: [Element] = []
  @usableFromInline var position = 0

  @inlinable init(storage: EmitterStorage<Element, Failure>) {
    self.storage = storage
  }

  deinit {
    storage.consumerCancelled()
  }

  /// The next element of the current batch, if the consumer holds one and is not cancelled.
  @inlinable func takeBuffered() -> Element? {
    guard position < batch.count, !Task.isCancelled else { return nil }
    defer { position += 1 }
    return batch[position]
  }

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    if Task.isCancelled {
      storage.consumerCancelled()
    } else if position < batch.count {
      defer { position += 1 }
      return batch[position]
    }
    while true {
      switch storage.next(swapping: &batch) {
      case .deliver(let producers):
        for producer in producers { producer.resume() }
        position = 1
        return batch[0]
      case .startBody:
        storage.startBody()
      case .suspend(let producers):
        for producer in producers { producer.resume() }
        let storage = self.storage
        await withTaskCancellationHandler {
          await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
            storage.suspendConsumer(continuation)
          }
        } onCancel: {
          storage.consumerCancelled()
        }
      case .end(let failure, let body):
        position = 0
        // No work outlives the iteration: a cancelled consumer returns once the body has ended.
        await body?.value
        if let failure { throw failure }
        return nil
      }
    }
  }
}
