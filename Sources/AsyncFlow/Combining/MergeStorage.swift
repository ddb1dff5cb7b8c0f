/// Runs a ``MergeStateMachine``: one task per input pulls it and appends to the shared buffer, and
/// the consumer takes the buffer in batches. Continuations are resumed and tasks cancelled only
/// after the lock is released.
@usableFromInline
final class MergeStorage<Element, Failure: Error>: Sendable {
  @usableFromInline typealias Machine = MergeStateMachine<
    Element, Failure, UnsafeContinuation<Void, Never>, UnsafeContinuation<Bool, Never>, Task<Void, Never>
  >

  /// How far each input may run ahead of the consumer, on average: the shared buffer holds at most
  /// this many elements per input. The same as an inner of `mergeFlow`.
  @usableFromInline static var bufferPerInput: Int { 64 }

  @usableFromInline let state: LockedState<Machine>
  @usableFromInline let inputs: [@Sendable (MergeStorage) async -> Void]

  @inlinable init(inputs: [@Sendable (MergeStorage) async -> Void]) {
    self.state = LockedState(Machine(count: inputs.count, bufferLimit: Self.bufferPerInput * max(inputs.count, 1)))
    self.inputs = inputs
  }

  // MARK: Consumer

  @inlinable func next(swapping batch: inout [Element], isolation actor: isolated (any Actor)?) async throws(Failure)
    -> Bool
  {
    if Task.isCancelled { cancel() }
    while true {
      switch state.withLock({ $0.next(swapping: &batch) }) {
      case .deliver(let producers):
        for producer in producers { producer.resume(returning: true) }
        return true
      case .startInputs:
        startInputs()
      case .suspend:
        await withTaskCancellationHandler {
          await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
            state.withLock { $0.suspendConsumer(continuation) }?.resume()
          }
        } onCancel: {
          self.cancel()
        }
      case .end(let failure, let tasks):
        // No work outlives the iteration: every input's task has ended before the end is seen.
        for task in tasks { await task.value }
        if let failure { throw failure }
        return false
      }
    }
  }

  @inlinable func cancel() {
    let (action, dropped) = state.withLock { $0.consumerCancelled() }
    action.perform()
    // The buffered elements nobody will take are released here, after the lock.
    _ = dropped
  }

  @inlinable func startInputs() {
    var tasks: [Task<Void, Never>] = []
    tasks.reserveCapacity(inputs.count)
    for input in inputs {
      tasks.append(FlowScheduling.startTask { await input(self) })
    }
    for task in state.withLock({ $0.inputsStarted(tasks) }) { task.cancel() }
  }

  // MARK: Inputs

  /// Pulls `input` until it ends or the result does.
  @inlinable func pump<Input: AsyncSequence>(_ input: Input) async
  where Input.Element == Element, Input.Failure == Failure {
    var iterator = input.makeAsyncIterator()
    while true {
      let element: Element
      do throws(Failure) {
        guard let next = try await iterator.next(isolation: nil) else {
          state.withLock { $0.inputFinished() }.perform()
          return
        }
        element = next
      } catch {
        state.withLock { $0.inputFailed(error) }.perform()
        return
      }
      switch state.withLock({ $0.offer(element) }) {
      case .proceed(let consumer):
        consumer?.resume()
      case .wait(let consumer):
        consumer?.resume()
        let goOn = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
          if let now = state.withLock({ $0.suspendProducer(continuation) }) { continuation.resume(returning: now) }
        }
        if !goOn {
          await iterator.stopPulling()
          return
        }
      case .stop:
        await iterator.stopPulling()
        return
      }
    }
  }
}

/// The consumer's end of one merge: it serves the current batch without locking and cancels the
/// inputs when it is released.
@usableFromInline
final class MergeConsumer<Element, Failure: Error> {
  @usableFromInline let storage: MergeStorage<Element, Failure>
  @usableFromInline var batch: [Element] = []
  @usableFromInline var position = 0

  @inlinable init(_ storage: MergeStorage<Element, Failure>) {
    self.storage = storage
  }

  deinit {
    storage.cancel()
  }

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    // A cancelled consumer gets nothing more from its batch: it goes to the machine and ends.
    if position < batch.count, !Task.isCancelled {
      defer { position += 1 }
      return batch[position]
    }
    position = 0
    // The batch's elements are let go here, not under the storage's lock, where it is refilled.
    batch.removeAll(keepingCapacity: true)
    guard try await storage.next(swapping: &batch, isolation: actor) else { return nil }
    position = 1
    return batch[0]
  }
}

/// Makes one iteration of `Flow.merge` from its inputs: each input becomes a pulling loop that
/// appends to the shared buffer.
@usableFromInline
enum MergeIteration {
  @inlinable static func pump<Input: AsyncSequence & Sendable>(_ input: Input)
    -> @Sendable (MergeStorage<Input.Element, Input.Failure>) async -> Void
  {
    { await $0.pump(input) }
  }

  @inlinable static func make<Element, Failure: Error>(
    _ pumps: [@Sendable (MergeStorage<Element, Failure>) async -> Void]
  ) -> @Sendable () -> CombiningPull<Element, Failure> {
    {
      let consumer = MergeConsumer(MergeStorage(inputs: pumps))
      return { (actor: isolated (any Actor)?) async throws(Failure) -> Element? in
        try await consumer.next(isolation: actor)
      }
    }
  }
}
