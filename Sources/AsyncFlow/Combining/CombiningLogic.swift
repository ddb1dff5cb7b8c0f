import Synchronization

/// What makes an output, and what ends the result.
@usableFromInline
enum CombiningMode: Sendable {
  /// An output when every slot holds an element; it takes one of each. A slot's end ends it once
  /// that slot's elements were taken.
  case zip
  /// The first output when every slot has produced; then one per element of any slot, with the
  /// latest of the others. A slot that ends without ever producing ends it; otherwise all must,
  /// and their elements be taken.
  case combineLatest
  /// Slot 0 drives: one output per element of slot 0 with the latest of slot 1, whose elements
  /// only replace its latest (slot 1 is pulled eagerly, keeping one). Slot 0's elements before
  /// slot 1's first are dropped. Slot 0's end ends it; slot 1's end does not.
  case withLatestFrom
}

/// Which held elements the consumer takes in one step, and how they make outputs.
@usableFromInline
enum CombiningBatch: Sendable {
  /// zip: the oldest `rows` elements of every slot; one output per row.
  case rows(Int)
  /// combineLatest: every held element; one output per element, in this order of slots, with the
  /// latest of the others. `first`: the first output takes the first element of every slot.
  case arrivals(RingBuffer<Int>, first: Bool)
  /// withLatestFrom: every held element of the base; one output each, with the other's latest.
  case base(Int)
}

/// One batch as the consumer takes it: which outputs it makes, and their elements (withLatestFrom:
/// with the other's latest as of the batch).
@usableFromInline
struct CombiningOutput<Values: CombiningValues>: Sendable {
  @usableFromInline var batch: CombiningBatch
  @usableFromInline var values: Values

  @inlinable init(_ batch: CombiningBatch, _ values: Values) {
    self.batch = batch
    self.values = values
  }
}

/// Set at the first failure of an input: the consumer, which makes the outputs of its batch out of
/// the lock, checks it before each, so that the failure wins over them at once.
@usableFromInline
final class CombiningFailureFlag: Sendable {
  @usableFromInline let failed = Atomic(false)

  @inlinable init() {}

  @inlinable var isSet: Bool { failed.load(ordering: .acquiring) }
  @inlinable func set() { failed.store(true, ordering: .releasing) }
}

/// The logic of `Flow.combineLatest`, `Flow.zip` and `withLatestFromFlow` on the one life cycle, for
/// any number of inputs ("slots"), each pulled as the input of its index. A slot holds what its
/// input delivers (in `values`, typed for the arity); at `readAhead` held elements its input is no
/// longer wanted, and is wanted again once the consumer has taken it down to half. The consumer
/// takes, in one step, every element that makes an output (a batch, its `Output`) and makes the
/// outputs out of the lock. The first failure ends the result at once, before what is held (and
/// raises `failed`, for the batch the consumer holds). A plain value, tested as a table
/// (`CombiningLogicTests`).
@usableFromInline
struct CombiningLogic<Values: CombiningValues, Failure: Error>: TimelessOperatorLogic {
  @usableFromInline typealias Element = Values.Input
  @usableFromInline typealias Output = CombiningOutput<Values>
  @usableFromInline typealias InputFailure = Failure

  @usableFromInline
  struct Slot: Sendable {
    /// How many elements it holds that the consumer has not taken.
    @usableFromInline var held = 0
    /// Whether it has ever held an element (withLatestFrom's other: has a latest).
    @usableFromInline var produced = false
    /// It reached `readAhead`: its input is not wanted until the consumer took it down to half.
    @usableFromInline var full = false
    @usableFromInline var finished = false

    @inlinable init() {}
  }

  /// How many elements each input may hold that the consumer has not taken: the same bound as each
  /// input of `Flow.merge`.
  @inlinable static var defaultReadAhead: Int { 64 }

