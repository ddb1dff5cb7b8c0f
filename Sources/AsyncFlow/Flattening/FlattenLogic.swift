/// What an outer element does, as a ``FlattenLogic`` decides it.
@usableFromInline
enum FlattenOuterVerdict: Equatable, Sendable {
  /// An inner starts for it (the machine then reports ``FlattenLogic/innerStarted(_:key:)``).
  case start
  /// It supersedes inner `id`, the current one of its key: the machine hands that inner the new
  /// element if its task has not begun, or else supersedes it (``FlattenLogic/turnEnded(_:key:)``)
  /// and starts an inner for the new element.
  case supersede(Int)
  /// Every slot is busy: the machine holds it until ``FlattenLogic/wantsOuter``.
  case hold
  /// Dropped: the running inner's work goes on.
  case drop
}

/// The policy of a flattening operator: which outer element starts an inner, which supersedes
/// one, when an inner's turn ends and whether the outer may be pulled. One per operator
/// (``FlattenSwitchLogic`` for both switches, ``FlattenMergeLogic`` for merge and concat,
/// ``FlattenExhaustLogic``), run by the one ``FlattenStateMachine``, which keeps what every policy
/// shares: the inners, their tasks and channels, the ready queue, the consumer and the end.
///
/// A plain value: it knows inners by id and key only, never locks, resumes or starts anything, and
/// is tested as a table (`FlattenLogicTests`).
@usableFromInline
protocol FlattenLogic<Key>: Sendable {
  associatedtype Key: Hashable & Sendable

  /// Whether the consumer takes everything an inner holds at once. A superseding policy may not:
  /// an element handed over early could be superseded before the consumer returns it, and a stale
  /// element must never reach the consumer. One that does not counts no backlog (``caughtUp(_:)``).
  static var takesBatches: Bool { get }

  /// What the outer element of `key` does. Changes nothing: the machine reports what it did.
  func outerElement(key: Key) -> FlattenOuterVerdict
  /// Inner `id` of `key` started: it holds a turn (its key's, or a slot).
  mutating func innerStarted(_ id: Int, key: Key)
  /// Inner `id` has elements waiting for the consumer (it listed itself, or ended with some).
  mutating func offered(_ id: Int)
  /// The consumer takes everything inner `id` has offered (a batching policy's take).
  mutating func caughtUp(_ id: Int)
  /// The consumer asks again: its last batch reached its code. Returns whether that freed room.
  mutating func batchDelivered() -> Bool
  /// Inner `id`'s sequence ended while elements wait: returns whether it keeps its turn until the
  /// consumer took the last (else its turn ends now).
  mutating func workEnded(_ id: Int, key: Key) -> Bool
  /// Inner `id`'s turn ends: it retired, or it was superseded.
  mutating func turnEnded(_ id: Int, key: Key)
  /// Whether the outer may be pulled on now (a held element may start).
  var wantsOuter: Bool { get }
  /// Whether no inner holds a turn: with the outer ended, the operator may finish.
  var isIdle: Bool { get }
}

/// How far the consumer is behind the inners of `mergeFlow`, `concatFlow` and `exhaustFlow`: what
/// bounds the inners that start (or, for exhaust, the outer elements taken) while it does not take.
///
/// The consumer is behind an inner from its start until it has taken everything the inner offered
/// (an inner that has not delivered yet may be about to: a short inner offers and ends before the
/// outer's task starts the next one), and again whenever the inner holds elements. The inners
/// whose elements are in the batch it has not delivered yet are still behind its code, so they
/// count until it asks again. Counting the inners that have not delivered yet is what bounds short
/// inners: each offers and ends before the outer's task starts the next, so counting only inners
/// holding elements let the outer's task start every one.
@usableFromInline
struct FlattenBacklog: Sendable {
  @usableFromInline var behind = Set<Int>()
  /// Inners whose elements the consumer took into the batch it has not delivered yet.
  @usableFromInline var batchInners = 0
  /// With the inner buffer, 16 × 64 = 1,024 elements waiting by default.
  @usableFromInline let limit: Int

  /// 16 by default, as Kotlin's `flatMapMerge` runs 16 inners by default; an explicit
  /// `maxConcurrent` above 16 raises it, so that as many quiet inners run as the caller asked for.
  @inlinable init(maxConcurrent: Int = .max) {
    limit = maxConcurrent == .max ? Self.defaultLimit : Swift.max(Self.defaultLimit, maxConcurrent)
  }

  @inlinable static var defaultLimit: Int { 16 }

  @inlinable var isFull: Bool { behind.count + batchInners >= limit }

  @inlinable mutating func caughtUp(_ id: Int) {
    if behind.remove(id) != nil { batchInners += 1 }
  }

  @inlinable mutating func batchDelivered() -> Bool {
    guard batchInners > 0 else { return false }
    batchInners = 0
    return true
  }
}
