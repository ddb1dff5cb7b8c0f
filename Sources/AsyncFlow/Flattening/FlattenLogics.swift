/// `switchToLatestFlow` and its keyed form: a new element supersedes the current inner of its key.
///
/// It counts no backlog: it runs one inner at a time per key, and the keyed one runs an inner for
/// every key at once by design (a list loads every row it shows), so its bound is per key.
@usableFromInline
struct FlattenSwitchLogic<Key: Hashable & Sendable>: FlattenLogic {
  /// The current inner of each key.
  @usableFromInline var current: [Key: Int] = [:]

  @inlinable init() {}

  @inlinable static var takesBatches: Bool { false }

  @inlinable func outerElement(key: Key) -> FlattenOuterVerdict {
    current[key].map { .supersede($0) } ?? .start
  }

  @inlinable mutating func innerStarted(_ id: Int, key: Key) { current[key] = id }
  @inlinable mutating func offered(_ id: Int) {}
  @inlinable mutating func caughtUp(_ id: Int) {}
  @inlinable mutating func batchDelivered() -> Bool { false }
  /// An ended inner is its key's current one until the consumer took its last element.
  @inlinable mutating func workEnded(_ id: Int, key: Key) -> Bool { true }
  @inlinable mutating func turnEnded(_ id: Int, key: Key) { current.removeValue(forKey: key) }
  @inlinable var wantsOuter: Bool { true }
  @inlinable var isIdle: Bool { current.isEmpty }
}

/// `mergeFlow` (and `concatFlow`, its `maxConcurrent` 1): up to `maxConcurrent` inners run; a new
/// one starts only while a slot is free and the consumer's backlog has room, else the outer
/// element is held and the outer is not pulled: a stalled consumer stops the outer, so the inners
/// started behind it, and the elements they hold, are bounded.
@usableFromInline
struct FlattenMergeLogic<Key: Hashable & Sendable>: FlattenLogic {
  @usableFromInline let maxConcurrent: Int
  /// Inners holding a slot: running, or ended with elements waiting.
  @usableFromInline var running = 0
  @usableFromInline var backlog: FlattenBacklog

  @inlinable init(maxConcurrent: Int) {
    self.maxConcurrent = maxConcurrent
    self.backlog = FlattenBacklog(maxConcurrent: maxConcurrent)
  }

  @inlinable static var takesBatches: Bool { true }

  @inlinable func outerElement(key: Key) -> FlattenOuterVerdict { wantsOuter ? .start : .hold }

  @inlinable mutating func innerStarted(_ id: Int, key: Key) {
    running += 1
    backlog.behind.insert(id)
  }

  @inlinable mutating func offered(_ id: Int) { backlog.behind.insert(id) }
  @inlinable mutating func caughtUp(_ id: Int) { backlog.caughtUp(id) }
  @inlinable mutating func batchDelivered() -> Bool { backlog.batchDelivered() }
  /// An ended inner holds its slot until the consumer took its last element.
  @inlinable mutating func workEnded(_ id: Int, key: Key) -> Bool { true }

  @inlinable mutating func turnEnded(_ id: Int, key: Key) {
    running -= 1
    backlog.behind.remove(id)
  }

  @inlinable var wantsOuter: Bool { running < maxConcurrent && !backlog.isFull }
  @inlinable var isIdle: Bool { running == 0 }
}

/// `exhaustFlow`: an element that comes while an inner runs is dropped (first wins), and so is one
/// that comes while the consumer's backlog is full, which bounds what it holds however fast the
/// outer. An inner's turn ends with its work, as in Rx's `flatMapFirst`: the next outer element
/// starts an inner even while the consumer has not taken the last one's elements (they are still
/// taken first).
@usableFromInline
struct FlattenExhaustLogic<Key: Hashable & Sendable>: FlattenLogic {
  @usableFromInline
  enum State: Equatable, Sendable {
    case free
    case running(Int)
  }

  @usableFromInline var state = State.free
  @usableFromInline var backlog = FlattenBacklog()

  @inlinable init() {}

  @inlinable static var takesBatches: Bool { true }

  @inlinable func outerElement(key: Key) -> FlattenOuterVerdict {
    state == .free && !backlog.isFull ? .start : .drop
  }

  @inlinable mutating func innerStarted(_ id: Int, key: Key) {
    state = .running(id)
    backlog.behind.insert(id)
  }

  @inlinable mutating func offered(_ id: Int) { backlog.behind.insert(id) }
  @inlinable mutating func caughtUp(_ id: Int) { backlog.caughtUp(id) }
  @inlinable mutating func batchDelivered() -> Bool { backlog.batchDelivered() }

  @inlinable mutating func workEnded(_ id: Int, key: Key) -> Bool {
    state = .free
    return false
  }

  @inlinable mutating func turnEnded(_ id: Int, key: Key) {
    if state == .running(id) { state = .free }
    backlog.behind.remove(id)
  }

  @inlinable var wantsOuter: Bool { true }
  @inlinable var isIdle: Bool { state == .free }
}
