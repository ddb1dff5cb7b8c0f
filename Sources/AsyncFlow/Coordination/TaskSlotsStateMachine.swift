/// The registry behind ``TaskSlots``: for each identity, one ``Slot``, the runs registered under it
/// and who waits on it. Pure: each event returns an action, and the storage (`TaskSlotsStorage`)
/// starts and cancels tasks, and resumes waiters, after its lock. Generic over the waiter (a
/// continuation) and the task, so that its grid is a table of plain values. An identity that
/// nothing is registered under and nobody waits on has no slot.
///
/// The policy of the new run decides, whatever the policies of the runs already registered (the
/// table in ``TaskSlots``).
///
/// **Why a superseded run never begins.** A run leaves the registry in the step that supersedes
/// or cancels it, under the lock, and its task begins the operation only if ``begin(_:token:isCancelled:)``,
/// asked on the operation's own isolation right before the call, finds it still registered. Every
/// other promise about beginning (a queued run waits its turn; no operation begins while an older
/// one of its identity may run uncancelled) is the same check answering `wait`. A run that began
/// and left is uncancelled until whoever took it out has cancelled its task, after the lock, and
/// said so with ``cancelled(_:of:)``: until then another caller's run could begin beside it.
///
/// **Why a repeated request starts nothing.** A slot remembers the request of its identity's last
/// run (`run(_:request:)`, `runEach(in:id:)`), whichever entry point made it, until a newer run
/// replaces it or that run is cancelled; a feeding's request equal to it is dropped in the step that
/// would have registered it, so that no run of another entry point can come in between.
@usableFromInline
struct TaskSlotsStateMachine<ID: Hashable, Waiter, Handle> {
  /// What a run answers (a search's keyword), compared with the next request of a feeding: its
  /// `==` runs under the registry's lock, as an identity's does.
  @usableFromInline typealias Request = any Equatable & Sendable

  /// A feeding of `runEach(in:id:)` that asks for a run: its number, and whether its task is
  /// cancelled (read under the lock: once its cancellation handler has taken its runs out, it
  /// registers none).
  @usableFromInline typealias Feed = (id: Int, isCancelled: Bool)

  @usableFromInline struct Run {
    @usableFromInline let token: Int
    @usableFromInline let policy: SlotPolicy.Storage
    /// What the caller named as the run's reason, kept for the request log (`nil` without one).
    @usableFromInline let trigger: String?
    /// A `queue` run registered behind others: the log says `started` when its turn comes.
    @usableFromInline let isQueued: Bool
    /// The feeding that started it, whose cancellation cancels it (`nil`: a call of `run`).
    @usableFromInline var feed: Int?
    /// `nil` between the registration and the task's creation.
    @usableFromInline var task: Handle?
    @usableFromInline var hasBegun = false
    /// The run's task, parked in its begin check until the answer may change.
    @usableFromInline var waiter: Waiter?

    @inlinable init(token: Int, policy: SlotPolicy.Storage, trigger: String?, isQueued: Bool) {
      (self.token, self.policy, self.trigger, self.isQueued) = (token, policy, trigger, isQueued)
    }
  }

  /// A waiter with the id its cancellation handler knows it by.
  @usableFromInline typealias Parked = (id: Int, waiter: Waiter)
  /// A waiter to resume, with a running state for a watcher (`nil`: finish, or check again).
  @usableFromInline typealias Wake = (waiter: Waiter, running: Bool?)

  /// One identity's state.
  @usableFromInline struct Slot {
    /// Registered, in call order (tokens ascending).
    @usableFromInline var runs: [Run] = []
    /// Runs that left the registry after they began, whose tasks are not cancelled yet: the step
    /// that took them out cancels them after the lock (or, for a run whose task was not attached
    /// yet, the caller that started it does when it attaches), so no later run of the identity
    /// begins until then, whichever thread registers it.
    @usableFromInline var uncancelled: [Int] = []
    /// `runAndWait` callers of an ignored `firstWins` run, waiting for every run registered up to
    /// `upTo` to leave.
    @usableFromInline var joiners: [(parked: Parked, upTo: Int)] = []
    /// Consumers of `isRunningFlow(_:)`, parked until the running state differs from the one they
    /// delivered last (the current one when they parked).
    @usableFromInline var watchers: [Parked] = []
    /// The request of the identity's last run, with that run's token: kept after the run ended
    /// delivered (finished or failed), forgotten when a newer run replaces it or that run is
    /// cancelled, since its answer then never came.
    @usableFromInline var lastRequest: (token: Int, value: Request)?

