/// The consumer's end of one combining iteration: it holds the batch it took and makes the
/// outputs out of any lock, so that the element an output replaces is released here. It takes its
/// batches through the life cycle's one consumer (``OperatorConsumer``), which holds the rules of
/// cancellation and release: releasing it (a consumer that leaves its loop) ends the iteration as
/// a cancellation does.
@usableFromInline
final class CombiningConsumer<Logic: CombiningLogic> {
  @usableFromInline typealias Storage = OperatorStorage<Logic, TimelessClock>

  @usableFromInline let consumer: OperatorConsumer<Logic.Output, Logic.Failure>
  /// Read between the outputs of a batch (``OperatorStorage/hasDroppedTakenOutputs``).
  @usableFromInline let storage: Storage
  /// The batch being made into outputs (combineLatest's: with every slot's latest element).
  @usableFromInline var batch: Logic.Output
  /// How many inputs, and so slots, a batch has.
  @usableFromInline let slots: Int

  @inlinable init(_ logic: Logic, _ inputs: [Storage.IndexedInput]) {
    storage = Storage(logic: logic, clock: TimelessClock(), inputs: inputs.count)
    consumer = OperatorConsumer(storage, inputs: inputs)
    batch = Logic.Output(count: inputs.count)
    slots = inputs.count
  }

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Logic.Failure) -> Logic.Values.Output? {
    if !batch.isEmpty {
      // A cancelled consumer, or an input's failure since the batch was taken, ends the result
      // before the rest of the batch (whose elements are released here, out of the lock).
      if !Task.isCancelled, !storage.hasDroppedTakenOutputs { return batch.makeOutput() }
      batch = Logic.Output(count: slots)
    }
    guard let taken = try await consumer.next(isolation: actor) else { return nil }
    batch.take(taken)
    return batch.makeOutput()
  }
}

/// An input of a combining iteration, for each operator's logic: a base's elements, each made the
/// element of its slot by `wrap`. The base's type is hidden in the three closures, so that the
/// inputs of any arity are one array, while each element still comes from the base's iterator
/// called as itself (erased into an asynchronous closure, each element costs a call that cannot
/// be inlined: `W7` measured slower).
@usableFromInline
struct CombiningInput<Values: CombiningValues, Failure: Error>: Sendable {
  @usableFromInline typealias Pull<Logic: CombiningLogic> =
    @Sendable () ->
    OperatorStorage<Logic, TimelessClock>
    .IndexedInput

  @usableFromInline let zip: Pull<ZipLogic<Values, Failure>>
  @usableFromInline let combineLatest: Pull<CombineLatestLogic<Values, Failure>>
  @usableFromInline let withLatestFrom: Pull<WithLatestFromLogic<Values, Failure>>

  @inlinable
  init<Base: AsyncSequence & Sendable>(_ base: Base, _ wrap: @escaping @Sendable (Base.Element) -> Values.Input)
  where Base.Failure == Failure {
    let slot = Slot(base: base, wrap: wrap)
    zip = { OperatorStorage.pulling(slot) }
    combineLatest = { OperatorStorage.pulling(slot) }
    withLatestFrom = { OperatorStorage.pulling(slot) }
  }

  /// `base`'s elements, each made the element of its slot.
  @usableFromInline
  struct Slot<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable {
    @usableFromInline let base: Base
    @usableFromInline let wrap: @Sendable (Base.Element) -> Values.Input

    @inlinable init(base: Base, wrap: @escaping @Sendable (Base.Element) -> Values.Input) {
      self.base = base
      self.wrap = wrap
    }

    @usableFromInline
    struct AsyncIterator: _FlowIterator {
      @usableFromInline var base: Base.AsyncIterator
      @usableFromInline let wrap: @Sendable (Base.Element) -> Values.Input

      @inlinable init(base: Base.AsyncIterator, wrap: @escaping @Sendable (Base.Element) -> Values.Input) {
        self.base = base
        self.wrap = wrap
      }

      @inlinable
      mutating func next(isolation actor: isolated (any Actor)?) async throws(Base.Failure) -> Values.Input? {
        try await base.next(isolation: actor).map(wrap)
      }
    }

    @inlinable func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: base.makeAsyncIterator(), wrap: wrap) }
  }
}

