/// The elements of one combining iteration, typed for its arity: per slot, the elements held
/// (`pending`, oldest first) and the one the outputs use (`latest`). The storage keeps one under
/// its lock, where the inputs append; the consumer keeps another, out of any lock, to which each
/// batch is moved and where the outputs are made: an element an output replaces is released there,
/// never under the lock (an element's `deinit` may call back into the same pipeline).
@usableFromInline
protocol CombiningValues: SendableMetatype {
  associatedtype Output
  init(count: Int)
  /// Moves every slot's held elements to `batch`, whose rings are empty.
  mutating func moveAll(to batch: inout Self)
  /// Moves the oldest `rows` elements of every slot to `batch`.
  mutating func moveRows(_ rows: Int, to batch: inout Self)
  /// Copies `slot`'s latest to `batch`, whose latest of that slot is `nil`.
  func shareLatest(_ slot: Int, with batch: inout Self)
  /// Makes `slot`'s oldest held element its latest.
  mutating func promote(_ slot: Int)
  /// Lets go of `slot`'s latest element.
  mutating func clearLatest(_ slot: Int)
  /// The output of every slot's latest element.
  func output() -> Output
  /// The output of every slot's oldest held element, taken out (zip: no latest kept).
  mutating func row() -> Output
}

extension RingBuffer {
  /// Moves the oldest `count` elements to the end of `other`.
  @inlinable mutating func move(_ count: Int, to other: inout RingBuffer) {
    for _ in 0..<count { other.append(popFirst()!) }
  }
}

@usableFromInline
struct CombiningValues2<A, B>: CombiningValues {
  @usableFromInline var pending: (RingBuffer<A>, RingBuffer<B>) = (RingBuffer(), RingBuffer())
  @usableFromInline var latest: (A?, B?) = (nil, nil)

  @inlinable init(count: Int) {}

  @inlinable mutating func moveAll(to batch: inout Self) {
    swap(&pending.0, &batch.pending.0)
    swap(&pending.1, &batch.pending.1)
  }

  @inlinable mutating func moveRows(_ rows: Int, to batch: inout Self) {
    pending.0.move(rows, to: &batch.pending.0)
    pending.1.move(rows, to: &batch.pending.1)
  }

  @inlinable func shareLatest(_ slot: Int, with batch: inout Self) {
    if slot == 0 { batch.latest.0 = latest.0 } else { batch.latest.1 = latest.1 }
  }

  @inlinable mutating func promote(_ slot: Int) {
    if slot == 0 { latest.0 = pending.0.popFirst() } else { latest.1 = pending.1.popFirst() }
  }

  @inlinable mutating func clearLatest(_ slot: Int) {
    if slot == 0 { latest.0 = nil } else { latest.1 = nil }
  }

  @inlinable func output() -> (A, B) { (latest.0!, latest.1!) }

  @inlinable mutating func row() -> (A, B) { (pending.0.popFirst()!, pending.1.popFirst()!) }
}

@usableFromInline
struct CombiningValues3<A, B, C>: CombiningValues {
  @usableFromInline var pending: (RingBuffer<A>, RingBuffer<B>, RingBuffer<C>) = (RingBuffer(), RingBuffer(), RingBuffer())
  @usableFromInline var latest: (A?, B?, C?) = (nil, nil, nil)

  @inlinable init(count: Int) {}

  @inlinable mutating func moveAll(to batch: inout Self) {
    swap(&pending.0, &batch.pending.0)
    swap(&pending.1, &batch.pending.1)
    swap(&pending.2, &batch.pending.2)
  }

  @inlinable mutating func moveRows(_ rows: Int, to batch: inout Self) {
    pending.0.move(rows, to: &batch.pending.0)
    pending.1.move(rows, to: &batch.pending.1)
    pending.2.move(rows, to: &batch.pending.2)
  }

  @inlinable func shareLatest(_ slot: Int, with batch: inout Self) {
    switch slot {
    case 0: batch.latest.0 = latest.0
    case 1: batch.latest.1 = latest.1
    default: batch.latest.2 = latest.2
    }
  }

