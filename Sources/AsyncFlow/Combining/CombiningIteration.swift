/// Makes one iteration of a combining operator from its inputs: each input becomes the pulling loop
/// of its slot, with its element type kept (no erasure), stored in the values of its arity.
@usableFromInline
enum CombiningIteration {
  /// `output` flattens the values' nested output (`(A, (B, C))`) into the operator's tuple.
  @inlinable static func make<Values: CombiningValues, Element, Failure: Error>(
    _ mode: CombiningMode, _ pumps: [CombiningStorage<Values, Failure>.Pump],
    output: @escaping @Sendable (Values.Output) -> Element
  ) -> @Sendable () -> CombiningPull<Element, Failure> {
    {
      let consumer = CombiningConsumer(CombiningStorage<Values, Failure>(mode: mode, inputs: pumps))
      return { (actor: isolated (any Actor)?) async throws(Failure) -> Element? in
        try await consumer.next(isolation: actor).map(output)
      }
    }
  }

  @inlinable static func pull<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, Failure: Error>(
    _ mode: CombiningMode, _ a: A, _ b: B
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element), Failure>
  where A.Failure == Failure, B.Failure == Failure {
    typealias Values = CombiningSlots<A.Element, CombiningSlot<B.Element>>
    let other: CombiningStorage<Values, Failure>.Pump
    if mode == .withLatestFrom {
      // withLatestFrom's other only replaces its latest; the one replaced leaves the lock.
      other = {
        await $0.pump(b, slot: 1) { (values: inout Values, element: B.Element) -> B.Element? in
          let replaced = values.tail.latest
          values.tail.latest = element
          return replaced
        }
      }
    } else {
      other = { await $0.pump(b, slot: 1) { $0.tail.pending.append($1); return nil } }
    }
    let pumps: [CombiningStorage<Values, Failure>.Pump] = [
      { await $0.pump(a, slot: 0) { $0.head.pending.append($1); return nil } }, other,
    ]
    return make(mode, pumps) { $0 }
  }

  @inlinable
  static func pull<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable, Failure: Error
  >(
    _ mode: CombiningMode, _ a: A, _ b: B, _ c: C
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element), Failure>
  where A.Failure == Failure, B.Failure == Failure, C.Failure == Failure {
    typealias Values = CombiningSlots<A.Element, CombiningSlots<B.Element, CombiningSlot<C.Element>>>
    let pumps: [CombiningStorage<Values, Failure>.Pump] = [
      { await $0.pump(a, slot: 0) { $0.head.pending.append($1); return nil } },
      { await $0.pump(b, slot: 1) { $0.tail.head.pending.append($1); return nil } },
      { await $0.pump(c, slot: 2) { $0.tail.tail.pending.append($1); return nil } },
    ]
    return make(mode, pumps) { ($0.0, $0.1.0, $0.1.1) }
  }

  @inlinable
  static func pull<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable,
    D: AsyncSequence & Sendable, Failure: Error
  >(
    _ mode: CombiningMode, _ a: A, _ b: B, _ c: C, _ d: D
  ) -> @Sendable () -> CombiningPull<(A.Element, B.Element, C.Element, D.Element), Failure>
  where A.Failure == Failure, B.Failure == Failure, C.Failure == Failure, D.Failure == Failure {
    typealias Values = CombiningSlots<
      A.Element, CombiningSlots<B.Element, CombiningSlots<C.Element, CombiningSlot<D.Element>>>
    >
    let pumps: [CombiningStorage<Values, Failure>.Pump] = [
      { await $0.pump(a, slot: 0) { $0.head.pending.append($1); return nil } },
      { await $0.pump(b, slot: 1) { $0.tail.head.pending.append($1); return nil } },
      { await $0.pump(c, slot: 2) { $0.tail.tail.head.pending.append($1); return nil } },
      { await $0.pump(d, slot: 3) { $0.tail.tail.tail.pending.append($1); return nil } },
    ]
    return make(mode, pumps) { ($0.0, $0.1.0, $0.1.1.0, $0.1.1.1) }
  }

  @inlinable static func pull<Input: AsyncSequence & Sendable>(
    _ mode: CombiningMode, _ inputs: [Input]
  ) -> @Sendable () -> CombiningPull<[Input.Element], Input.Failure> {
    typealias Values = CombiningValuesArray<Input.Element>
    let pumps = inputs.enumerated().map { slot, input -> CombiningStorage<Values, Input.Failure>.Pump in
      { await $0.pump(input, slot: slot) { $0.pending[slot].append($1); return nil } }
    }
    return make(mode, pumps) { $0 }
  }
}
