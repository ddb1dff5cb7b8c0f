/// What `Flow.combineLatest`, `Flow.zip` and `withLatestFromFlow` share on the one life cycle: any
/// number of inputs ("slots"), each pulled as the input of its index into values typed for the
/// arity and bounded on its own (``CombiningHeld``), and a consumer that takes, in one step, every
/// element that makes an output (a batch, the logic's `Output`) and makes the outputs out of the
/// lock (``CombiningConsumer``).
///
/// Each logic says what it does with an element (``OperatorLogic/input(_:at:)``), when the
/// consumer may take a batch (``deliverable``), what the batch is (``takeBatch()``), and when no
/// output can ever be made again (``exhausted``). The rest is the same for all three, here: the
/// first failure ends the result at once, before what is held, and drops what the consumer's
/// batch still holds (``OperatorLogic/dropsTakenOutputs``); a finish ends it once it is
/// exhausted. Each is a plain value, tested as a table (`CombiningLogicTests`).
@usableFromInline
protocol CombiningLogic: TimelessOperatorLogic
where Element == Values.Input, InputFailure == Failure, Output: CombiningBatch, Output.Element == Values.Output {
  associatedtype Values: CombiningValues

  /// A logic of `count` inputs, each holding at most `readAhead` elements the consumer has not taken.
  init(count: Int, readAhead: Int)

  /// What the inputs hold that the consumer has not taken.
  var held: CombiningHeld<Values> { get set }
  var end: PendingEnd<Failure> { get set }
  /// Whether the consumer may take a batch now.
  var deliverable: Bool { get }
  /// Whether no output can ever be made again beyond the batches already taken.
  var exhausted: Bool { get }
  /// Moves every element that makes an output out, as one batch (called when ``deliverable``).
  mutating func takeBatch() -> Output
}

extension CombiningLogic {
  /// A logic whose inputs each run ahead of the consumer by at most 64 elements.
  @inlinable
  init(count: Int) { self.init(count: count, readAhead: CombiningHeld<Values>.defaultLimit) }

  @inlinable
  mutating func start(at now: Instant) {
    // No inputs (an empty array): nothing to combine, the result is empty.
    if held.slots.isEmpty { end.end(nil) }
  }

  /// The first failure ends the result at once: what is held is dropped, and so is what the
  /// consumer's batch still holds. A finish ends it once no output can be made any more. The life
  /// cycle passes only the first end of each input, none once the result ends.
  @inlinable
  mutating func inputEnded(_ failure: Failure?, from index: Int, at now: Instant) -> Element? {
    held.slots[index].finished = true
    if let failure {
      end.end(failure)
    } else if exhausted {
      end.end(nil)
    }
    return nil
  }

  /// Some input may be pulled (the life cycle then asks each).
  @inlinable var wantsInput: Bool { held.slots.contains { !$0.full } }
  @inlinable func wantsInput(from index: Int) -> Bool { !held.slots[index].full }
  @inlinable var isEnding: Bool { end.isKnown }
  @inlinable var hasOutput: Bool { end.isWaiting || (!isEnding && deliverable) }
  /// A failure: the outputs of elements read ahead are not returned once it happened.
  @inlinable var dropsTakenOutputs: Bool {
    if case .waiting(.some) = end { return true }
    return false
  }

  @inlinable
  mutating func nextOutput(at now: Instant) -> OperatorOutput<Output, Failure>? {
    // A failure wins over what is held; a finish leaves nothing deliverable.
    if isEnding { return end.deliver() }
    guard deliverable else { return nil }
    let batch = takeBatch()
    if exhausted {
      end.end(nil)
    } else {
      held.refill()
    }
    return .element(batch)
  }
}

/// What the inputs of a combining logic hold that the consumer has not taken: their elements, in
/// the values typed for the arity, and how far each input has run ahead. At `limit` held elements
/// an input is no longer wanted, and is wanted again once the consumer has taken it down to half.
@usableFromInline
struct CombiningHeld<Values: CombiningValues>: Sendable {
  @usableFromInline
  struct Slot: Sendable {
    /// How many elements it holds that the consumer has not taken.
    @usableFromInline var held = 0
    /// Whether it has ever delivered an element.
    @usableFromInline var produced = false
    /// It reached the limit: its input is not wanted until the consumer took it down to half.
    @usableFromInline var full = false
    @usableFromInline var finished = false

    @inlinable init() {}
  }

  /// How many elements each input may hold that the consumer has not taken: the same bound as each
  /// input of `Flow.merge`.
  @inlinable static var defaultLimit: Int { 64 }

  @usableFromInline let limit: Int
  @usableFromInline var values: Values
  @usableFromInline var slots: [Slot]

  @inlinable
  init(count: Int, limit: Int) {
    precondition(limit > 0, "Internal inconsistency: readAhead \(limit)")
    self.limit = limit
    values = Values(count: count)
    slots = Array(repeating: Slot(), count: count)
  }

  /// Holds `element` in its slot; returns the slot.
  @inlinable
  @discardableResult
  mutating func hold(_ element: Values.Input) -> Int {
    let index = Values.slot(of: element)
    values.append(element)
    slots[index].held += 1
    slots[index].produced = true
    if slots[index].held >= limit { slots[index].full = true }
    return index
  }

  /// Whether every slot holds an element.
  @inlinable var everySlotHolds: Bool { !slots.contains { $0.held == 0 } }

  /// After a batch: a full slot taken down to half is wanted again.
  @inlinable
  mutating func refill() {
    for index in slots.indices where slots[index].full && slots[index].held <= limit / 2 {
      slots[index].full = false
    }
  }
}

/// A batch of a combining operator's outputs: made by its logic under the lock (its `Output`),
/// made into outputs by the consumer, out of any lock, one at a time. The consumer keeps one, used
/// up or not, and takes the next batch into it.
@usableFromInline
protocol CombiningBatch: Sendable {
  associatedtype Element
  /// An empty batch of `count` slots.
  init(count: Int)
  /// Whether it makes no more outputs.
  var isEmpty: Bool { get }
  /// Takes `batch`, the next one, into this used-up one (what it keeps from batch to batch stays:
  /// combineLatest's latest elements). What it replaces is released here, out of the lock.
  mutating func take(_ batch: consuming Self)
  /// The next output (not ``isEmpty``).
  mutating func makeOutput() -> Element
}
