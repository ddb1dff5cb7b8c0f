/// The logic of `Flow.combineLatest` on the one life cycle: the first output once every input has
/// produced, pairing their first elements; then one output per element of any input, in the order
/// they arrived, with the latest of the others. The consumer takes every held element at once, in
/// arrival order (``CombineLatestBatch``), and keeps the latest of each input from batch to batch.
/// An input that finishes without ever producing ends it at once; otherwise it ends once every
/// input finished and their elements were taken.
@usableFromInline
struct CombineLatestLogic<Values: CombiningValues, Failure: Error>: CombiningLogic {
  @usableFromInline typealias Output = CombineLatestBatch<Values>

  @usableFromInline var held: CombiningHeld<Values>
  @usableFromInline var end = PendingEnd<Failure>.notYet
  /// The first output (every input's first element) was taken.
  @usableFromInline var started = false
  /// The slot of each held element, in the order the elements arrived.
  @usableFromInline var arrivals = RingBuffer<Int>()

  @inlinable
  init(count: Int, readAhead: Int) {
    held = CombiningHeld(count: count, limit: readAhead)
  }

  @inlinable
  mutating func input(_ element: Values.Input, at now: Instant) -> InputVerdict<Values.Input> {
    arrivals.append(held.hold(element))
    return .kept
  }

  @inlinable var deliverable: Bool { started ? !arrivals.isEmpty : held.everySlotHolds }

  @inlinable var exhausted: Bool {
    // An input that finished without ever producing: no output can be made.
    if held.slots.contains(where: { $0.finished && !$0.produced }) { return true }
    return arrivals.isEmpty && held.slots.allSatisfy(\.finished)
  }

  /// Every held element, with the order they arrived in.
  @inlinable
  mutating func takeBatch() -> Output {
    var batch = Output(count: held.slots.count)
    held.values.moveAll(to: &batch.values)
    swap(&batch.order, &arrivals)
    batch.first = !started
    started = true
    for slot in held.slots.indices { held.slots[slot].held = 0 }
    return batch
  }
}

/// combineLatest's batch: the elements held, with their slots in the order they arrived; the
/// consumer's keeps the latest element of every slot from batch to batch. Each output promotes one
/// held element to its slot's latest (releasing the one it replaces, out of the lock), and is made
/// of every slot's latest.
@usableFromInline
struct CombineLatestBatch<Values: CombiningValues>: CombiningBatch {
  @usableFromInline var values: Values
  /// The slots of the held elements not yet made into outputs, in the order they arrived.
  @usableFromInline var order = RingBuffer<Int>()
  /// The next output is the first of the iteration: it takes the first element of every slot.
  @usableFromInline var first = false

  @inlinable init(count: Int) { values = Values(count: count) }

  @inlinable var isEmpty: Bool { !first && order.isEmpty }

  @inlinable mutating func take(_ batch: consuming Self) {
    // The rings are swapped (the used-up ones leave with `batch`); the latest elements stay.
    batch.values.moveAll(to: &values)
    swap(&order, &batch.order)
    first = batch.first
    guard first else { return }
    // The first output takes the first arrival of each slot out of the order.
    var taken = Array(repeating: false, count: values.slotCount)
    var rest = RingBuffer<Int>()
    while let slot = order.popFirst() {
      if taken[slot] { rest.append(slot) } else { taken[slot] = true }
    }
    order = rest
  }

  @inlinable mutating func makeOutput() -> Values.Output {
    if first {
      first = false
      for slot in 0..<values.slotCount { values.promote(slot) }
    } else {
      values.promote(order.popFirst()!)
    }
    return values.output()
  }
}
