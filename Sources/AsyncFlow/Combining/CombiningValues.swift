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

/// Slot 0 (`head`), then the slots of `tail` as slots 1, 2, …: `CombiningSlots<A, CombiningSlot<B>>`
/// for two inputs, whose output `(A, B)` is the operator's; three nest as `(A, (B, C))`, which the
/// iteration flattens.
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

/// The last slot of a tuple's chain (the `slot` arguments are its own, 0).
@usableFromInline
struct CombiningSlot<Element: Sendable>: CombiningValues {
  @usableFromInline var pending = RingBuffer<Element>()
  @usableFromInline var latest: Element?

  @inlinable init(count: Int = 1) {}

  @inlinable var slotCount: Int { 1 }

  @inlinable static func slot(of input: Element) -> Int { 0 }

  @inlinable mutating func append(_ input: Element) { pending.append(input) }

  @inlinable mutating func replaceLatest(_ input: Element) -> Element? {
    defer { latest = input }
    return latest
  }

  @inlinable mutating func moveAll(to batch: inout Self) { swap(&pending, &batch.pending) }

  @inlinable mutating func moveRows(_ rows: Int, to batch: inout Self) {
    for _ in 0..<rows { batch.pending.append(pending.popFirst()!) }
  }

  @inlinable mutating func appendLatest(_ slot: Int) { pending.append(latest!) }

  @inlinable mutating func promote(_ slot: Int) { latest = pending.popFirst() }

  @inlinable func output() -> Element { latest! }

  @inlinable mutating func row() -> Element { pending.popFirst()! }
}
