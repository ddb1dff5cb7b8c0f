import Synchronization

/// What the lock of a ``CombiningStorage`` guards: the machine and the elements it accounts for.
@usableFromInline
struct CombiningState<Values: CombiningValues, Failure: Error> {
  @usableFromInline var machine: CombiningStorage<Values, Failure>.Machine
  @usableFromInline var values: Values

  @inlinable init(machine: CombiningStorage<Values, Failure>.Machine, values: Values) {
    self.machine = machine
    self.values = values
  }
}

/// Runs a ``CombiningStateMachine``: one task per input pulls it, up to the machine's read-ahead,
/// and the consumer moves what they hold out in batches. Continuations are resumed, tasks cancelled
/// and elements released only after the lock is released.
@usableFromInline
final class CombiningStorage<Values: CombiningValues, Failure: Error>: Sendable {
  @usableFromInline typealias Machine = CombiningStateMachine<
    Failure, UnsafeContinuation<Void, Never>, UnsafeContinuation<Bool, Never>, Task<Void, Never>
  >
  /// An input's pulling loop, for its slot.
  @usableFromInline typealias Pump = @Sendable (CombiningStorage) async -> Void

  @usableFromInline let state: LockedState<CombiningState<Values, Failure>>
  /// Set when an input's failure ended the result: the consumer, which makes the outputs of its
  /// batch out of the lock, checks it before each, so that the failure wins over them at once.
  @usableFromInline let failed = Atomic(false)
  @usableFromInline let inputs: [Pump]
  @usableFromInline let mode: CombiningMode

  @inlinable init(mode: CombiningMode, inputs: [Pump]) {
    let machine = Machine(mode: mode, count: inputs.count)
    self.state = LockedState(CombiningState(machine: machine, values: Values(count: inputs.count)))
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
        let left = state.withLock { state in
          var left = Values(count: 0)
          swap(&left, &state.values)
          return left
        }
        _ = left
        if let failure { throw failure }
        return nil
      }
    }
  }

  @inlinable func cancel() {
    state.withLock { $0.machine.consumerCancelled() }.perform()
  }

  @inlinable func startInputs() {
    if mode == .withLatestFrom {
      // `other` is started first and runs here until it suspends, so that a value it has at once
      // (a `CurrentValueFlow`'s) is its latest before the base is even started: the base's first
      // element then pairs with it, whatever the scheduling. (Its pump yields after that first
      // value, so an input that never suspends cannot hold the caller.)
      let other = inputs[1]
      let otherTask = FlowScheduling.startTaskRunningAtOnce { await other(self) }
      for task in state.withLock({ $0.machine.inputsStarted([otherTask]) }) { task.cancel() }
      let base = inputs[0]
      let baseTask = FlowScheduling.startTask { await base(self) }
      for task in state.withLock({ $0.machine.inputsStarted([baseTask]) }) { task.cancel() }
      return
    }
    var tasks: [Task<Void, Never>] = []
    tasks.reserveCapacity(inputs.count)
    for input in inputs {
      tasks.append(FlowScheduling.startTask { await input(self) })
    }
    for task in state.withLock({ $0.machine.inputsStarted(tasks) }) { task.cancel() }
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
      let element: Input.Element
      do throws(Failure) {
        guard let next = try await iterator.next(isolation: nil) else {
          state.withLock { $0.machine.inputFinished(slot) }.perform()
          return
        }
        element = next
      } catch {
        guard let end = state.withLock({ $0.machine.inputFailed(slot, error) }) else { return }
        failed.store(true, ordering: .releasing)
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
      switch action {
      case .keep(let consumer, let parks):
        consumer?.resume()
        if yieldsToTheCaller {
          yieldsToTheCaller = false
          await Task.yield()
        }
        guard parks else { continue }
        let pullAgain = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
          switch state.withLock({ $0.machine.suspendInput(slot, continuation) }) {
          case .park: break
          case .resume(let pullAgain): continuation.resume(returning: pullAgain)
          }
        }
        if !pullAgain {
          await iterator.stopPulling()
          return
        }
      case .drop(let pullAgain):
        if !pullAgain {
          await iterator.stopPulling()
          return
        }
      }
    }
  }
}
