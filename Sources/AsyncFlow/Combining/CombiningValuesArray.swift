/// The slots of an array of inputs, one element type: the rings and the latest elements in two
/// arrays, not one array of slots (each a ring and a latest), so that making an output reads the
/// latest elements without copying (and retaining) each slot's ring (measured on `W7.combineLatest.inputs` at 64
/// inputs: 1.4× slower as an array of slots).
@usableFromInline
struct CombiningValuesArray<Element: Sendable>: CombiningValues {
  @usableFromInline
  struct Input: Sendable {
    @usableFromInline let slot: Int
    @usableFromInline let element: Element

    @inlinable init(slot: Int, element: Element) {
      self.slot = slot
      self.element = element
    }
  }

  @usableFromInline var pending: [RingBuffer<Element>]
  @usableFromInline var latest: [Element?]

  @inlinable init(count: Int) {
    pending = Array(repeating: RingBuffer(), count: count)
    latest = Array(repeating: nil, count: count)
  }

  @inlinable var slotCount: Int { pending.count }

  @inlinable static func slot(of input: Input) -> Int { input.slot }

  @inlinable mutating func append(_ input: Input) { pending[input.slot].append(input.element) }

  @inlinable mutating func replaceLatest(_ input: Input) -> Input? {
    defer { latest[input.slot] = input.element }
    return latest[input.slot].map { Input(slot: input.slot, element: $0) }
  }

  @inlinable mutating func moveAll(to batch: inout Self) {
    for slot in pending.indices { swap(&pending[slot], &batch.pending[slot]) }
  }

  @inlinable mutating func moveRows(_ rows: Int, to batch: inout Self) {
    for slot in pending.indices {
      for _ in 0..<rows { batch.pending[slot].append(pending[slot].popFirst()!) }
    }
  }

  @inlinable mutating func appendLatest(_ slot: Int) { pending[slot].append(latest[slot]!) }

  @inlinable mutating func promote(_ slot: Int) { latest[slot] = pending[slot].popFirst() }

  @inlinable func output() -> [Element] { latest.map { $0! } }

  @inlinable mutating func row() -> [Element] { pending.indices.map { pending[$0].popFirst()! } }
}