  @usableFromInline let mode: CombiningMode
  @usableFromInline let readAhead: Int
  @usableFromInline let failed: CombiningFailureFlag
  @usableFromInline var values: Values
  @usableFromInline var slots: [Slot]
  /// combineLatest: the first output (every slot's first element) was taken.
  @usableFromInline var started = false
  /// combineLatest: the slot of each held element, in the order the elements arrived.
  @usableFromInline var arrivals = RingBuffer<Int>()
  @usableFromInline var end = PendingEnd<Failure>.notYet

  @inlinable
  init(
    mode: CombiningMode, count: Int, readAhead: Int = Self.defaultReadAhead,
    failed: CombiningFailureFlag = CombiningFailureFlag()
  ) {
    precondition(
      mode == .zip || mode == .combineLatest || count == 2, "Internal inconsistency: withLatestFrom has 2 slots")
    precondition(readAhead > 0, "Internal inconsistency: readAhead \(readAhead)")
    self.mode = mode
    self.readAhead = readAhead
    self.failed = failed
    values = Values(count: count)
    slots = Array(repeating: Slot(), count: count)
  }

  @inlinable
  mutating func start(at now: Instant) {
    // No inputs (an empty array): nothing to combine, the result is empty.
    if slots.isEmpty { end.end(nil) }
  }

  /// Whether the consumer may take a batch now.
  @inlinable var deliverable: Bool {
    switch mode {
    case .zip: return !slots.contains { $0.held == 0 }
    case .combineLatest: return started ? !arrivals.isEmpty : !slots.contains { $0.held == 0 }
    // Slot 0 holds an element only if slot 1 had a latest when it arrived.
    case .withLatestFrom: return slots[0].held > 0
    }
  }

  /// Whether no output can ever be made again beyond the batches already taken.
  @inlinable var exhausted: Bool {
    switch mode {
    case .zip:
      return slots.contains { $0.finished && $0.held == 0 }
    case .combineLatest:
      // A slot that finished without ever producing: no output can be made.
      if slots.contains(where: { $0.finished && !$0.produced }) { return true }
      return arrivals.isEmpty && slots.allSatisfy { $0.finished && $0.held == 0 }
    case .withLatestFrom:
      return slots[0].finished && slots[0].held == 0
    }
  }

  @inlinable
  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element> {
    let slot = Values.slot(of: element)
    if mode == .withLatestFrom {
      // The other only replaces its latest, which never makes an output by itself.
      if slot == 1 {
        slots[1].produced = true
        return values.replaceLatest(element).map { .keptDisplacing($0) } ?? .kept
      }
      // Before the other's first element there is nothing to pair it with.
      guard slots[1].produced else { return .refused(element) }
    }
    values.append(element)
    slots[slot].held += 1
    slots[slot].produced = true
    if mode == .combineLatest { arrivals.append(slot) }
    if slots[slot].held >= readAhead { slots[slot].full = true }
    return .kept
  }

  /// The first failure ends the result at once: what is held is dropped, and so is what the
  /// consumer's batch still holds. A finish ends it once no output can be made any more: zip, once
  /// a finished slot holds nothing; combineLatest, at once if the slot never produced, else once
  /// every slot finished and their elements were taken; withLatestFrom, once the base finished and
  /// its elements were taken. The life cycle passes only the first end of each input, none once
  /// the result ends.
  @inlinable
  mutating func inputEnded(_ failure: Failure?, from index: Int, at now: Instant) -> Element? {
    slots[index].finished = true
    if let failure {
      failed.set()
      end.end(failure)
    } else if exhausted {
      end.end(nil)
    }
    return nil
  }

  /// Some input may be pulled (the life cycle then asks each).
  @inlinable var wantsInput: Bool { slots.contains { !$0.full } }
  @inlinable func wantsInput(from index: Int) -> Bool { !slots[index].full }
  @inlinable var isEnding: Bool { end.isKnown }
  @inlinable var hasOutput: Bool { end.isWaiting || (!isEnding && deliverable) }

