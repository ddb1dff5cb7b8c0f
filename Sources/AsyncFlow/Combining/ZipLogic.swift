/// The logic of `Flow.zip` on the one life cycle: the n-th output holds the n-th element of every
/// input. Each input's elements wait in order until every input has one; the consumer takes every
/// complete row at once (``CombiningRows``). It ends once an input has finished and its elements
/// are used: no row can be completed after that.
@usableFromInline
struct ZipLogic<Values: CombiningValues, Failure: Error>: CombiningLogic {
  @usableFromInline typealias Element = Values.Input
  @usableFromInline typealias Output = CombiningRows<Values>
  @usableFromInline typealias InputFailure = Failure

  @usableFromInline var values: Values
  @usableFromInline var readAhead: CombiningReadAhead
  @usableFromInline var end = PendingEnd<Failure>.notYet

  @inlinable
  init(count: Int, readAhead: Int) {
    values = Values(count: count)
    self.readAhead = CombiningReadAhead(count: count, limit: readAhead)
  }

  @inlinable
  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element> {
    values.append(element)
    readAhead.hold(Values.slot(of: element))
    return .kept
  }

  @inlinable var deliverable: Bool { readAhead.everySlotHolds }

  @inlinable var exhausted: Bool { readAhead.slots.contains { $0.finished && $0.held == 0 } }

  /// Every complete row: as many as the input holding the fewest elements holds.
  @inlinable
  mutating func takeBatch() -> Output {
    let rows = readAhead.slots.lazy.map(\.held).min()!
    var batch = Output(count: readAhead.slots.count)
    values.moveRows(rows, to: &batch.values)
    batch.count = rows
    for slot in readAhead.slots.indices { readAhead.slots[slot].held -= rows }
    return batch
  }
}