    @inlinable init() {}

    @inlinable var isEmpty: Bool {
      runs.isEmpty && uncancelled.isEmpty && joiners.isEmpty && watchers.isEmpty && lastRequest == nil
    }

    /// Forgets the last request if run `token` made it: the request, to release after the lock.
    @inlinable mutating func forgetRequest(of token: Int, into forgotten: inout [Request]) {
      guard let last = lastRequest, last.token == token else { return }
      forgotten.append(last.value)
      lastRequest = nil
    }

    /// Whether `runs[index]` must wait before it begins: a queued run until it is first, any run
    /// but a concurrent one while an older run of the identity may still run uncancelled.
    @inlinable func mustWait(_ index: Int) -> Bool {
      switch runs[index].policy {
      case .concurrent: false
      case .queue: index > 0 || !uncancelled.isEmpty
      case .latestWins, .firstWins: !uncancelled.isEmpty
      }
    }

    /// The waiters that what just changed concerns: watchers if the running state is no longer
    /// `wasRunning`, joiners whose runs have all left, parked runs whose check may now pass.
    @inlinable mutating func settle(wasRunning: Bool, into wakes: inout [Wake]) {
      let running = !runs.isEmpty
      if running != wasRunning && !watchers.isEmpty {
        for watcher in watchers { wakes.append((watcher.waiter, running)) }
        watchers = []
      }
      if !joiners.isEmpty {
        let first = runs.first?.token ?? .max
        joiners.removeAll { joiner in
          guard joiner.upTo < first else { return false }
          wakes.append((joiner.parked.waiter, nil))
          return true
        }
      }
      for index in runs.indices where runs[index].waiter != nil && !mustWait(index) {
        wakes.append((runs[index].waiter.take()!, nil))
      }
    }

    /// Takes every run out: their parked tasks are told to check again (they will not begin), and
    /// those that began with no task attached yet are remembered as uncancelled.
    @inlinable mutating func removeRuns(into wakes: inout [Wake]) -> Removed {
      var removed = Removed()
      swap(&removed.rest, &runs)
      for run in removed.rest { leaving(run, into: &wakes, toCancel: &removed.uncancelled) }
      return removed
    }

    /// Takes every run out as `removeRuns` does, `new` in their place. One run is swapped with
    /// `new` in place, so that a `latestWins` run allocates nothing and moves its predecessor out
    /// whole (no copy of it, nor of an array holding it).
    @inlinable mutating func replaceRuns(with new: consuming Run, into wakes: inout [Wake]) -> Removed {
      guard runs.count == 1 else {
        let removed = removeRuns(into: &wakes)
        runs.append(new)
        return removed
      }
      swap(&runs[0], &new)
      var removed = Removed()
      leaving(new, into: &wakes, toCancel: &removed.uncancelled)
      removed.first = consume new
      return removed
    }

    /// `run` leaves: its parked task is told to check again, and if it began, it is uncancelled
    /// until its task is cancelled; the step's caller cancels the attached ones (`toCancel`), the
    /// caller that started the others does when it attaches.
    @inlinable mutating func leaving(_ run: Run, into wakes: inout [Wake], toCancel: inout [Int]) {
      if let waiter = run.waiter { wakes.append((waiter, nil)) }
      guard run.hasBegun else { return }
      uncancelled.append(run.token)
      if run.task != nil { toCancel.append(run.token) }
    }
  }