/// Which combining operator an iteration is, named where the operator is called
/// (`CombiningIteration.pull(.zip, a, b)`): it picks the logic, once, so that no logic asks which
/// operator it serves; the arity picks the values (``CombiningValues``) and flattens their output.
/// A new combining operator is a logic, a case and its pull in ``CombiningInput``.
@usableFromInline
enum CombiningIteration: Sendable {
  case zip, combineLatest, withLatestFrom

  @inlinable
  static func pull<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable>(_ rule: Self, _ a: A, _ b: B)
    -> @Sendable () -> CombiningPull<(A.Element, B.Element), A.Failure>
  where A.Element: Sendable, B.Element: Sendable, B.Failure == A.Failure {
    typealias Values = CombiningSlots<A.Element, CombiningSlot<B.Element>>
    let inputs: [CombiningInput<Values, A.Failure>] = [
      CombiningInput(a) { .head($0) }, CombiningInput(b) { .tail($0) },
    ]
    return rule.iterations(inputs) { $0 }
  }

  @inlinable
  static func pull<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable>(
    _ rule: Self, _ a: A, _ b: B, _ c: C
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element), A.Failure>
  where A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, B.Failure == A.Failure, C.Failure == A.Failure {
    typealias Values = CombiningSlots<
      A.Element, CombiningSlots<B.Element, CombiningSlot<C.Element>>
    >
    let inputs: [CombiningInput<Values, A.Failure>] = [
      CombiningInput(a) { .head($0) }, CombiningInput(b) { .tail(.head($0)) },
      CombiningInput(c) { .tail(.tail($0)) },
    ]
    return rule.iterations(inputs) { ($0.0, $0.1.0, $0.1.1) }
  }

  @inlinable
  static func pull<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable, D: AsyncSequence & Sendable
  >(
    _ rule: Self, _ a: A, _ b: B, _ c: C, _ d: D
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element, D.Element), A.Failure>
  where
    A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, D.Element: Sendable, B.Failure == A.Failure,
    C.Failure == A.Failure, D.Failure == A.Failure
  {
    typealias Values = CombiningSlots<
      A.Element,
      CombiningSlots<B.Element, CombiningSlots<C.Element, CombiningSlot<D.Element>>>
    >
    let inputs: [CombiningInput<Values, A.Failure>] = [
      CombiningInput(a) { .head($0) }, CombiningInput(b) { .tail(.head($0)) },
      CombiningInput(c) { .tail(.tail(.head($0))) }, CombiningInput(d) { .tail(.tail(.tail($0))) },
    ]
    return rule.iterations(inputs) { ($0.0, $0.1.0, $0.1.1.0, $0.1.1.1) }
  }

  @inlinable
  static func pull<Input: AsyncSequence & Sendable>(_ rule: Self, _ inputs: [Input])
    -> @Sendable () -> CombiningPull<[Input.Element], Input.Failure>
  where Input.Element: Sendable {
    typealias Values = CombiningValuesArray<Input.Element>
    let inputs = inputs.enumerated().map { slot, input in
      CombiningInput<Values, Input.Failure>(input) { Values.Input(slot: slot, element: $0) }
    }
    return rule.iterations(inputs) { $0 }
  }

  /// What makes one iteration of `inputs` at each `makeAsyncIterator()`, on this operator's logic.
  @inlinable
  func iterations<Values: CombiningValues, Failure: Error, Element>(
    _ inputs: [CombiningInput<Values, Failure>], _ element: @escaping @Sendable (Values.Output) -> Element
  ) -> @Sendable () -> CombiningPull<Element, Failure> {
    switch self {
    case .zip: Self.iterations(inputs.map(\.zip), element)
    case .combineLatest: Self.iterations(inputs.map(\.combineLatest), element)
    case .withLatestFrom: Self.iterations(inputs.map(\.withLatestFrom), element)
    }
  }

  /// One iteration of `inputs` on `Logic`: a consumer, a storage and a logic of their own.
  @inlinable
  static func iterations<Logic: CombiningLogic, Element>(
    _ inputs: [CombiningInput<Logic.Values, Logic.Failure>.Pull<Logic>],
    _ element: @escaping @Sendable (Logic.Values.Output) -> Element
  ) -> @Sendable () -> CombiningPull<Element, Logic.Failure> {
    {
      let consumer = CombiningConsumer(Logic(count: inputs.count), inputs.map { $0() })
      return { (actor: isolated (any Actor)?) async throws(Logic.Failure) -> Element? in
        try await consumer.next(isolation: actor).map(element)
      }
    }
  }
}
