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

/// An input of a combining iteration: `base`'s elements, each made the element of its slot (`wrap`).
@usableFromInline
struct CombiningInput<Base: AsyncSequence & Sendable, Element>: AsyncSequence, Sendable {
  @usableFromInline typealias Failure = Base.Failure

  @usableFromInline let base: Base
  @usableFromInline let wrap: @Sendable (Base.Element) -> Element

  @inlinable init(_ base: Base, wrap: @escaping @Sendable (Base.Element) -> Element) {
    self.base = base
    self.wrap = wrap
  }

  @usableFromInline
  struct AsyncIterator: _FlowIterator {
    @usableFromInline var base: Base.AsyncIterator
    @usableFromInline let wrap: @Sendable (Base.Element) -> Element

    @inlinable init(_ base: Base.AsyncIterator, wrap: @escaping @Sendable (Base.Element) -> Element) {
      self.base = base
      self.wrap = wrap
    }

    @inlinable mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await base.next(isolation: actor).map(wrap)
    }
  }

  @inlinable func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(base.makeAsyncIterator(), wrap: wrap)
  }
}

/// The inputs of an iteration of `Logic`, each told its index (its slot).
@usableFromInline
typealias CombiningPulls<Logic: TimelessOperatorLogic> = [OperatorStorage<Logic, TimelessClock>.IndexedInput]

/// The inputs of one combining operator, typed for their arity: what the iteration pulls (each
/// input as the input of its slot, with its element type kept, no erasure), into the values of
/// that arity, and the operator's element made of those values' nested output.
@usableFromInline
protocol CombiningInputs: Sendable {
  associatedtype Values: CombiningValues
  associatedtype Element: Sendable
  associatedtype Failure: Error

  /// Each input, pulled as the input of its slot into a storage of `Logic`.
  func pulls<Logic: TimelessOperatorLogic>(into _: Logic.Type) -> CombiningPulls<Logic>
  where Logic.Element == Values.Input, Logic.InputFailure == Failure
  /// The operator's element: the values' nested output (`(A, (B, C))`) flattened into its tuple.
  static func element(of output: Values.Output) -> Element
}

extension CombiningInputs {
  /// `base`, pulled as the input of its slot, each element made the values' input by `wrap`.
  @inlinable
  static func pull<Base: AsyncSequence & Sendable, Logic: TimelessOperatorLogic>(
    _ base: Base, into _: Logic.Type, _ wrap: @escaping @Sendable (Base.Element) -> Values.Input
  ) -> OperatorStorage<Logic, TimelessClock>.IndexedInput
  where Logic.Element == Values.Input, Logic.InputFailure == Base.Failure {
    OperatorStorage.pulling(CombiningInput(base, wrap: wrap))
  }
}

@usableFromInline
struct CombiningPair<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable>: CombiningInputs
where A.Element: Sendable, B.Element: Sendable, B.Failure == A.Failure {
  @usableFromInline typealias Values = CombiningSlots<A.Element, CombiningSlot<B.Element>>
  @usableFromInline typealias Failure = A.Failure

  @usableFromInline let a: A
  @usableFromInline let b: B

  @inlinable init(_ a: A, _ b: B) {
    (self.a, self.b) = (a, b)
  }

  @inlinable func pulls<Logic: TimelessOperatorLogic>(into logic: Logic.Type) -> CombiningPulls<Logic>
  where Logic.Element == Values.Input, Logic.InputFailure == Failure {
    [Self.pull(a, into: logic) { .head($0) }, Self.pull(b, into: logic) { .tail($0) }]
  }

  @inlinable static func element(of output: Values.Output) -> (A.Element, B.Element) { output }
}

@usableFromInline
struct CombiningTriple<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable>:
  CombiningInputs
