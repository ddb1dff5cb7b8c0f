/// Owns the lock around an ``EmitterStateMachine`` and carries out its actions after the lock is
/// released: continuations are resumed and tasks cancelled outside it.
final class EmitterStorage<Element: Sendable, Failure: Error>: EmitterSink, Sendable {
  private let machine: LockedState<EmitterStateMachine<Element, Failure>>
  private let body: @Sendable (FlowEmitter<Element>) async throws(Failure) -> Void

  init(bufferSize: Int, body: @escaping @Sendable (FlowEmitter<Element>) async throws(Failure) -> Void) {
    self.machine = LockedState(EmitterStateMachine(bufferSize: bufferSize))
    self.body = body
  }

  // MARK: Consumer side

  func next(swapping batch: inout [Element]) -> EmitterStateMachine<Element, Failure>.NextAction {
    machine.withLock { $0.next(swapping: &batch) }
  }

  func suspendConsumer(_ continuation: UnsafeContinuation<Void, Never>) {
    machine.withLock { $0.suspendConsumer(continuation) }?.resume()
  }

  func consumerCancelled() {
    let action = machine.withLock { $0.consumerCancelled() }
    action.cancelBody?.cancel()
    action.resumeProducer?.resume()
    action.resumeConsumer?.resume()
  }

  func startBody() {
    let body = FlowScheduling.startTask {
      let emitter = FlowEmitter(sink: self)
      do throws(Failure) {
        try await self.body(emitter)
        self.machine.withLock { $0.bodyEnded(failure: nil) }?.resume()
      } catch {
        self.machine.withLock { $0.bodyEnded(failure: error) }?.resume()
      }
    }
    machine.withLock { $0.bodyStarted(body) }?.cancel()
  }

  // MARK: Producer side

  func emit(_ value: Element) async {
    switch machine.withLock({ $0.emit(value) }) {
    case .drop:
      return
    case .proceed(let consumer):
      consumer?.resume()
    case .suspend(let consumer):
      consumer?.resume()
      await withTaskCancellationHandler {
        await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
          machine.withLock { $0.suspendProducer(continuation, isCancelled: Task.isCancelled) }?.resume()
        }
      } onCancel: {
        machine.withLock { $0.producerCancelled() }?.resume()
      }
    }
  }
}

/// The consumer's end of one ``Flow`` iteration. It serves the current batch without locking and
/// ends the iteration when it is released, as when the consumer breaks out of its loop.
final class EmitterConsumer<Element: Sendable, Failure: Error> {
  private let storage: EmitterStorage<Element, Failure>
  private var batch: [Element] = []
  private var position = 0

  init(storage: EmitterStorage<Element, Failure>) {
    self.storage = storage
  }

  deinit {
    storage.consumerCancelled()
  }

  func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    if Task.isCancelled {
      storage.consumerCancelled()
    } else if position < batch.count {
      defer { position += 1 }
      return batch[position]
    }
    while true {
      switch storage.next(swapping: &batch) {
      case .deliver(let producer):
        producer?.resume()
        position = 1
        return batch[0]
      case .startBody:
        storage.startBody()
      case .suspend(let producer):
        producer?.resume()
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