  @inlinable
  mutating func nextOutput(at now: Instant) -> OperatorOutput<Output, Failure>? {
    // A failure wins over what is held; a finish leaves nothing deliverable.
    if isEnding { return end.deliver() }
    guard deliverable else { return nil }
    var batch = Values(count: slots.count)
    let taken: CombiningBatch
    switch mode {
    case .zip:
      let rows = slots.lazy.map(\.held).min()!
      values.moveRows(rows, to: &batch)
      for slot in slots.indices { slots[slot].held -= rows }
      taken = .rows(rows)
    case .combineLatest:
      values.moveAll(to: &batch)
      var order = RingBuffer<Int>()
      swap(&order, &arrivals)
      for slot in slots.indices { slots[slot].held = 0 }
      taken = .arrivals(order, first: !started)
      started = true
    case .withLatestFrom:
      values.moveAll(to: &batch)
      values.shareLatest(1, with: &batch)
      taken = .base(slots[0].held)
      slots[0].held = 0
    }
    if exhausted {
      end.end(nil)
    } else {
      for slot in slots.indices where slots[slot].full && slots[slot].held <= readAhead / 2 {
        slots[slot].full = false
      }
    }
    return .element(CombiningOutput(taken, batch))
  }
}

/// The consumer's end of one combining iteration: it holds the batch it took and makes the
/// outputs out of any lock, so that the element an output replaces is released here. Releasing it
/// (a consumer that leaves its loop) ends the iteration as a cancellation does.
@usableFromInline
final class CombiningConsumer<Values: CombiningValues, Failure: Error> {
  @usableFromInline typealias Storage = OperatorStorage<CombiningLogic<Values, Failure>, TimelessClock>

  @usableFromInline let storage: Storage
  @usableFromInline let inputs: [Storage.IndexedInput]
  @usableFromInline let mode: CombiningMode
  @usableFromInline let failed: CombiningFailureFlag
  /// The batch being made into outputs, and every slot's latest element.
  @usableFromInline var values: Values
  /// combineLatest: the slots of the batch's elements, in the order they arrived.
  @usableFromInline var order = RingBuffer<Int>()
  /// zip and withLatestFrom: the outputs the batch still makes.
  @usableFromInline var rows = 0
  /// combineLatest: the batch's first output takes the first element of every slot.
  @usableFromInline var first = false

  @inlinable init(_ mode: CombiningMode, _ inputs: [Storage.IndexedInput]) {
    let failed = CombiningFailureFlag()
    self.failed = failed
    let logic = CombiningLogic<Values, Failure>(mode: mode, count: inputs.count, failed: failed)
    storage = Storage(logic: logic, clock: TimelessClock(), inputs: inputs.count)
    self.inputs = inputs
    self.mode = mode
    values = Values(count: inputs.count)
  }

  deinit {
    storage.cancel()
  }

  @inlinable var holdsOutputs: Bool { rows > 0 || first || !order.isEmpty }

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Values.Output? {
    // A cancelled consumer, or an input's failure, ends the result before the rest of the batch.
    if holdsOutputs, !Task.isCancelled, !failed.isSet { return makeOutput() }
    if holdsOutputs {
      // What the batch still held is released here, out of the lock.
      values = Values(count: inputs.count)
      (rows, first) = (0, false)
      order = RingBuffer()
    }
    // withLatestFrom shares the other's latest with each batch: this one goes here, not under the lock.
    if mode == .withLatestFrom { values.clearLatest(1) }
    if Task.isCancelled { storage.cancel() }
    guard let output = try await storage.next(isolation: actor, startTask: start) else { return nil }
    var taken = output.values
    taken.moveAll(to: &values)
    switch output.batch {
    case .rows(let count):
      rows = count
    case .base(let count):
      rows = count
      taken.shareLatest(1, with: &values)
    case .arrivals(let arrivals, let isFirst):
      order = arrivals
      first = isFirst
      if isFirst {
        // The first output takes the first arrival of each slot out of the order.
        var taken = Array(repeating: false, count: inputs.count)
        var rest = RingBuffer<Int>()
        while let slot = order.popFirst() {
          if taken[slot] { rest.append(slot) } else { taken[slot] = true }
        }
        order = rest
      }
    }
    return makeOutput()
  }

