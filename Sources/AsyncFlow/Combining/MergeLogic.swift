/// The logic of `Flow.merge` on the one life cycle: every input appends to one buffer, in the
/// order the elements arrive, and the consumer takes everything buffered in one step (a batch, its
/// `Output`). The inputs together run ahead of the consumer by at most `bufferLimit` elements (plus
/// the batch the consumer holds): at the limit, `wantsInput` is `false` and the inputs park until
/// the consumer takes the buffer. The last input to finish, or the first to fail, ends it, after
/// what is buffered. A plain value, tested as a table (`MergeLogicTests`).
@usableFromInline
struct MergeLogic<Element: Sendable, Failure: Error>: TimelessOperatorLogic {
  @usableFromInline
  typealias Output = [Element]
  @usableFromInline
  typealias InputFailure = Failure

  /// How far each input may run ahead of the consumer, on average: the buffer holds at most this
  /// many elements per input. The same as an inner of `mergeFlow`.
  @inlinable
  static var bufferPerInput: Int { 64 }

  @usableFromInline
  let count: Int
  @usableFromInline
  let bufferLimit: Int
  @usableFromInline
  var buffer: [Element] = []
  @usableFromInline
  var finished = 0
  /// The end, once every input finished or one failed.
  @usableFromInline
  var end = PendingEnd<Failure>.notYet

  /// A merge of `count` inputs.
  @inlinable
  init(count: Int) {
    self.count = count
    self.bufferLimit = Self.bufferPerInput * max(count, 1)
  }

  @inlinable
  mutating func start(at now: Instant) {
    // No inputs (an empty array): the result is empty.
    if count == 0 { end.end(nil) }
  }

  @inlinable
  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element> {
    buffer.append(element)
    return .kept
  }

  /// The life cycle passes only the first end of each input, and none once the merge ends.
  @inlinable
  mutating func inputEnded(_ failure: Failure?, from _: Int, at now: Instant) -> Element? {
    if let failure {
      end.end(failure)
    } else {
      finished += 1
      if finished == count { end.end(nil) }
    }
    return nil
  }

  @inlinable
  var wantsInput: Bool { buffer.count < bufferLimit }
  @inlinable
  var hasOutput: Bool { !buffer.isEmpty || end.isWaiting }
  @inlinable
  var isEnding: Bool { end.isKnown }

  @inlinable
  mutating func nextOutput(at now: Instant) -> OperatorOutput<[Element], Failure>? {
    if !buffer.isEmpty {
      // The whole buffer at once: one lock per batch for the consumer, not one per element. The
      // next buffer starts at the same capacity (one allocation, no growth while it fills).
      defer { buffer.removeAll(keepingCapacity: true) }
      return .element(buffer)
    }
    return end.deliver()
  }
}

/// Makes one iteration of `Flow.merge` from its inputs: each input is pulled as input `index`.
@usableFromInline
enum MergeIteration {
  /// Makes, at each iteration, the input that pulls `input` (its iterator made at once).
  @inlinable
  static func pump<Input: AsyncSequence & Sendable>(_ input: Input)
    -> @Sendable () -> OperatorStorage<MergeLogic<Input.Element, Input.Failure>, TimelessClock>.IndexedInput
  {
    { OperatorStorage.pulling(input) }
  }

  @inlinable
  static func make<Element: Sendable, Failure: Error>(
    _ pumps: [@Sendable () -> OperatorStorage<MergeLogic<Element, Failure>, TimelessClock>.IndexedInput]
  ) -> @Sendable () -> CombiningPull<Element, Failure> {
    {
      let logic = MergeLogic<Element, Failure>(count: pumps.count)
      let storage = OperatorStorage(logic: logic, clock: TimelessClock(), inputs: pumps.count)
      let consumer = BatchConsumer<_, Element>(OperatorConsumer(storage, inputs: pumps.map { $0() }))
      return { (actor: isolated (any Actor)?) async throws(Failure) -> Element? in
        try await consumer.next(isolation: actor)
      }
    }
  }
}