where A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, B.Failure == A.Failure, C.Failure == A.Failure {
  @usableFromInline typealias Values = CombiningSlots<A.Element, CombiningSlots<B.Element, CombiningSlot<C.Element>>>
  @usableFromInline typealias Failure = A.Failure

  @usableFromInline let a: A
  @usableFromInline let b: B
  @usableFromInline let c: C

  @inlinable init(_ a: A, _ b: B, _ c: C) {
    (self.a, self.b, self.c) = (a, b, c)
  }

  @inlinable func pulls<Logic: TimelessOperatorLogic>(into logic: Logic.Type) -> CombiningPulls<Logic>
  where Logic.Element == Values.Input, Logic.InputFailure == Failure {
    [
      Self.pull(a, into: logic) { .head($0) }, Self.pull(b, into: logic) { .tail(.head($0)) },
      Self.pull(c, into: logic) { .tail(.tail($0)) },
    ]
  }

  @inlinable static func element(of output: Values.Output) -> (A.Element, B.Element, C.Element) {
    (output.0, output.1.0, output.1.1)
  }
}

@usableFromInline
struct CombiningQuadruple<
  A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable, D: AsyncSequence & Sendable
>: CombiningInputs
where
  A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, D.Element: Sendable, B.Failure == A.Failure,
  C.Failure == A.Failure, D.Failure == A.Failure
{
  @usableFromInline typealias Values = CombiningSlots<
    A.Element, CombiningSlots<B.Element, CombiningSlots<C.Element, CombiningSlot<D.Element>>>
  >
  @usableFromInline typealias Failure = A.Failure

  @usableFromInline let a: A
  @usableFromInline let b: B
  @usableFromInline let c: C
  @usableFromInline let d: D

  @inlinable init(_ a: A, _ b: B, _ c: C, _ d: D) {
    (self.a, self.b, self.c, self.d) = (a, b, c, d)
  }

  @inlinable func pulls<Logic: TimelessOperatorLogic>(into logic: Logic.Type) -> CombiningPulls<Logic>
  where Logic.Element == Values.Input, Logic.InputFailure == Failure {
    [
      Self.pull(a, into: logic) { .head($0) }, Self.pull(b, into: logic) { .tail(.head($0)) },
      Self.pull(c, into: logic) { .tail(.tail(.head($0))) }, Self.pull(d, into: logic) { .tail(.tail(.tail($0))) },
    ]
  }

  @inlinable static func element(of output: Values.Output) -> (A.Element, B.Element, C.Element, D.Element) {
    (output.0, output.1.0, output.1.1.0, output.1.1.1)
  }
}

/// The inputs of an array: one element type, any number of them.
@usableFromInline
struct CombiningArray<Input: AsyncSequence & Sendable>: CombiningInputs where Input.Element: Sendable {
  @usableFromInline typealias Values = CombiningValuesArray<Input.Element>
  @usableFromInline typealias Failure = Input.Failure

  @usableFromInline let inputs: [Input]

  @inlinable init(_ inputs: [Input]) {
    self.inputs = inputs
  }

  @inlinable func pulls<Logic: TimelessOperatorLogic>(into logic: Logic.Type) -> CombiningPulls<Logic>
  where Logic.Element == Values.Input, Logic.InputFailure == Failure {
    inputs.enumerated().map { slot, base in Self.pull(base, into: logic) { Values.Input(slot: slot, element: $0) } }
  }

  @inlinable static func element(of output: [Input.Element]) -> [Input.Element] { output }
}

/// Which combining operator an iteration is, named where the operator is called
/// (`CombiningIteration.pull(.zip, a, b)`): it picks the logic by its type, once, so that no logic
/// asks which operator it serves. A new combining operator is a logic and a rule.
@usableFromInline
protocol CombiningRule: Sendable {
  /// Makes one iteration of `inputs` at each `makeAsyncIterator()`, on this rule's logic.
  static func iteration<Inputs: CombiningInputs>(of inputs: Inputs) -> CombiningIterations<Inputs>
}

