/// The elements of one combining iteration, typed for its arity: per slot, the element waiting to
/// be taken (`pending`) and the one the outputs use (`latest`). Read and written only under the
/// storage's lock, beside the ``CombiningStateMachine`` that says which slot holds what.
@usableFromInline
protocol CombiningValues: SendableMetatype {
  associatedtype Output
  init()
  /// Moves `slot`'s pending element to its latest.
  mutating func promote(_ slot: Int)
  /// The output of every slot's latest element.
  func output() -> Output
  /// Lets go of every latest element (zip keeps none).
  mutating func clearLatest()
}

extension CombiningValues {
  /// Makes the output `delivery` names; zip keeps no latest (`keepingLatest == false`).
  @inlinable mutating func take(_ delivery: CombiningDelivery, count: Int, keepingLatest: Bool) -> Output {
    switch delivery {
    case .all: for slot in 0..<count { promote(slot) }
    case .one(let slot): promote(slot)
    }
    defer { if !keepingLatest { clearLatest() } }
    return output()
  }
}

@usableFromInline
struct CombiningValues2<A, B>: CombiningValues {
  @usableFromInline var pending: (A?, B?) = (nil, nil)
  @usableFromInline var latest: (A?, B?) = (nil, nil)

  @inlinable init() {}

  @inlinable mutating func promote(_ slot: Int) {
    switch slot {
    case 0: latest.0 = pending.0.take()
    default: latest.1 = pending.1.take()
    }
  }

  @inlinable func output() -> (A, B) { (latest.0!, latest.1!) }

  @inlinable mutating func clearLatest() { latest = (nil, nil) }
}

@usableFromInline
struct CombiningValues3<A, B, C>: CombiningValues {
  @usableFromInline var pending: (A?, B?, C?) = (nil, nil, nil)
  @usableFromInline var latest: (A?, B?, C?) = (nil, nil, nil)

  @inlinable init() {}

  @inlinable mutating func promote(_ slot: Int) {
    switch slot {
    case 0: latest.0 = pending.0.take()
    case 1: latest.1 = pending.1.take()
    default: latest.2 = pending.2.take()
    }
  }

  @inlinable func output() -> (A, B, C) { (latest.0!, latest.1!, latest.2!) }

  @inlinable mutating func clearLatest() { latest = (nil, nil, nil) }
}

@usableFromInline
struct CombiningValues4<A, B, C, D>: CombiningValues {
  @usableFromInline var pending: (A?, B?, C?, D?) = (nil, nil, nil, nil)
  @usableFromInline var latest: (A?, B?, C?, D?) = (nil, nil, nil, nil)

  @inlinable init() {}

  @inlinable mutating func promote(_ slot: Int) {
    switch slot {
    case 0: latest.0 = pending.0.take()
    case 1: latest.1 = pending.1.take()
    case 2: latest.2 = pending.2.take()
    default: latest.3 = pending.3.take()
    }
  }

  @inlinable func output() -> (A, B, C, D) { (latest.0!, latest.1!, latest.2!, latest.3!) }

  @inlinable mutating func clearLatest() { latest = (nil, nil, nil, nil) }
}

@usableFromInline
struct CombiningValuesArray<Element>: CombiningValues {
  @usableFromInline var pending: [Element?] = []
  @usableFromInline var latest: [Element?] = []

  @inlinable init() {}

  @inlinable init(count: Int) {
    pending = Array(repeating: nil, count: count)
    latest = Array(repeating: nil, count: count)
  }

  @inlinable mutating func promote(_ slot: Int) {
    latest[slot] = pending[slot].take()
  }

  @inlinable func output() -> [Element] { latest.map { $0! } }

  @inlinable mutating func clearLatest() {
    for slot in latest.indices { latest[slot] = nil }
  }
}

/// What the lock of a ``CombiningStorage`` guards: the machine and the elements it accounts for.
@usableFromInline
struct CombiningState<Values: CombiningValues, Failure: Error> {
  @usableFromInline var machine: CombiningStateMachine<Failure>
  @usableFromInline var values: Values
  /// The output an input made for the suspended consumer (a hand-off), until it returns it.
  @usableFromInline var ready: Values.Output?

  @inlinable init(machine: CombiningStateMachine<Failure>, values: Values) {
    self.machine = machine
    self.values = values
  }
}

extension CombiningEndAction {
  /// Cancels first, so that an input resumed to stop sees its task cancelled.
  @inlinable func perform() {
    for task in cancelTasks { task.cancel() }
    for input in stopInputs { input.resume(returning: false) }
    resumeConsumer?.resume()
  }
}

/// Runs a ``CombiningStateMachine``: one task per input pulls it one element ahead, and the
/// consumer makes its outputs from what they hold. Continuations are resumed and tasks cancelled
/// only after the lock is released.
@usableFromInline
final class CombiningStorage<Values: CombiningValues, Failure: Error>: Sendable {
  @usableFromInline typealias Machine = CombiningStateMachine<Failure>

  @usableFromInline let state: LockedState<CombiningState<Values, Failure>>
  /// Each input's pulling loop, by slot.
  @usableFromInline let inputs: [@Sendable (CombiningStorage) async -> Void]
  @usableFromInline let keepsLatest: Bool

