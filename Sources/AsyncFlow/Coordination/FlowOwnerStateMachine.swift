/// The accounting behind ``FlowOwner``: whether it still admits work, the members it closes, and
/// how many tasks and admissions are alive, by kind. Pure: the owner closes its members, resumes
/// its shutdown waiters and starts its deadline after the lock, as the returned actions say.
/// Generic over the member and the waiter, so that its grid is a table of plain values.
///
/// **Why an admission cannot race the shutdown.** Work that may start a task holds a ticket from
/// before its member decides (under the member's own lock) until the task it started holds one of
/// its own (``retain(_:)``, which cannot be refused while a ticket is held). ``admit(_:)`` is
/// refused once the owner is closed. So when the count is zero after ``close()``, no decision to
/// start is pending anywhere, and every member has been closed: nothing starts again.
@usableFromInline
struct FlowOwnerStateMachine<Member, Waiter> {
  @usableFromInline var isClosed = false
  /// The tickets held, by ``OwnedWork`` kind.
  @usableFromInline var alive = [0, 0, 0, 0]
  @usableFromInline var members: [ObjectIdentifier: Member] = [:]
  @usableFromInline var waiters: [Int: Waiter] = [:]
  @usableFromInline var nextID = 0

  @inlinable init() {}

  @inlinable var total: Int { alive[0] + alive[1] + alive[2] + alive[3] }

  /// A member is made with this owner: `false` if the owner is closed (the member closes itself
  /// at once, and is not held).
  mutating func register(_ member: Member, id: ObjectIdentifier) -> Bool {
    guard !isClosed else { return false }
    members[id] = member
    return true
  }

  /// The member `id` is gone.
  mutating func unregister(_ id: ObjectIdentifier) -> Member? {
    members.removeValue(forKey: id)
  }

  /// A caller asks to begin work of `kind`: `true` (it holds a ticket until ``release(_:)``)
  /// unless the owner is closed.
  @inlinable mutating func admit(_ kind: OwnedWork) -> Bool {
    guard !isClosed else { return false }
    alive[kind.rawValue] += 1
    return true
  }

  /// A task of `kind` starts under a ticket already held: never refused.
  @inlinable mutating func retain(_ kind: OwnedWork) {
    alive[kind.rawValue] += 1
  }

  /// A ticket of `kind` is given back: the shutdown waiters to resume if it was the last.
  @inlinable mutating func release(_ kind: OwnedWork) -> [Waiter] {
    alive[kind.rawValue] -= 1
    guard alive[kind.rawValue] >= 0 else {
      preconditionFailure("Internal inconsistency: state \(alive), event release(\(kind))")
    }
    guard total == 0, !waiters.isEmpty else { return [] }
    defer { waiters = [:] }
    return Array(waiters.values)
  }

  /// No more admissions: the members to close, after the lock (empty when already closed).
  mutating func close() -> [Member] {
    guard !isClosed else { return [] }
    isClosed = true
    return Array(members.values)
  }

  /// The members to cancel the work of, after the lock: every one still registered.
  var allMembers: [Member] { Array(members.values) }

  /// A shutdown waits for every ticket to be given back: the waiter to resume at once when none
  /// is held (or the shutdown's caller was cancelled), otherwise `nil` (it is parked as `id`).
  mutating func wait(_ id: Int, waiter: Waiter, isCancelled: Bool) -> Waiter? {
    if total == 0 || isCancelled { return waiter }
    waiters[id] = waiter
    return nil
  }

  /// The shutdown `id` stops waiting (its deadline, or its caller's cancellation): its waiter, if
  /// it is still parked.
  mutating func stopWaiting(_ id: Int) -> Waiter? {
    waiters.removeValue(forKey: id)
  }

  mutating func makeWaiterID() -> Int {
    defer { nextID += 1 }
    return nextID
  }

  /// What is left, by kind.
  var left: [Int] { alive }
}

/// What a ticket of a ``FlowOwner`` is held for, as the shutdown report counts it.
@usableFromInline
enum OwnedWork: Int, Sendable {
  /// A `TaskSlots` or `SingleFlight` run's task.
  case run
  /// A share's upstream task, or its grace timer.
  case upstream
  /// A `sink`'s delivery task on a subject or share.
  case delivery
  /// A caller between its admission and the start of what it asked for.
  case call
}
