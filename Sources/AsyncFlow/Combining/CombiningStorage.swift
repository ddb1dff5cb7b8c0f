/// The elements of one combining iteration, typed for its arity: per slot, the elements waiting to
/// be taken (`pending`, oldest first) and the one the outputs use (`latest`). Read and written only
/// under the storage's lock, beside the ``CombiningStateMachine`` that counts what each slot holds.
/// A latest element that a newer one replaces is not released there: it moves to `discarded`, which
/// the storage takes out of the lock at the end of the same step (an element's `deinit` may call
/// back into the same pipeline).
@usableFromInline
protocol CombiningValues: SendableMetatype {
  associatedtype Output
  /// The latest elements replaced in one step, to be released after the lock.
  associatedtype Discarded
  init()
  /// Moves `slot`'s oldest pending element to its latest; the latest it replaces is discarded.
  /// At most once per slot between two `takeDiscarded()`.
  mutating func promote(_ slot: Int)
  /// The output of every slot's latest element.
  func output() -> Output
  /// Lets go of every latest element (zip keeps none). The output just made holds them, so this
  /// releases no last reference.
  mutating func clearLatest()
  /// The discarded elements, taken out (to be released once the lock is released).
  mutating func takeDiscarded() -> Discarded
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
  @usableFromInline var pending: (RingBuffer<A>, RingBuffer<B>) = (RingBuffer(), RingBuffer())
  @usableFromInline var latest: (A?, B?) = (nil, nil)
  @usableFromInline var discarded: (A?, B?) = (nil, nil)

  @inlinable init() {}

  @inlinable mutating func promote(_ slot: Int) {
    switch slot {
    case 0: discarded.0 = latest.0.take(); latest.0 = pending.0.popFirst()
    default: discarded.1 = latest.1.take(); latest.1 = pending.1.popFirst()
    }
  }

  @inlinable func output() -> (A, B) { (latest.0!, latest.1!) }

  @inlinable mutating func clearLatest() { latest = (nil, nil) }

  @inlinable mutating func takeDiscarded() -> (A?, B?) {
    defer { discarded = (nil, nil) }
    return discarded
  }
}

@usableFromInline
struct CombiningValues3<A, B, C>: CombiningValues {
  @usableFromInline var pending: (RingBuffer<A>, RingBuffer<B>, RingBuffer<C>) = (RingBuffer(), RingBuffer(), RingBuffer())
  @usableFromInline var latest: (A?, B?, C?) = (nil, nil, nil)
  @usableFromInline var discarded: (A?, B?, C?) = (nil, nil, nil)

  @inlinable init() {}

  @inlinable mutating func promote(_ slot: Int) {
    switch slot {
    case 0: discarded.0 = latest.0.take(); latest.0 = pending.0.popFirst()
    case 1: discarded.1 = latest.1.take(); latest.1 = pending.1.popFirst()
    default: discarded.2 = latest.2.take(); latest.2 = pending.2.popFirst()
    }
  }

  @inlinable func output() -> (A, B, C) { (latest.0!, latest.1!, latest.2!) }

  @inlinable mutating func clearLatest() { latest = (nil, nil, nil) }

  @inlinable mutating func takeDiscarded() -> (A?, B?, C?) {
    defer { discarded = (nil, nil, nil) }
    return discarded
  }
}

@usableFromInline
struct CombiningValues4<A, B, C, D>: CombiningValues {
  @usableFromInline var pending: (RingBuffer<A>, RingBuffer<B>, RingBuffer<C>, RingBuffer<D>) = (
    RingBuffer(), RingBuffer(), RingBuffer(), RingBuffer()
  )
  @usableFromInline var latest: (A?, B?, C?, D?) = (nil, nil, nil, nil)
  @usableFromInline var discarded: (A?, B?, C?, D?) = (nil, nil, nil, nil)

  @inlinable init() {}

  @inlinable mutating func promote(_ slot: Int) {
    switch slot {
    case 0: discarded.0 = latest.0.take(); latest.0 = pending.0.popFirst()
    case 1: discarded.1 = latest.1.take(); latest.1 = pending.1.popFirst()
    case 2: discarded.2 = latest.2.take(); latest.2 = pending.2.popFirst()
    default: discarded.3 = latest.3.take(); latest.3 = pending.3.popFirst()
    }
  }

  @inlinable func output() -> (A, B, C, D) { (latest.0!, latest.1!, latest.2!, latest.3!) }

  @inlinable mutating func clearLatest() { latest = (nil, nil, nil, nil) }

  @inlinable mutating func takeDiscarded() -> (A?, B?, C?, D?) {
    defer { discarded = (nil, nil, nil, nil) }
    return discarded
  }
}

