/// The logic of `Flow.zip` on the one life cycle: the n-th output holds the n-th element of every
/// input. Each input's elements wait in order until every input has one; the consumer takes every
/// complete row at once (``CombiningRows``). It ends once an input has finished and its elements
/// are used: no row can be completed after that.
@usableFromInline
struct ZipLogic<Values: CombiningValues, Failure: Error>: CombiningLogic {
  @usableFromInline typealias Output = CombiningRows<Values>

  @usableFromInline var held: CombiningHeld<Values>
  @usableFromInline var end = PendingEnd<Failure>.notYet

  @inlinable
  init(count: Int, readAhead: Int) {
    held = CombiningHeld(count: count, limit: readAhead)
  }

  @inlinable
  mutating func input(_ element: Values.Input, at now: Instant) -> InputVerdict<Values.Input> {
    held.hold(element)
    return .kept
  }

  @inlinable var deliverable: Bool { held.everySlotHolds }

  @inlinable var exhausted: Bool { held.slots.contains { $0.finished && $0.held == 0 } }

  /// Every complete row: as many as the input holding the fewest elements holds.
  @inlinable
  mutating func takeBatch() -> Output {
    let rows = held.slots.lazy.map(\.held).min()!
    var batch = Output(count: held.slots.count)
    held.values.moveRows(rows, to: &batch.values)
    batch.count = rows
    for slot in held.slots.indices { held.slots[slot].held -= rows }
    return batch
  }
}

/// zip's and withLatestFrom's batch: `count` rows, the oldest held element of every slot making one
/// output, taken out as it is made (no latest kept).
@usableFromInline
struct CombiningRows<Values: CombiningValues>: CombiningBatch {
  @usableFromInline var values: Values
  @usableFromInline var count = 0

  @inlinable init(count slots: Int) { values = Values(count: slots) }

  @inlinable var isEmpty: Bool { count == 0 }

  @inlinable mutating func take(_ batch: consuming Self) { self = batch }

  @inlinable mutating func makeOutput() -> Values.Output {
    count -= 1
    return values.row()
  }
}
