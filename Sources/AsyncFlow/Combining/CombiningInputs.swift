/// Builds the pull of one iteration of a combining operator from its inputs: each input becomes a
/// pulling loop for its slot, with its element type kept (no erasure) and its failure mapped to the
/// result's.
@usableFromInline
enum CombiningInputs {
  @usableFromInline typealias Pump<Values: CombiningValues, Failure: Error> =
    @Sendable (CombiningStorage<Values, Failure>) async -> Void

  @inlinable static func pull<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, Failure: Error>(
    _ mode: CombiningMode, _ a: A, _ b: B,
    _ failureA: @escaping @Sendable (A.Failure) -> Failure, _ failureB: @escaping @Sendable (B.Failure) -> Failure
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element), Failure> {
    typealias Values = CombiningValues2<A.Element, B.Element>
    let pumps: [Pump<Values, Failure>] = [
      { await $0.pump(a, slot: 0, failure: failureA, store: { $0.pending.0.append($1) }) },
      { await $0.pump(b, slot: 1, failure: failureB, store: { $0.pending.1.append($1) }) },
    ]
    return { CombiningStorage.pull(mode: mode, values: Values(), inputs: pumps) }
  }

  @inlinable
  static func pull<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable, Failure: Error
  >(
    _ mode: CombiningMode, _ a: A, _ b: B, _ c: C
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element), Failure>
  where A.Failure == Failure, B.Failure == Failure, C.Failure == Failure {
    typealias Values = CombiningValues3<A.Element, B.Element, C.Element>
    let pumps: [Pump<Values, Failure>] = [
      { await $0.pump(a, slot: 0, failure: { $0 }, store: { $0.pending.0.append($1) }) },
      { await $0.pump(b, slot: 1, failure: { $0 }, store: { $0.pending.1.append($1) }) },
      { await $0.pump(c, slot: 2, failure: { $0 }, store: { $0.pending.2.append($1) }) },
    ]
    return { CombiningStorage.pull(mode: mode, values: Values(), inputs: pumps) }
  }

  @inlinable
  static func pull<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable,
    D: AsyncSequence & Sendable, Failure: Error
  >(
    _ mode: CombiningMode, _ a: A, _ b: B, _ c: C, _ d: D
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element, D.Element), Failure>
  where A.Failure == Failure, B.Failure == Failure, C.Failure == Failure, D.Failure == Failure {
    typealias Values = CombiningValues4<A.Element, B.Element, C.Element, D.Element>
    let pumps: [Pump<Values, Failure>] = [
      { await $0.pump(a, slot: 0, failure: { $0 }, store: { $0.pending.0.append($1) }) },
      { await $0.pump(b, slot: 1, failure: { $0 }, store: { $0.pending.1.append($1) }) },
      { await $0.pump(c, slot: 2, failure: { $0 }, store: { $0.pending.2.append($1) }) },
      { await $0.pump(d, slot: 3, failure: { $0 }, store: { $0.pending.3.append($1) }) },
    ]
    return { CombiningStorage.pull(mode: mode, values: Values(), inputs: pumps) }
  }

  @inlinable static func pull<Input: AsyncSequence & Sendable>(
    _ mode: CombiningMode, _ inputs: [Input]
  ) -> @Sendable () -> CombiningPull<[Input.Element], Input.Failure> {
    typealias Values = CombiningValuesArray<Input.Element>
    let pumps: [Pump<Values, Input.Failure>] = inputs.enumerated().map { slot, input in
      { await $0.pump(input, slot: slot, failure: { $0 }, store: { $0.pending[slot].append($1) }) }
    }
    let count = inputs.count
    return { CombiningStorage.pull(mode: mode, values: Values(count: count), inputs: pumps) }
  }

  // MARK: Merge

  @usableFromInline typealias MergePump<Element, Failure: Error> =
    @Sendable (MergeStorage<Element, Failure>) async -> Void

  @inlinable static func merge<A: AsyncSequence & Sendable, Failure: Error>(
    _ input: A, _ failure: @escaping @Sendable (A.Failure) -> Failure
  ) -> MergePump<A.Element, Failure> {
    { await $0.pump(input, failure: failure) }
  }

  @inlinable static func mergePull<Element, Failure: Error>(
    _ pumps: [MergePump<Element, Failure>]
  ) -> @Sendable () -> CombiningPull<Element, Failure> {
    { MergeConsumer.pull(inputs: pumps) }
  }
}