@usableFromInline
struct CombiningValuesArray<Element>: CombiningValues {
  @usableFromInline var pending: [RingBuffer<Element>] = []
  @usableFromInline var latest: [Element?] = []
  @usableFromInline var discarded: [Element] = []

  @inlinable init() {}

  @inlinable init(count: Int) {
    pending = Array(repeating: RingBuffer(), count: count)
    latest = Array(repeating: nil, count: count)
  }

  @inlinable mutating func promote(_ slot: Int) {
    if let old = latest[slot].take() { discarded.append(old) }
    latest[slot] = pending[slot].popFirst()
  }

  @inlinable func output() -> [Element] { latest.map { $0! } }

  @inlinable mutating func clearLatest() {
    for slot in latest.indices { latest[slot] = nil }
  }

  @inlinable mutating func takeDiscarded() -> [Element] {
    guard !discarded.isEmpty else { return [] }
    defer { discarded = [] }
    return discarded
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
  /// withLatestFrom: the other input (slot 1) is started before the base, and runs at once until it
  /// suspends; see `startInputs`.
  @usableFromInline let startsOtherFirst: Bool

  @inlinable init(mode: Machine.Mode, values: Values, inputs: [@Sendable (CombiningStorage) async -> Void]) {
    self.state = LockedState(CombiningState(machine: Machine(mode: mode, count: inputs.count), values: values))
    self.inputs = inputs
    self.keepsLatest = mode != .zip
    self.startsOtherFirst = mode == .withLatestFrom
  }

  // MARK: Consumer

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Values.Output? {
    if Task.isCancelled { cancel() }
    while true {
      // `discarded` (the latest elements the output replaced) is released here, after the lock.
      let (action, output, discarded) = state.withLock {
        state -> (Machine.NextAction, Values.Output?, Values.Discarded) in
        let action = state.machine.next()
        switch action {
        case .deliver(let delivery, _, _):
          let count = state.machine.count
          let output = state.values.take(delivery, count: count, keepingLatest: keepsLatest)
          return (action, output, state.values.takeDiscarded())
        case .deliverReady:
          return (action, state.ready.take(), state.values.takeDiscarded())
        case .startInputs, .suspend, .end:
          return (action, nil, state.values.takeDiscarded())
        }
      }
      _ = discarded
      switch action {
      case .deliver(_, let inputs, let end):
        for input in inputs { input.resume(returning: true) }
        end.perform()
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
        // The elements left (held, latest, an output never returned) leave the lock, and are
        // released after it: an element's `deinit` may call back into the pipeline.
        let left = state.withLock { state in
          let values = state.values
          state.values = Values()
          return (values, state.ready.take())
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
    if startsOtherFirst {
      // withLatestFrom: `other` is started first and runs here until it suspends, so that a value
      // it has at once (a `CurrentValueFlow`'s) is its latest before the base is even started:
      // the base's first element then pairs with it, whatever the scheduling. (Its pump yields
      // after that first value, so an input that never suspends cannot hold the caller.)
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

  /// Pulls `input` for `slot` until it ends or the result does; `store` appends an element to the
  /// slot's pending ones.
  @inlinable func pump<Input: AsyncSequence>(
    _ input: Input, slot: Int, failure: (Input.Failure) -> Failure, store: (inout Values, Input.Element) -> Void
  ) async {
    var iterator = input.makeAsyncIterator()
    // withLatestFrom's other, started at once in the caller: it gives the caller back after its
    // first value.
    var yieldsToTheCaller = startsOtherFirst && slot == 1
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
      // `discarded` (a latest element replaced) is released after the lock, as is a dropped element.
      let (action, discarded) = state.withLock { state -> (Machine.ReceiveAction, Values.Discarded) in
        let action = state.machine.received(slot)
        switch action {
        case .hold, .store:
          store(&state.values, element)
        case .handOff(let delivery, _, _, _, _):
          store(&state.values, element)
          let count = state.machine.count
          state.ready = state.values.take(delivery, count: count, keepingLatest: keepsLatest)
        case .replaceLatest:
          store(&state.values, element)
          state.values.promote(slot)
        case .drop:
          break
        }
        return (action, state.values.takeDiscarded())
      }
      _ = discarded
      let parks: Bool
      switch action {
      case .handOff(_, let consumer, let inputs, let end, let pullOn):
        for input in inputs { input.resume(returning: true) }
        consumer.resume()
        end.perform()
        parks = !pullOn
      case .hold:
        parks = true
      case .store:
        parks = false
      case .replaceLatest:
        if yieldsToTheCaller {
          yieldsToTheCaller = false
          await Task.yield()
        }
        parks = false
      case .drop(let pullAgain):
        if !pullAgain {
          await iterator.stopPulling()
          return
        }
        parks = false
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
