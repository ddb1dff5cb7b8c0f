import Synchronization

/// Runs a ``CombiningStateMachine``: one task per input pulls it, up to the machine's read-ahead,
/// and the consumer moves what they hold out in batches. The lock guards the machine and the
/// elements it accounts for. Continuations are resumed, tasks cancelled and elements released only
/// after the lock is released.
@usableFromInline
final class CombiningStorage<Values: CombiningValues, Failure: Error>: Sendable {
  @usableFromInline typealias Machine = CombiningStateMachine<
    Failure, UnsafeContinuation<Void, Never>, UnsafeContinuation<Bool, Never>, Task<Void, Never>
  >
  /// An input's pulling loop, for its slot.
  @usableFromInline typealias Pump = @Sendable (CombiningStorage) async -> Void

  @usableFromInline let state: LockedState<(machine: Machine, values: Values)>
  /// Set when an input's failure ended the result: the consumer, which makes the outputs of its
  /// batch out of the lock, checks it before each, so that the failure wins over them at once.
  @usableFromInline let failed = Atomic(false)
  @usableFromInline let inputs: [Pump]
  @usableFromInline let mode: CombiningMode

  @inlinable init(mode: CombiningMode, inputs: [Pump]) {
    self.state = LockedState((Machine(mode: mode, count: inputs.count), Values(count: inputs.count)))
    self.inputs = inputs
    self.mode = mode
  }

  // MARK: Consumer

  /// The next batch, moved into `batch` (whose rings are empty), or `nil` at the end.
  @inlinable func next(into batch: inout Values, isolation actor: isolated (any Actor)?) async throws(Failure)
    -> CombiningBatch?
  {
    if Task.isCancelled { cancel() }
    while true {
      let action = state.withLock { state in
        let action = state.machine.next()
        if case .take(let taken, _, _) = action {
          switch taken {
          case .rows(let rows): state.values.moveRows(rows, to: &batch)
          case .arrivals: state.values.moveAll(to: &batch)
          case .base:
            state.values.moveAll(to: &batch)
            state.values.shareLatest(1, with: &batch)
          }
        }
        return action
      }
      switch action {
      case .take(let taken, let inputs, let end):
        for input in inputs { input.resume(returning: true) }
        end.perform()
        return taken
      case .startInputs:
        startInputs()
      case .suspend:
        await withTaskCancellationHandler {
          await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
            state.withLock { $0.machine.suspendConsumer(continuation) }?.resume()
          }
        } onCancel: {
          self.cancel()
        }
      case .end(let failure, let tasks):
        // No work outlives the iteration: every input's task has ended before the end is seen.
        for task in tasks { await task.value }
        // The elements left leave the lock, and are released after it.
        var left = Values(count: 0)
        state.withLock { swap(&left, &$0.values) }
        _ = left
        if let failure { throw failure }
        return nil
      }
    }
  }

  @inlinable func cancel() {
    state.withLock { $0.machine.consumerCancelled() }.perform()
  }

  /// Starts one task per input. withLatestFrom's other (slot 1) is started first and runs here
  /// until it suspends, so that a value it has at once (a `CurrentValueFlow`'s) is its latest
  /// before the base is even started: the base's first element then pairs with it, whatever the
  /// scheduling. (Its pump yields after that first value, so an input that never suspends cannot
  /// hold the caller.)
  @inlinable func startInputs() {
    let slots = mode == .withLatestFrom ? [1, 0] : Array(inputs.indices)
    for slot in slots {
      let input = inputs[slot]
      let task: Task<Void, Never>
      if mode == .withLatestFrom && slot == 1 {
        task = FlowScheduling.startTaskRunningAtOnce { await input(self) }
      } else {
        task = FlowScheduling.startTask { await input(self) }
      }
      for task in state.withLock({ $0.machine.inputsStarted([task]) }) { task.cancel() }
    }
  }

  // MARK: Inputs

  /// Pulls `input` for `slot` until it ends or the result does. `store` keeps an element in the
  /// slot's values, and returns the one it replaces (withLatestFrom's other), to be released after
  /// the lock.
  @inlinable func pump<Input: AsyncSequence>(
    _ input: Input, slot: Int, store: (inout Values, Input.Element) -> Input.Element?
  ) async where Input.Failure == Failure {
    var iterator = input.makeAsyncIterator()
    // withLatestFrom's other, started at once in the caller: it gives the caller back after its
    // first value.
    var yieldsToTheCaller = mode == .withLatestFrom && slot == 1
    while true {
      let element: Input.Element?
      var failure: Failure?
      do throws(Failure) {
        element = try await iterator.next(isolation: nil)
      } catch {
        element = nil
        failure = error
      }
      guard let element else {
        guard let end = state.withLock({ $0.machine.inputEnded(slot, failure: failure) }) else { return }
        if failure != nil { failed.store(true, ordering: .releasing) }
        end.perform()
        return
      }
      // A replaced or dropped element is released after the lock.
      let (action, replaced) = state.withLock { state -> (Machine.ReceiveAction, Input.Element?) in
        let action = state.machine.received(slot)
        guard case .keep = action else { return (action, element) }
        return (action, store(&state.values, element))
      }
      _ = replaced
      var pullAgain = true
      switch action {
      case .keep(let consumer, let parks):
        consumer?.resume()
        if yieldsToTheCaller {
          yieldsToTheCaller = false
          await Task.yield()
        }
        guard parks else { continue }
        pullAgain = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
          switch state.withLock({ $0.machine.suspendInput(slot, continuation) }) {
          case .park: break
          case .resume(let pullAgain): continuation.resume(returning: pullAgain)
          }
        }
      case .drop(let again):
        pullAgain = again
      }
      if !pullAgain {
        await iterator.stopPulling()
        return
      }
    }
  }
}