  @inlinable func makeOutput() -> Values.Output {
    switch mode {
    case .zip:
      rows -= 1
      return values.row()
    case .withLatestFrom:
      rows -= 1
      values.promote(0)
      return values.output()
    case .combineLatest:
      if first {
        first = false
        for slot in 0..<inputs.count { values.promote(slot) }
      } else {
        values.promote(order.popFirst()!)
      }
      return values.output()
    }
  }

  /// Starts the iteration's task. withLatestFrom's other (input 1) runs first in a task of its own,
  /// here until it suspends, so that a value it has at once (a `CurrentValueFlow`'s) is its latest
  /// before the base is even started: the base's first element then pairs with it, whatever the
  /// scheduling. (Its input yields after that first value, so one that never suspends cannot hold
  /// the caller.) The life cycle's task runs the base, then waits for the other, and passes its
  /// cancellation on: no work outlives the iteration.
  @inlinable func start() {
    guard mode == .withLatestFrom else { return storage.startTask(inputs) }
    let (storage, base, other) = (storage, inputs[0], inputs[1])
    let otherTask = FlowScheduling.startTaskRunningAtOnce { await other(storage, 1) }
    let task = FlowScheduling.startTask {
      await withTaskCancellationHandler {
        await base(storage, 0)
        await otherTask.value
      } onCancel: {
        otherTask.cancel()
      }
    }
    storage.state.withLock { $0.taskStarted(task) }?.cancel()
  }
}

/// An input of a combining iteration: `base`'s elements, each made the element of its slot
/// (`wrap`). withLatestFrom's other yields after its first element (`yieldsAfterFirst`), so that,
/// started in the caller, it gives the caller back.
@usableFromInline
struct CombiningInput<Base: AsyncSequence & Sendable, Element>: AsyncSequence, Sendable {
  @usableFromInline typealias Failure = Base.Failure

  @usableFromInline let base: Base
  @usableFromInline let wrap: @Sendable (Base.Element) -> Element
  @usableFromInline let yieldsAfterFirst: Bool

  @inlinable init(_ base: Base, yieldsAfterFirst: Bool, wrap: @escaping @Sendable (Base.Element) -> Element) {
    self.base = base
    self.wrap = wrap
    self.yieldsAfterFirst = yieldsAfterFirst
  }

  @usableFromInline
  struct AsyncIterator: _FlowIterator {
    @usableFromInline var base: Base.AsyncIterator
    @usableFromInline let wrap: @Sendable (Base.Element) -> Element
    @usableFromInline var yieldsAfterNext: Bool
    @usableFromInline var yieldsNow = false

    @inlinable init(_ base: Base.AsyncIterator, yieldsAfterFirst: Bool, wrap: @escaping @Sendable (Base.Element) -> Element) {
      self.base = base
      self.wrap = wrap
      self.yieldsAfterNext = yieldsAfterFirst
    }

    @inlinable mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      if yieldsNow {
        yieldsNow = false
        await Task.yield()
      }
      guard let element = try await base.next(isolation: actor) else { return nil }
      if yieldsAfterNext {
        (yieldsAfterNext, yieldsNow) = (false, true)
      }
      return wrap(element)
    }
  }

  @inlinable func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(base.makeAsyncIterator(), yieldsAfterFirst: yieldsAfterFirst, wrap: wrap)
  }
}

/// Makes one iteration of a combining operator from its inputs: each input is pulled as the input
/// of its slot, with its element type kept (no erasure), stored in the values of its arity.
@usableFromInline
enum CombiningIteration {
  @usableFromInline typealias Input<Values: CombiningValues, Failure: Error> =
    OperatorStorage<CombiningLogic<Values, Failure>, TimelessClock>.IndexedInput