  /// Runs that left, handed out whole so that their tasks and triggers are released after the
  /// lock; one is held without an array. With them, the requests that the step forgot, released
  /// after the lock too.
  @usableFromInline struct Removed: Sequence {
    @usableFromInline var first: Run?
    @usableFromInline var rest: [Run] = []
    @usableFromInline var forgotten: [Request] = []
    /// The runs among them that began and have a task: cancel it, then report ``cancelled(_:of:)``.
    @usableFromInline var uncancelled: [Int] = []

    @inlinable init() {}

    @inlinable var count: Int { (first == nil ? 0 : 1) + rest.count }

    @inlinable func makeIterator() -> Iterator { Iterator(first: first, rest: rest.makeIterator()) }

    @usableFromInline struct Iterator: IteratorProtocol {
      @usableFromInline var first: Run?
      @usableFromInline var rest: IndexingIterator<[Run]>

      @inlinable init(first: Run?, rest: IndexingIterator<[Run]>) { (self.first, self.rest) = (first, rest) }

      @inlinable mutating func next() -> Run? { first.take() ?? rest.next() }
    }
  }

  @usableFromInline var slots: [ID: Slot] = [:]
  /// The `TaskSlots` is gone: nothing registers, and waiters are resumed instead of parking.
  @usableFromInline var isClosed = false
  /// Its owner closed: nothing registers, and a new joiner is resumed at once; what is registered
  /// runs on, watched as before.
  @usableFromInline var refusesRuns = false
  @usableFromInline var runningCount = 0
  /// The next run's number when the owner has no request log (with one, the log numbers runs).
  @usableFromInline var nextToken = 1
  @usableFromInline var nextWaiterID = 0

  @inlinable init() {}

  @inlinable mutating func makeWaiterID() -> Int {
    defer { nextWaiterID += 1 }
    return nextWaiterID
  }

  /// Runs `body` on `id`'s slot in place (one lookup; the dictionary's `_modify` by key allocates
  /// a coroutine frame, one malloc per run in W6), creating it if `create`, and removes it if it
  /// is left empty. `nil` when there is no slot and none was created.
  @inlinable mutating func withSlot<R>(_ id: ID, create: Bool = false, _ body: (inout Slot) -> R) -> R? {
    var index = slots.index(forKey: id)
    if index == nil {
      guard create else { return nil }
      slots[id] = Slot()
      index = slots.index(forKey: id)
    }
    // Whether it is left empty is read in the same access: read by the getter afterwards, the
    // whole slot was copied out, its four arrays retained and released (measured in W6).
    let (result, isEmpty) = Self.apply(body, to: &slots.values[index!])
    if isEmpty { slots.remove(at: index!) }
    return result
  }

  @inlinable static func apply<R>(_ body: (inout Slot) -> R, to slot: inout Slot) -> (R, isEmpty: Bool) {
    let result = body(&slot)
    return (result, slot.isEmpty)
  }

  // MARK: Runs

  @usableFromInline enum ReserveAction {
    /// Cancel the tasks of `superseded` (the runs that left, for the request log too), resume
    /// `wakes`, then start the task of run `token` (`queued`: behind others, it begins later).
    case start(token: Int, queued: Bool, superseded: Removed, wakes: [Wake])
    /// `firstWins` while runs are registered: nothing starts.
    case ignore
    /// The `TaskSlots` is gone (during its own `run`, after its last use there), or its owner
    /// closed: nothing starts.
    case refuse
    /// A feeding's request equal to the identity's last one: nothing starts, and the registry, its
    /// numbers and the request log are as they were.
    case repeated
    /// The feeding asking is cancelled: nothing starts, and it stops.
    case stopped
  }

