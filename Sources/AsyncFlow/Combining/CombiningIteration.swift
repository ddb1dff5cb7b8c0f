/// The consumer's end of one combining iteration: it holds the batch it took and makes the
/// outputs out of any lock, so that the element an output replaces is released here. Releasing it
/// (a consumer that leaves its loop) ends the iteration as a cancellation does.
@usableFromInline
final class CombiningConsumer<Logic: CombiningLogic> {
  @usableFromInline typealias Storage = OperatorStorage<Logic, TimelessClock>

  @usableFromInline let storage: Storage
  @usableFromInline let inputs: [Storage.IndexedInput]
  /// The batch being made into outputs (combineLatest's: with every slot's latest element).
  @usableFromInline var batch: Logic.Output

  @inlinable init(_ logic: Logic, _ inputs: [Storage.IndexedInput]) {
    storage = Storage(logic: logic, clock: TimelessClock(), inputs: inputs.count)
    self.inputs = inputs
    batch = Logic.Output(count: inputs.count)
  }

  deinit {
    storage.cancel()
  }

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Logic.Failure) -> Logic.Values.Output? {
    if !batch.isEmpty {
      // A cancelled consumer, or an input's failure since the batch was taken, ends the result
      // before the rest of the batch (whose elements are released here, out of the lock).
      if !Task.isCancelled, !storage.hasDroppedTakenOutputs { return batch.makeOutput() }
      batch = Logic.Output(count: inputs.count)
    }
    if Task.isCancelled { storage.cancel() }
    guard let taken = try await storage.next(isolation: actor, inputs: inputs) else { return nil }
    batch.take(taken)
    return batch.makeOutput()
  }
}

/// An input of a combining iteration: a base's elements, each made the element of its slot. The
/// base's type is erased into the iterator's `next` (one closure call per element, which wraps it
/// too), so that the inputs of any arity are one array and each logic's storage is named once.
@usableFromInline
struct CombiningInput<Element, Failure: Error>: AsyncSequence, Sendable {
  @usableFromInline typealias Next = (isolated (any Actor)?) async throws(Failure) -> Element?

  @usableFromInline let makeNext: @Sendable () -> Next

  @inlinable
  init<Base: AsyncSequence & Sendable>(_ base: Base, _ wrap: @escaping @Sendable (Base.Element) -> Element)
  where Base.Failure == Failure {
    makeNext = {
      var iterator = base.makeAsyncIterator()
      return { actor throws(Failure) in try await iterator.next(isolation: actor).map(wrap) }
    }
  }

  @usableFromInline
  struct AsyncIterator: _FlowIterator {
    @usableFromInline let next: Next

    @inlinable init(_ next: @escaping Next) { self.next = next }

    @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await next(actor)
    }
  }

  @inlinable func makeAsyncIterator() -> AsyncIterator { AsyncIterator(makeNext()) }
}

/// Which combining operator an iteration is, named where the operator is called
/// (`CombiningIteration.pull(.zip, a, b)`): it picks the logic, once, so that no logic asks which
/// operator it serves; the arity picks the values (``CombiningValues``) and flattens their output.
/// A new combining operator is a logic and a case.
@usableFromInline
enum CombiningIteration: Sendable {
  case zip, combineLatest, withLatestFrom

  @inlinable
  static func pull<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable>(_ rule: Self, _ a: A, _ b: B)
    -> @Sendable () -> CombiningPull<(A.Element, B.Element), A.Failure>
  where A.Element: Sendable, B.Element: Sendable, B.Failure == A.Failure {
    typealias Values = CombiningSlots<A.Element, CombiningSlots<B.Element, CombiningValuesArray<Never>>>
    return rule.iterations(Values.self, [CombiningInput(a) { .head($0) }, CombiningInput(b) { .tail(.head($0)) }]) {
      ($0.0, $0.1.0)
    }
  }

  @inlinable
  static func pull<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable>(
    _ rule: Self, _ a: A, _ b: B, _ c: C
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element), A.Failure>
  where A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, B.Failure == A.Failure, C.Failure == A.Failure {
    typealias Values = CombiningSlots<
      A.Element, CombiningSlots<B.Element, CombiningSlots<C.Element, CombiningValuesArray<Never>>>
    >
    let inputs: [CombiningInput<Values.Input, A.Failure>] = [
      CombiningInput(a) { .head($0) }, CombiningInput(b) { .tail(.head($0)) },
      CombiningInput(c) { .tail(.tail(.head($0))) },
    ]
    return rule.iterations(Values.self, inputs) { ($0.0, $0.1.0, $0.1.1.0) }
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
      CombiningSlots<B.Element, CombiningSlots<C.Element, CombiningSlots<D.Element, CombiningValuesArray<Never>>>>
    >
    let inputs: [CombiningInput<Values.Input, A.Failure>] = [
      CombiningInput(a) { .head($0) }, CombiningInput(b) { .tail(.head($0)) },
      CombiningInput(c) { .tail(.tail(.head($0))) }, CombiningInput(d) { .tail(.tail(.tail(.head($0)))) },
    ]
    return rule.iterations(Values.self, inputs) { ($0.0, $0.1.0, $0.1.1.0, $0.1.1.1.0) }
  }

  @inlinable
  static func pull<Input: AsyncSequence & Sendable>(_ rule: Self, _ inputs: [Input])
    -> @Sendable () -> CombiningPull<[Input.Element], Input.Failure>
  where Input.Element: Sendable {
    typealias Values = CombiningValuesArray<Input.Element>
    let inputs = inputs.enumerated().map { slot, input in
      CombiningInput(input) { Values.Input(slot: slot, element: $0) }
    }
    return rule.iterations(Values.self, inputs) { $0 }
  }

  /// What makes one iteration of `inputs` at each `makeAsyncIterator()`, on this operator's logic.
  @inlinable
  func iterations<Values: CombiningValues, Failure: Error, Element>(
    _: Values.Type, _ inputs: [CombiningInput<Values.Input, Failure>],
    _ element: @escaping @Sendable (Values.Output) -> Element
  ) -> @Sendable () -> CombiningPull<Element, Failure> {
    switch self {
    case .zip: Self.iterations(on: ZipLogic<Values, Failure>.self, inputs, element)
    case .combineLatest: Self.iterations(on: CombineLatestLogic<Values, Failure>.self, inputs, element)
    case .withLatestFrom: Self.iterations(on: WithLatestFromLogic<Values, Failure>.self, inputs, element)
    }
  }

  /// One iteration of `inputs` on `Logic`: a consumer, a storage and a logic of their own.
  @inlinable
  static func iterations<Logic: CombiningLogic, Element>(
    on _: Logic.Type, _ inputs: [CombiningInput<Logic.Element, Logic.Failure>],
    _ element: @escaping @Sendable (Logic.Values.Output) -> Element
  ) -> @Sendable () -> CombiningPull<Element, Logic.Failure> {
    {
      let consumer = CombiningConsumer(Logic(count: inputs.count), inputs.map { OperatorStorage.pulling($0) })
      return { (actor: isolated (any Actor)?) async throws(Logic.Failure) -> Element? in
        try await consumer.next(isolation: actor).map(element)
      }
    }
  }
}
