/// The setup of a ``Flow/callbacks(bufferingPolicy:_:)`` flow: it hooks the callbacks up and returns the cleanup.
typealias CallbacksSetup<Element: Sendable, Failure: Error> =
  @Sendable @isolated(any) (FlowCallbacks<Element, Failure>) async -> @Sendable @isolated(any) () async -> Void

/// Owns the lock around a ``CallbacksStateMachine`` and carries out its actions after the lock is
/// released: continuations are resumed, the task cancelled, and dropped or discarded elements
/// released outside it.
final class CallbacksStorage<Element: Sendable, Failure: Error>: Sendable {
  typealias Machine = CallbacksStateMachine<
    Element, Failure, UnsafeContinuation<Void, Never>, UnsafeContinuation<Void, Never>, Task<Void, Never>
  >

  let machine: LockedState<Machine>

  init(policy: FlowBufferingPolicy) {
    machine = LockedState(Machine(policy: policy))
  }

  // MARK: Consumer side

  func next() -> Machine.NextAction {
    machine.withLock { $0.next() }
  }

  func suspendConsumer(_ continuation: UnsafeContinuation<Void, Never>) {
    machine.withLock { $0.suspendConsumer(continuation) }?.resume()
  }

  func cancel() {
    var action = machine.withLock { $0.cancel() }
    action.cancelTask?.cancel()
    action.resumeTask?.resume()
    action.resumeConsumer?.resume()
    // Released here, after the lock: a discarded element's `deinit` may call `send`.
    action.discarded = []
    action.discardedEnd = nil
  }

  /// Starts the iteration's task: it runs `setup`, parks until the iteration ends, then runs the
  /// cleanup. The task holds `setup` and the cleanup, the storage neither: a socket whose
  /// callbacks hold the storage makes no cycle with a setup that captures the socket.
  func startTask(_ setup: @escaping CallbacksSetup<Element, Failure>) {
    let task = FlowScheduling.startTask {
      let cleanup = await setup(FlowCallbacks(storage: self))
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
        self.machine.withLock { $0.taskWaits(continuation) }?.resume()
      }
      await cleanup()
    }
    machine.withLock { $0.taskStarted(task) }?.cancel()
  }

  // MARK: Callback side

  func send(_ element: Element) -> Bool {
    var action = machine.withLock { $0.send(element) }
    action.resumeConsumer?.resume()
    // Released here, after the lock: its `deinit` may call `send`.
    action.dropped = nil
    return action.accepted
  }

  func end(_ end: Machine.End) {
    let action = machine.withLock { $0.end(end) }
    action.resumeTask?.resume()
    action.resumeConsumer?.resume()
  }
}

/// The consumer's end of one ``Flow/callbacks(bufferingPolicy:_:)`` iteration; releasing it ends
/// the iteration as cancelling does, so a consumer that breaks out of its loop ends it too.
final class CallbacksConsumer<Element: Sendable, Failure: Error> {
  let storage: CallbacksStorage<Element, Failure>
  let setup: CallbacksSetup<Element, Failure>

  init(storage: CallbacksStorage<Element, Failure>, setup: @escaping CallbacksSetup<Element, Failure>) {
    self.storage = storage
    self.setup = setup
  }

  deinit {
    // Nobody waits for the task: it runs the cleanup on its own, soon after.
    storage.cancel()
  }

  func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    // Nothing is delivered after cancellation, not even what is buffered.
    if Task.isCancelled { storage.cancel() }
    while true {
      switch storage.next() {
      case .deliver(let element):
        return element
      case .startTask:
        storage.startTask(setup)
      case .suspend:
        let storage = self.storage
        await withTaskCancellationHandler {
          await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
            storage.suspendConsumer(continuation)
          }
        } onCancel: {
          storage.cancel()
        }
      case .end(let failure, let task):
        // The cleanup runs in the task: `nil` (or the failure) comes only once it has run.
        await task?.value
        if let failure { throw failure }
        return nil
      }
    }
  }
}