  /// Registers a new run for `id` under `policy`, numbered `token` (the request log's number) or,
  /// without one, by the registry. For `latestWins` the runs registered leave in the same step, so
  /// that the registry never holds two for one identity. A run with a `request` makes it the
  /// identity's last request (one without forgets it); a `feed`'s request equal to the last one
  /// starts nothing.
  @inlinable mutating func reserve(
    _ id: ID, policy: SlotPolicy, token: Int? = nil, trigger: String? = nil, request: Request? = nil,
    feed: Feed? = nil
  ) -> ReserveAction {
    guard !isClosed && !refusesRuns else { return .refuse }
    if let feed, feed.isCancelled { return .stopped }
    let token = token ?? nextToken
    let policy = policy.storage
    var left: Int?
    let action = withSlot(id, create: true) { slot -> ReserveAction in
      if feed != nil, let request, let last = slot.lastRequest, areEqual(last.value, request) { return .repeated }
      if policy == .firstWins && !slot.runs.isEmpty { return .ignore }
      var wakes: [Wake] = []
      let wasRunning = !slot.runs.isEmpty
      let queued = policy == .queue && wasRunning
      var new = Run(token: token, policy: policy, trigger: trigger, isQueued: queued)
      new.feed = feed?.id
      var superseded = Removed()
      if policy == .latestWins && wasRunning {
        superseded = slot.replaceRuns(with: new, into: &wakes)
      } else {
        slot.runs.append(new)
      }
      if let last = slot.lastRequest.take() { superseded.forgotten.append(last.value) }
      if let request { slot.lastRequest = (token, request) }
      slot.settle(wasRunning: wasRunning, into: &wakes)
      left = superseded.count
      return .start(token: token, queued: queued, superseded: superseded, wakes: wakes)
    }!
    // Counted in the step, not read back from the action: a copy of the action costs a copy of the
    // runs it hands out (measured in W6).
    if let left {
      nextToken = token + 1
      runningCount += 1 - left
    }
    return action
  }

  @usableFromInline enum BeginAction {
    /// Call the operation (`queued`: the log says `started` now).
    case begin(queued: Bool)
    /// Return without calling it: the run left the registry (superseded, cancelled, the
    /// `TaskSlots` released), or its task was cancelled.
    case never
    /// Park until ``park(_:token:waiter:isCancelled:)``'s waiter is resumed, then ask again.
    case wait
  }

  /// Run `token`'s task asks, on its operation's isolation right before calling it, whether it may
  /// begin: the one check that decides it (see the type's comment).
  @inlinable mutating func begin(_ id: ID, token: Int, isCancelled: Bool) -> BeginAction {
    guard !isCancelled else { return .never }
    return withSlot(id) { slot -> BeginAction in
      guard let index = slot.runs.firstIndex(where: { $0.token == token }) else { return .never }
      if slot.mustWait(index) { return .wait }
      slot.runs[index].hasBegun = true
      return .begin(queued: slot.runs[index].isQueued)
    } ?? .never
  }

  /// Parks run `token`'s task after `begin` said `wait`; the waiter to resume at once if the
  /// answer may have changed since (or the task was cancelled meanwhile).
  @inlinable mutating func park(_ id: ID, token: Int, waiter: Waiter, isCancelled: Bool) -> Wake? {
    guard !isCancelled else { return (waiter, nil) }
    return withSlot(id) { slot -> Wake? in
      guard let index = slot.runs.firstIndex(where: { $0.token == token }), slot.mustWait(index) else {
        return (waiter, nil)
      }
      slot.runs[index].waiter = waiter
      return nil
    } ?? (waiter, nil)
  }

  /// Run `token`'s task was cancelled: its waiter, if it is parked, to resume (it will not begin).
  @inlinable mutating func unpark(_ id: ID, token: Int) -> Waiter? {
    withSlot(id) { slot in
      guard let index = slot.runs.firstIndex(where: { $0.token == token }) else { return nil }
      return slot.runs[index].waiter.take()
    } ?? nil
  }

  @usableFromInline enum AttachAction {
    case attached
    /// The run left before its task existed: cancel the task (harmless if it has ended).
    case cancel
    /// The run left after it began: cancel the task, then report ``cancelled(_:of:)``.
    case cancelAndReport
  }

