/// The logic of `withLatestFromFlow` on the one life cycle: slot 0, the base, drives; slot 1, the
/// other, only replaces its latest. Each base element is paired with the other's latest as of the
/// moment it is read (its copy is held beside it), so that the outputs do not depend on how far
/// the base ran ahead of the consumer; a base element read before the other's first is refused
/// (dropped). The consumer takes the held pairs as rows (``CombiningRows``). The base is bounded
/// as zip's inputs are; the other is pulled as fast as it produces. The base's finish ends it once
/// its pairs were taken; the other's does not.
///
/// The other is started first, in the caller (``OperatorLogic/inputStartedFirst``): a value it
/// has at once is its latest before the base's first element is read.
@usableFromInline
struct WithLatestFromLogic<Values: CombiningValues, Failure: Error>: CombiningLogic {
  @inlinable static var base: Int { 0 }
  @inlinable static var other: Int { 1 }
  @inlinable static var inputStartedFirst: Int? { other }

  @usableFromInline typealias Output = CombiningRows<Values>

  @usableFromInline var held: CombiningHeld<Values>
  @usableFromInline var end = PendingEnd<Failure>.notYet

  @inlinable
  init(count: Int, readAhead: Int) {
    precondition(count == 2, "Internal inconsistency: withLatestFrom has 2 inputs, not \(count)")
    held = CombiningHeld(count: count, limit: readAhead)
  }

  @inlinable
  mutating func input(_ element: Values.Input, at now: Instant) -> InputVerdict<Values.Input> {
    guard Values.slot(of: element) == Self.base else {
      // The other's element only replaces its latest, which never makes an output by itself.
      held.slots[Self.other].produced = true
      return held.values.replaceLatest(element).map { .keptDisplacing($0) } ?? .kept
    }
    // Before the other's first element there is nothing to pair it with.
    guard held.slots[Self.other].produced else { return .refused(element) }
    held.hold(element)
    held.values.appendLatest(Self.other)
    return .kept
  }

  @inlinable var deliverable: Bool { held.slots[Self.base].held > 0 }

  @inlinable var exhausted: Bool { held.slots[Self.base].finished && held.slots[Self.base].held == 0 }

  /// Every held pair: the base elements with the other's latest as each was read.
  @inlinable
  mutating func takeBatch() -> Output {
    var batch = Output(count: 2)
    held.values.moveAll(to: &batch.values)
    batch.count = held.slots[Self.base].held
    held.slots[Self.base].held = 0
    return batch
  }
}