/// What makes one iteration of `Inputs` at each `makeAsyncIterator()`.
@usableFromInline
typealias CombiningIterations<Inputs: CombiningInputs> = @Sendable () -> CombiningPull<Inputs.Element, Inputs.Failure>

extension CombiningRule {
  /// One iteration of `inputs` on `Logic`: a consumer, a storage and a logic of their own.
  @inlinable
  static func iteration<Inputs: CombiningInputs, Logic: CombiningLogic>(
    of inputs: Inputs, on _: Logic.Type
  ) -> CombiningIterations<Inputs> where Logic.Values == Inputs.Values, Logic.Failure == Inputs.Failure {
    {
      let pulls = inputs.pulls(into: Logic.self)
      let consumer = CombiningConsumer(Logic(count: pulls.count), pulls)
      return { (actor: isolated (any Actor)?) async throws(Inputs.Failure) -> Inputs.Element? in
        try await consumer.next(isolation: actor).map(Inputs.element(of:))
      }
    }
  }
}

@usableFromInline
enum ZipRule: CombiningRule {
  case rule
  @inlinable static func iteration<I: CombiningInputs>(of inputs: I) -> CombiningIterations<I> {
    iteration(of: inputs, on: ZipLogic<I.Values, I.Failure>.self)
  }
}

@usableFromInline
enum CombineLatestRule: CombiningRule {
  case rule
  @inlinable static func iteration<I: CombiningInputs>(of inputs: I) -> CombiningIterations<I> {
    iteration(of: inputs, on: CombineLatestLogic<I.Values, I.Failure>.self)
  }
}

@usableFromInline
enum WithLatestFromRule: CombiningRule {
  case rule
  @inlinable static func iteration<I: CombiningInputs>(of inputs: I) -> CombiningIterations<I> {
    iteration(of: inputs, on: WithLatestFromLogic<I.Values, I.Failure>.self)
  }
}

extension CombiningRule where Self == ZipRule {
  @inlinable static var zip: Self { .rule }
}

extension CombiningRule where Self == CombineLatestRule {
  @inlinable static var combineLatest: Self { .rule }
}

extension CombiningRule where Self == WithLatestFromRule {
  @inlinable static var withLatestFrom: Self { .rule }
}

/// Makes the iterations of a combining operator from its inputs, by arity, on its rule's logic.
@usableFromInline
enum CombiningIteration {
  @inlinable static func pull<Rule: CombiningRule, A: AsyncSequence & Sendable, B: AsyncSequence & Sendable>(
    _: Rule, _ a: A, _ b: B
  ) -> CombiningIterations<CombiningPair<A, B>> where A.Element: Sendable, B.Element: Sendable, B.Failure == A.Failure {
    Rule.iteration(of: CombiningPair(a, b))
  }

  @inlinable
  static func pull<
    Rule: CombiningRule, A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable
  >(
    _: Rule, _ a: A, _ b: B, _ c: C
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element), A.Failure>
  where A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, B.Failure == A.Failure, C.Failure == A.Failure {
    Rule.iteration(of: CombiningTriple(a, b, c))
  }

  @inlinable
  static func pull<
    Rule: CombiningRule, A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable,
    D: AsyncSequence & Sendable
  >(
    _: Rule, _ a: A, _ b: B, _ c: C, _ d: D
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element, D.Element), A.Failure>
  where
    A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, D.Element: Sendable, B.Failure == A.Failure,
    C.Failure == A.Failure, D.Failure == A.Failure
  {
    Rule.iteration(of: CombiningQuadruple(a, b, c, d))
  }

  @inlinable static func pull<Rule: CombiningRule, Input: AsyncSequence & Sendable>(
    _: Rule, _ inputs: [Input]
  ) -> @Sendable () -> CombiningPull<[Input.Element], Input.Failure> where Input.Element: Sendable {
    Rule.iteration(of: CombiningArray(inputs))
  }
}