  @inlinable mutating func promote(_ slot: Int) {
    switch slot {
    case 0: latest.0 = pending.0.popFirst()
    case 1: latest.1 = pending.1.popFirst()
    default: latest.2 = pending.2.popFirst()
    }
  }

  @inlinable mutating func clearLatest(_ slot: Int) {
    switch slot {
    case 0: latest.0 = nil
    case 1: latest.1 = nil
    default: latest.2 = nil
    }
  }

  @inlinable func output() -> (A, B, C) { (latest.0!, latest.1!, latest.2!) }

  @inlinable mutating func row() -> (A, B, C) {
    (pending.0.popFirst()!, pending.1.popFirst()!, pending.2.popFirst()!)
  }
}

@usableFromInline
struct CombiningValues4<A, B, C, D>: CombiningValues {
  @usableFromInline var pending: (RingBuffer<A>, RingBuffer<B>, RingBuffer<C>, RingBuffer<D>) = (
    RingBuffer(), RingBuffer(), RingBuffer(), RingBuffer()
  )
  @usableFromInline var latest: (A?, B?, C?, D?) = (nil, nil, nil, nil)

  @inlinable init(count: Int) {}

  @inlinable mutating func moveAll(to batch: inout Self) {
    swap(&pending.0, &batch.pending.0)
    swap(&pending.1, &batch.pending.1)
    swap(&pending.2, &batch.pending.2)
    swap(&pending.3, &batch.pending.3)
  }

  @inlinable mutating func moveRows(_ rows: Int, to batch: inout Self) {
    pending.0.move(rows, to: &batch.pending.0)
    pending.1.move(rows, to: &batch.pending.1)
    pending.2.move(rows, to: &batch.pending.2)
    pending.3.move(rows, to: &batch.pending.3)
  }

  @inlinable func shareLatest(_ slot: Int, with batch: inout Self) {
    switch slot {
    case 0: batch.latest.0 = latest.0
    case 1: batch.latest.1 = latest.1
    case 2: batch.latest.2 = latest.2
    default: batch.latest.3 = latest.3
    }
  }

  @inlinable mutating func promote(_ slot: Int) {
    switch slot {
    case 0: latest.0 = pending.0.popFirst()
    case 1: latest.1 = pending.1.popFirst()
    case 2: latest.2 = pending.2.popFirst()
    default: latest.3 = pending.3.popFirst()
    }
  }

  @inlinable mutating func clearLatest(_ slot: Int) {
    switch slot {
    case 0: latest.0 = nil
    case 1: latest.1 = nil
    case 2: latest.2 = nil
    default: latest.3 = nil
    }
  }

  @inlinable func output() -> (A, B, C, D) { (latest.0!, latest.1!, latest.2!, latest.3!) }

  @inlinable mutating func row() -> (A, B, C, D) {
    (pending.0.popFirst()!, pending.1.popFirst()!, pending.2.popFirst()!, pending.3.popFirst()!)
  }
}

@usableFromInline
struct CombiningValuesArray<Element>: CombiningValues {
  @usableFromInline var pending: [RingBuffer<Element>]
  @usableFromInline var latest: [Element?]

  @inlinable init(count: Int) {
    pending = Array(repeating: RingBuffer(), count: count)
    latest = Array(repeating: nil, count: count)
  }

  @inlinable mutating func moveAll(to batch: inout Self) {
    for slot in pending.indices { swap(&pending[slot], &batch.pending[slot]) }
  }

  @inlinable mutating func moveRows(_ rows: Int, to batch: inout Self) {
    for slot in pending.indices { pending[slot].move(rows, to: &batch.pending[slot]) }
  }

  @inlinable func shareLatest(_ slot: Int, with batch: inout Self) { batch.latest[slot] = latest[slot] }

  @inlinable mutating func promote(_ slot: Int) { latest[slot] = pending[slot].popFirst() }

  @inlinable mutating func clearLatest(_ slot: Int) { latest[slot] = nil }

  @inlinable func output() -> [Element] { latest.map { $0! } }

  @inlinable mutating func row() -> [Element] { pending.indices.map { pending[$0].popFirst()! } }
}