  /// The task of run `token` exists.
  @inlinable mutating func attach(_ task: Handle, id: ID, token: Int) -> AttachAction {
    withSlot(id) { slot -> AttachAction in
      if let index = slot.runs.firstIndex(where: { $0.token == token }) {
        slot.runs[index].task = task
        return .attached
      }
      return slot.uncancelled.contains(token) ? .cancelAndReport : .cancel
    } ?? .cancel
  }

  /// The tasks of runs `tokens` of `id` (`nil`: of any identity, after `cancelAll`), which began
  /// and left, are cancelled: the runs waiting for that may check again.
  @inlinable mutating func cancelled(_ tokens: [Int], of id: ID?) -> [Wake] {
    var wakes: [Wake] = []
    func report(_ slot: inout Slot, _ isReported: (Int) -> Bool) {
      guard !slot.uncancelled.isEmpty else { return }  // they ended meanwhile
      slot.uncancelled.removeAll(where: isReported)
      slot.settle(wasRunning: !slot.runs.isEmpty, into: &wakes)
    }
    if let id {
      withSlot(id) { report(&$0, tokens.contains) }
      return wakes
    }
    // After `cancelAll`, the begun runs of every identity: looked up in a set, so that N of them
    // cost N, not N².
    let reported = Set(tokens)
    for id in Array(slots.keys) { withSlot(id) { report(&$0, reported.contains) } }
    return wakes
  }

  /// Run `token`'s task ended; only its own registration is removed, never a successor's. Whether
  /// the run is delivered (it ended registered and not cancelled: not superseded, not cancelled by
  /// anyone; what it returned or threw reaches its caller), and the waiters to resume.
  @inlinable mutating func finished(
    _ id: ID, token: Int, isCancelled: Bool
  ) -> (delivered: Bool, wakes: [Wake], forgotten: [Request]) {
    var forgotten: [Request] = []
    let action: (registered: Bool, wakes: [Wake]) =
      withSlot(id) { slot in
        var wakes: [Wake] = []
        let wasRunning = !slot.runs.isEmpty
        let index = slot.runs.firstIndex { $0.token == token }
        if let index { slot.runs.remove(at: index) }
        if !slot.uncancelled.isEmpty { slot.uncancelled.removeAll { $0 == token } }
        // Cancelled while registered (its task cancelled by hand): its answer never came.
        if isCancelled || index == nil { slot.forgetRequest(of: token, into: &forgotten) }
        slot.settle(wasRunning: wasRunning, into: &wakes)
        return (index != nil, wakes)
      } ?? (false, [])
    if action.registered { runningCount -= 1 }
    return (action.registered && !isCancelled, action.wakes, forgotten)
  }

  @usableFromInline typealias CancelAction = (removed: Removed, wakes: [Wake])

  /// Every run of `id` leaves: cancel their tasks (the queued ones then never begin). The last
  /// request is forgotten if it was one of theirs.
  @inlinable mutating func cancel(_ id: ID) -> CancelAction {
    let action: CancelAction =
      withSlot(id) { slot in
        var wakes: [Wake] = []
        var removed = slot.removeRuns(into: &wakes)
        if let last = slot.lastRequest, removed.contains(where: { $0.token == last.token }) {
          slot.forgetRequest(of: last.token, into: &removed.forgotten)
        }
        slot.settle(wasRunning: removed.count > 0, into: &wakes)
        return (removed, wakes)
      } ?? (Removed(), [])
    runningCount -= action.removed.count
    return action
  }

  /// Feeding `feed` was cancelled: the runs of `id` it started leave (cancel their tasks), the
  /// others stay. The last request is forgotten if it was one of theirs.
  @inlinable mutating func cancel(_ id: ID, feed: Int) -> CancelAction {
    let action: CancelAction =
      withSlot(id) { slot in
        var wakes: [Wake] = []
        var removed = Removed()
        let wasRunning = !slot.runs.isEmpty
        var index = slot.runs.startIndex
        while index < slot.runs.endIndex {
          guard slot.runs[index].feed == feed else {
            index += 1
            continue
          }
          let run = slot.runs.remove(at: index)
          slot.leaving(run, into: &wakes, toCancel: &removed.uncancelled)
          slot.forgetRequest(of: run.token, into: &removed.forgotten)
          removed.rest.append(run)
        }
        slot.settle(wasRunning: wasRunning, into: &wakes)
        return (removed, wakes)
      } ?? (Removed(), [])
    runningCount -= action.removed.count
    return action
  }