  @inlinable static func input<Base: AsyncSequence & Sendable, Values: CombiningValues>(
    _ base: Base, _: Values.Type, yieldsAfterFirst: Bool = false,
    _ wrap: @escaping @Sendable (Base.Element) -> Values.Input
  ) -> Input<Values, Base.Failure> {
    let input = CombiningInput(base, yieldsAfterFirst: yieldsAfterFirst, wrap: wrap)
    return { storage, index in await storage.pull(input, as: index) }
  }

  /// `output` flattens the values' nested output (`(A, (B, C))`) into the operator's tuple.
  @inlinable static func make<Values: CombiningValues, Element, Failure: Error>(
    _ mode: CombiningMode, _ inputs: [Input<Values, Failure>],
    output: @escaping @Sendable (Values.Output) -> Element
  ) -> @Sendable () -> CombiningPull<Element, Failure> {
    {
      let consumer = CombiningConsumer<Values, Failure>(mode, inputs)
      return { (actor: isolated (any Actor)?) async throws(Failure) -> Element? in
        try await consumer.next(isolation: actor).map(output)
      }
    }
  }

  @inlinable static func pull<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, Failure: Error>(
    _ mode: CombiningMode, _ a: A, _ b: B
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element), Failure>
  where A.Failure == Failure, B.Failure == Failure, A.Element: Sendable, B.Element: Sendable {
    typealias Values = CombiningSlots<A.Element, CombiningSlot<B.Element>>
    let inputs = [
      input(a, Values.self) { .head($0) },
      input(b, Values.self, yieldsAfterFirst: mode == .withLatestFrom) { .tail($0) },
    ]
    return make(mode, inputs) { $0 }
  }

  @inlinable
  static func pull<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable, Failure: Error
  >(
    _ mode: CombiningMode, _ a: A, _ b: B, _ c: C
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element), Failure>
  where
    A.Failure == Failure, B.Failure == Failure, C.Failure == Failure, A.Element: Sendable, B.Element: Sendable,
    C.Element: Sendable
  {
    typealias Values = CombiningSlots<A.Element, CombiningSlots<B.Element, CombiningSlot<C.Element>>>
    let inputs = [
      input(a, Values.self) { .head($0) }, input(b, Values.self) { .tail(.head($0)) },
      input(c, Values.self) { .tail(.tail($0)) },
    ]
    return make(mode, inputs) { ($0.0, $0.1.0, $0.1.1) }
  }

  @inlinable
  static func pull<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable,
    D: AsyncSequence & Sendable, Failure: Error
  >(
    _ mode: CombiningMode, _ a: A, _ b: B, _ c: C, _ d: D
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element, D.Element), Failure>
  where
    A.Failure == Failure, B.Failure == Failure, C.Failure == Failure, D.Failure == Failure, A.Element: Sendable,
    B.Element: Sendable, C.Element: Sendable, D.Element: Sendable
  {
    typealias Values = CombiningSlots<
      A.Element, CombiningSlots<B.Element, CombiningSlots<C.Element, CombiningSlot<D.Element>>>
    >
    let inputs = [
      input(a, Values.self) { .head($0) }, input(b, Values.self) { .tail(.head($0)) },
      input(c, Values.self) { .tail(.tail(.head($0))) }, input(d, Values.self) { .tail(.tail(.tail($0))) },
    ]
    return make(mode, inputs) { ($0.0, $0.1.0, $0.1.1.0, $0.1.1.1) }
  }

  @inlinable static func pull<Input: AsyncSequence & Sendable>(
    _ mode: CombiningMode, _ inputs: [Input]
  ) -> @Sendable () -> CombiningPull<[Input.Element], Input.Failure> where Input.Element: Sendable {
    typealias Values = CombiningValuesArray<Input.Element>
    let inputs = inputs.enumerated().map { slot, base in
      input(base, Values.self) { Values.Input(slot: slot, element: $0) }
    }
    return make(mode, inputs) { $0 }
  }
}
