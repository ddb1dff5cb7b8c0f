/// The elements of one combining iteration, typed for its arity: per slot, the elements held
/// (`pending`, oldest first) and the one the outputs use (`latest`). A ``CombiningLogic`` keeps
/// one under the storage's lock, where the inputs append; each batch moves to the consumer's, out
/// of any lock, where the outputs are made: an element an output replaces is released there,
/// never under the lock (an element's `deinit` may call back into the same pipeline).
///
/// Inputs of one element type are a ``CombiningValuesArray``; a tuple's are a ``CombiningSlots``
/// chain (slot 0, then the rest numbered from 1), whose nested output the iteration flattens.
@usableFromInline
protocol CombiningValues: Sendable {
  associatedtype Output
  /// One element of one slot, as its input hands it over: it names its slot.
  associatedtype Input: Sendable
  init(count: Int)
  /// How many slots it has.
  var slotCount: Int { get }
  static func slot(of input: Input) -> Int
  /// Appends `input` to its slot's held elements.
  mutating func append(_ input: Input)
  /// Makes `input` its slot's latest; returns the one it replaces.
  mutating func replaceLatest(_ input: Input) -> Input?
  /// Moves every slot's held elements to `batch`, whose rings are empty.
  mutating func moveAll(to batch: inout Self)
  /// Moves the oldest `rows` elements of every slot to `batch`.
  mutating func moveRows(_ rows: Int, to batch: inout Self)
  /// Appends a copy of `slot`'s latest, which it has, to its held elements (withLatestFrom pairs
  /// a base element with the other's latest as of the moment it reads it).
  mutating func appendLatest(_ slot: Int)
  /// Makes `slot`'s oldest held element its latest.
  mutating func promote(_ slot: Int)
  /// The output of every slot's latest element.
  func output() -> Output
  /// The output of every slot's oldest held element, taken out (zip: no latest kept).
  mutating func row() -> Output
}

/// Slot 0 (`head`), then the slots of `tail` as slots 1, 2, …, down to an array of no inputs:
/// `CombiningSlots<A, CombiningSlots<B, CombiningValuesArray<Never>>>` for two inputs, whose output
/// `(A, (B, []))` the iteration flattens into `(A, B)`.
@usableFromInline
struct CombiningSlots<Head: Sendable, Tail: CombiningValues>: CombiningValues {
  @usableFromInline
  enum Input: Sendable {
    case head(Head)
    case tail(Tail.Input)
  }

  @usableFromInline var pending = RingBuffer<Head>()
  @usableFromInline var latest: Head?
  @usableFromInline var tail: Tail

  @inlinable init(count: Int) { tail = Tail(count: count - 1) }

  @inlinable var slotCount: Int { 1 + tail.slotCount }

  @inlinable static func slot(of input: Input) -> Int {
    switch input {
    case .head: 0
    case .tail(let input): 1 + Tail.slot(of: input)
    }
  }

  @inlinable mutating func append(_ input: Input) {
    switch input {
    case .head(let element): pending.append(element)
    case .tail(let input): tail.append(input)
    }
  }

  @inlinable mutating func replaceLatest(_ input: Input) -> Input? {
    switch input {
    case .head(let element):
      defer { latest = element }
      return latest.map { .head($0) }
    case .tail(let input): return tail.replaceLatest(input).map { .tail($0) }
    }
  }

  @inlinable mutating func moveAll(to batch: inout Self) {
    swap(&pending, &batch.pending)
    tail.moveAll(to: &batch.tail)
  }

  @inlinable mutating func moveRows(_ rows: Int, to batch: inout Self) {
    for _ in 0..<rows { batch.pending.append(pending.popFirst()!) }
    tail.moveRows(rows, to: &batch.tail)
  }

  @inlinable mutating func appendLatest(_ slot: Int) {
    if slot == 0 { pending.append(latest!) } else { tail.appendLatest(slot - 1) }
  }

  @inlinable mutating func promote(_ slot: Int) {
    if slot == 0 { latest = pending.popFirst() } else { tail.promote(slot - 1) }
  }

  @inlinable func output() -> (Head, Tail.Output) { (latest!, tail.output()) }

  @inlinable mutating func row() -> (Head, Tail.Output) { (pending.popFirst()!, tail.row()) }
}

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