  /// Every run leaves; with `closing`, for good: every waiter is resumed (a watcher after `false`,
  /// if it last saw `true`), and nothing registers or parks again.
  @inlinable mutating func cancelAll(closing: Bool = false) -> CancelAction {
    var all: CancelAction = (Removed(), [])
    for id in Array(slots.keys) {
      let (removed, wakes) = cancel(id)
      all.removed.rest += removed
      all.removed.forgotten += removed.forgotten
      all.removed.uncancelled += removed.uncancelled
      all.wakes += wakes
    }
    guard closing else { return all }
    isClosed = true
    for slot in slots.values {
      all.wakes += slot.watchers.map { ($0.waiter, nil) } + slot.joiners.map { ($0.parked.waiter, nil) }
      // Released after the lock, with the rest.
      if let last = slot.lastRequest { all.removed.forgotten.append(last.value) }
    }
    slots = [:]
    return all
  }

  /// The owner closed: nothing registers from now on (`reserve` refuses, `join` returns at once);
  /// what is registered runs on, and ends as it would have.
  @inlinable mutating func close() {
    refusesRuns = true
  }

  @inlinable func isRunning(_ id: ID) -> Bool {
    slots[id].map { !$0.runs.isEmpty } ?? false
  }

  /// Whether no run registered after `token` is still registered under `id`.
  @inlinable func isLatest(_ id: ID, token: Int) -> Bool {
    (slots[id]?.runs.last?.token ?? token) <= token
  }

  // MARK: Waiters

  /// A `runAndWait` caller whose `firstWins` run was ignored waits for the runs registered now to
  /// leave; the waiter to resume at once if none is (or it was cancelled, or the registry closed).
  @inlinable mutating func join(_ id: ID, parked: Parked, isCancelled: Bool) -> Wake? {
    guard !isCancelled, !isClosed, !refusesRuns else { return (parked.waiter, nil) }
    return withSlot(id) { slot -> Wake? in
      guard let last = slot.runs.last else { return (parked.waiter, nil) }
      slot.joiners.append((parked, last.token))
      return nil
    } ?? (parked.waiter, nil)
  }

  /// A watcher that last delivered `last` (`nil`: nothing yet) asks for `id`'s next state: the
  /// state to resume it with at once (`nil`: finish), or `nil` when it is parked.
  @inlinable mutating func watch(_ id: ID, last: Bool?, parked: Parked, isCancelled: Bool) -> Wake? {
    if isCancelled { return (parked.waiter, nil) }
    let running = isRunning(id)
    if running != last { return (parked.waiter, running) }
    if isClosed { return (parked.waiter, nil) }
    withSlot(id, create: true) { $0.watchers.append(parked) }
    return nil
  }

  /// The joiner or watcher `waiterID` of `id` was cancelled: its waiter, if it is parked.
  @inlinable mutating func leave(_ id: ID, waiterID: Int) -> Waiter? {
    withSlot(id) { slot -> Waiter? in
      if let index = slot.watchers.firstIndex(where: { $0.id == waiterID }) {
        return slot.watchers.remove(at: index).waiter
      }
      guard let index = slot.joiners.firstIndex(where: { $0.parked.id == waiterID }) else { return nil }
      return slot.joiners.remove(at: index).parked.waiter
    } ?? nil
  }
}

/// Whether two requests are equal: `false` for requests of different types.
@inlinable func areEqual(_ lhs: any Equatable, _ rhs: any Equatable) -> Bool {
  func isEqual<Value: Equatable>(_ lhs: Value) -> Bool { (rhs as? Value) == lhs }
  return isEqual(lhs)
}