  @inlinable init(mode: Machine.Mode, values: Values, inputs: [@Sendable (CombiningStorage) async -> Void]) {
    self.state = LockedState(CombiningState(machine: Machine(mode: mode, count: inputs.count), values: values))
    self.inputs = inputs
    self.keepsLatest = mode != .zip
  }

  // MARK: Consumer

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Values.Output? {
    if Task.isCancelled { cancel() }
    while true {
      let (action, output) = state.withLock { state -> (Machine.NextAction, Values.Output?) in
        let action = state.machine.next()
        switch action {
        case .deliver(let delivery, _):
          let count = state.machine.count
          return (action, state.values.take(delivery, count: count, keepingLatest: keepsLatest))
        case .deliverReady:
          return (action, state.ready.take())
        case .startInputs, .suspend, .end:
          return (action, nil)
        }
      }
      switch action {
      case .deliver(_, let inputs):
        for input in inputs { input.resume(returning: true) }
        return output
      case .deliverReady:
        return output
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
        state.withLock { state in
          state.values = Values()
          state.ready = nil
        }
        if let failure { throw failure }
        return nil
      }
    }
  }

  @inlinable func cancel() {
    state.withLock { $0.machine.consumerCancelled() }.perform()
  }

  @inlinable func startInputs() {
    var tasks: [Task<Void, Never>] = []
    tasks.reserveCapacity(inputs.count)
    for input in inputs {
      tasks.append(FlowScheduling.startTask { await input(self) })
    }
    for task in state.withLock({ $0.machine.inputsStarted(tasks) }) { task.cancel() }
  }

  // MARK: Inputs

  /// Pulls `input` for `slot` until it ends or the result does; `store` puts an element in the
  /// slot's pending place.
  @inlinable func pump<Input: AsyncSequence>(
    _ input: Input, slot: Int, failure: (Input.Failure) -> Failure, store: (inout Values, Input.Element) -> Void
  ) async {
    var iterator = input.makeAsyncIterator()
    while true {
      let element: Input.Element
      do throws(Input.Failure) {
        guard let next = try await iterator.next(isolation: nil) else {
          state.withLock { $0.machine.inputFinished(slot) }.perform()
          return
        }
        element = next
      } catch {
        let failure = failure(error)
        state.withLock { $0.machine.inputFailed(slot, failure) }.perform()
        return
      }
      let action = state.withLock { state in
        let action = state.machine.received(slot)
        switch action {
        case .hold:
          store(&state.values, element)
        case .handOff(let delivery, _, _):
          store(&state.values, element)
          let count = state.machine.count
          state.ready = state.values.take(delivery, count: count, keepingLatest: keepsLatest)
        case .replaceLatest:
          store(&state.values, element)
          state.values.promote(slot)
        case .drop:
          break
        }
        return action
      }
      switch action {
      case .handOff(_, let consumer, let inputs):
        for input in inputs { input.resume(returning: true) }
        consumer.resume()
      case .hold:
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
      case .replaceLatest:
        continue
      case .drop(let pullAgain):
        if !pullAgain {
          await iterator.stopPulling()
          return
        }
      }
    }
  }
}

/// The consumer's end of one combining iteration; releasing it (a consumer that leaves its loop)
/// cancels the inputs.
@usableFromInline
final class CombiningConsumer<Values: CombiningValues, Failure: Error> {
  @usableFromInline let storage: CombiningStorage<Values, Failure>

  @inlinable init(_ storage: CombiningStorage<Values, Failure>) {
    self.storage = storage
  }

  deinit {
    storage.cancel()
  }

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Values.Output? {
    try await storage.next(isolation: actor)
  }
}

/// One iteration's pull function, as the public combining sequences hold it: the types of the
/// inputs stay inside the closure, so that one public type serves every arity.
@usableFromInline
typealias CombiningPull<Element, Failure: Error> = (isolated (any Actor)?) async throws(Failure) -> Element?

/// The iterator state every combining sequence shares: it lets go of the pull (and so of the
/// iteration's storage) once the iteration has ended, and returns `nil` from then on.
@usableFromInline
struct CombiningIterator<Element, Failure: Error> {
  @usableFromInline var pull: CombiningPull<Element, Failure>?

  @inlinable init(_ pull: @escaping CombiningPull<Element, Failure>) {
    self.pull = pull
  }

  @inlinable mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    guard let pull else { return nil }
    do {
      guard let element = try await pull(actor) else {
        self.pull = nil
        return nil
      }
      return element
    } catch {
      self.pull = nil
      throw error
    }
  }
}

extension CombiningStorage {
  /// A pull for one iteration of a fresh storage.
  @inlinable static func pull(
    mode: Machine.Mode, values: Values, inputs: [@Sendable (CombiningStorage) async -> Void]
  ) -> CombiningPull<Values.Output, Failure> {
    let consumer = CombiningConsumer(CombiningStorage(mode: mode, values: values, inputs: inputs))
    return { (actor: isolated (any Actor)?) async throws(Failure) -> Values.Output? in
      try await consumer.next(isolation: actor)
    }
  }
}
