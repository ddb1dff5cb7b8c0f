/// Makes one iteration of a combining operator from its inputs: each input becomes the pulling loop
/// of its slot, with its element type kept (no erasure), stored in the values of its arity.
@usableFromInline
enum CombiningIteration {
  @inlinable static func make<Values: CombiningValues, Failure: Error>(
    _ mode: CombiningMode, _ values: Values.Type, _ pumps: [CombiningStorage<Values, Failure>.Pump]
  ) -> @Sendable () -> CombiningPull<Values.Output, Failure> {
    {
      let storage = CombiningStorage<Values, Failure>(mode: mode, inputs: pumps)
      let consumer = CombiningConsumer(storage, count: pumps.count)
      return { (actor: isolated (any Actor)?) async throws(Failure) -> Values.Output? in
        try await consumer.next(isolation: actor)
      }
    }
  }

  @inlinable static func pull<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, Failure: Error>(
    _ mode: CombiningMode, _ a: A, _ b: B
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element), Failure>
  where A.Failure == Failure, B.Failure == Failure {
    typealias Values = CombiningValues2<A.Element, B.Element>
    let other: CombiningStorage<Values, Failure>.Pump
    if mode == .withLatestFrom {
      // withLatestFrom's other only replaces its latest; the one replaced leaves the lock.
      other = {
        await $0.pump(b, slot: 1) { (values: inout Values, element: B.Element) -> B.Element? in
          let replaced = values.latest.1
          values.latest.1 = element
          return replaced
        }
      }
    } else {
      other = { await $0.pump(b, slot: 1) { $0.pending.1.append($1); return nil } }
    }
    return make(mode, Values.self, [{ await $0.pump(a, slot: 0) { $0.pending.0.append($1); return nil } }, other])
  }

  @inlinable
  static func pull<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable, Failure: Error
  >(
    _ mode: CombiningMode, _ a: A, _ b: B, _ c: C
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element), Failure>
  where A.Failure == Failure, B.Failure == Failure, C.Failure == Failure {
    make(
      mode, CombiningValues3<A.Element, B.Element, C.Element>.self,
      [
        { await $0.pump(a, slot: 0) { $0.pending.0.append($1); return nil } },
        { await $0.pump(b, slot: 1) { $0.pending.1.append($1); return nil } },
        { await $0.pump(c, slot: 2) { $0.pending.2.append($1); return nil } },
      ])
  }

  @inlinable
  static func pull<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable,
    D: AsyncSequence & Sendable, Failure: Error
  >(
    _ mode: CombiningMode, _ a: A, _ b: B, _ c: C, _ d: D
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element, D.Element), Failure>
  where A.Failure == Failure, B.Failure == Failure, C.Failure == Failure, D.Failure == Failure {
    make(
      mode, CombiningValues4<A.Element, B.Element, C.Element, D.Element>.self,
      [
        { await $0.pump(a, slot: 0) { $0.pending.0.append($1); return nil } },
        { await $0.pump(b, slot: 1) { $0.pending.1.append($1); return nil } },
        { await $0.pump(c, slot: 2) { $0.pending.2.append($1); return nil } },
        { await $0.pump(d, slot: 3) { $0.pending.3.append($1); return nil } },
      ])
  }

  @inlinable static func pull<Input: AsyncSequence & Sendable>(
    _ mode: CombiningMode, _ inputs: [Input]
  ) -> @Sendable () -> CombiningPull<[Input.Element], Input.Failure> {
    make(
      mode, CombiningValuesArray<Input.Element>.self,
      inputs.enumerated().map { slot, input in
        { await $0.pump(input, slot: slot) { $0.pending[slot].append($1); return nil } }
      })
  }
}
