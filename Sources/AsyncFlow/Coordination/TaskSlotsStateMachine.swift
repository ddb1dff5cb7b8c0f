/// The registry behind ``TaskSlots``: which runs are registered under which identity, and who
/// watches an identity's running state. Pure: each event returns an action, and the storage
/// (`TaskSlotsStorage`) starts and cancels tasks, and resumes watchers, after its lock. Generic
/// over the watcher (a continuation) and the task, so that its grid is a table of plain values.
/// The policy of the new run decides, whatever the policies of the runs already registered (the
/// table in ``TaskSlots``).
@usableFromInline
struct TaskSlotsStateMachine<ID: Hashable, Watcher, Work> {
  @usableFromInline struct Registration {
    @usableFromInline let token: Int
    /// `nil` between the reservation and the task's creation.
    @usableFromInline var task: Work?
    /// What the caller named as the run's reason, kept for the request log (`nil` without one).
    @usableFromInline let trigger: String?

    @inlinable init(token: Int, task: Work?, trigger: String?) {
      self.token = token
      self.task = task
      self.trigger = trigger
    }
  }

  /// One identity's registrations, in token order; an idle identity has no slot. One run, the
  /// common case, is held without an array, so that a `latestWins` run allocates nothing here.
  @usableFromInline enum Slot: RandomAccessCollection {
    case one(Registration)
    /// Two or more (`queue`, `concurrent`).
    case several([Registration])

    @inlinable var startIndex: Int { 0 }
    @inlinable var endIndex: Int {
      switch self {
      case .one: 1
      case .several(let all): all.count
      }
    }
    @inlinable subscript(position: Int) -> Registration {
      switch self {
      case .one(let only): only
      case .several(let all): all[position]
      }
    }

    @inlinable mutating func append(_ new: Registration) {
      switch self {
      case .one(let only):
        self = .several([only, new])
      case .several(var all):
        self = .several([])  // the array's other reference: appending costs no copy
        all.append(new)
        self = .several(all)
      }
    }

    /// What `remove(_:)` did: the run is not here (superseded or cancelled), it was one of several,
    /// or it is the only one, which stays for the caller to remove with the slot.
    @usableFromInline enum Removal { case absent, removed, last }

    @inlinable mutating func remove(_ token: Int) -> Removal {
      switch self {
      case .one(let only):
        return only.token == token ? .last : .absent
      case .several(var all):
        guard let index = all.firstIndex(where: { $0.token == token }) else { return .absent }
        self = .several([])  // the array's other reference: removing costs no copy
        all.remove(at: index)
        self = all.count == 1 ? .one(all[0]) : .several(all)
        return .removed
      }
    }

    /// Gives run `token` its task; `false` if the run is not here.
    @inlinable mutating func attach(_ task: Work, token: Int) -> Bool {
      switch self {
      case .one(var only):
        guard only.token == token else { return false }
        only.task = task
        self = .one(only)
      case .several(var all):
        guard let index = all.firstIndex(where: { $0.token == token }) else { return false }
        self = .several([])  // the array's other reference: changing it costs no copy
        all[index].task = task
        self = .several(all)
      }
      return true
    }
  }

  /// A watcher to resume with a running state, or with `nil` (the registry is closed: finish).
  @usableFromInline typealias Wake = (watcher: Watcher, running: Bool?)

  /// A consumer of `isRunningFlow(_:)` parked until `slot`'s running state differs from the one
  /// it delivered last (which was the current one when it parked).
  @usableFromInline typealias Parked = (id: Int, slot: ID, watcher: Watcher)

  @usableFromInline struct Open {
    @usableFromInline var slots: [ID: Slot] = [:]
    @usableFromInline var runningCount = 0
    /// In the order they parked; empty unless someone binds a running state.
    @usableFromInline var watchers: [Parked] = []

    @inlinable init() {}

    /// Takes out the watchers of `id`: its running state just became `running`, which differs
    /// from what each of them delivered last.
    @inlinable mutating func wake(_ id: ID, running: Bool) -> [Wake] {
      guard !watchers.isEmpty else { return [] }
      var wakes: [Wake] = []
      watchers.removeAll { parked in
        guard parked.slot == id else { return false }
        wakes.append((parked.watcher, running))
        return true
      }
      return wakes
    }
  }

  @usableFromInline enum State {
    /// Runs are registered and watchers park.
    case open(Open)
    /// The `TaskSlots` is gone: nothing is registered, and watchers finish instead of parking.
    case closed
    /// Held only inside an event, while the open payload is changed: taken out of the enum, its
    /// dictionary and arrays are uniquely referenced, so that changing them costs no copy.
    case modifying
  }

  @usableFromInline var state = State.open(Open())
  /// The end of each task that a queued run waits for, by token, in every state: made only when a
  /// `queue` run needs one (most tasks are never waited for), and kept apart from the slots, since
  /// a registration can leave (cancelled, superseded, closed) while its task still runs, and the
  /// signal must fire when that task really ends.
  @usableFromInline var awaitedEnds: [Int: CompletionSignal] = [:]
  /// The cancellation of each run superseded (`latestWins`) before its task was attached, by token,
  /// in every state: every later `latestWins` run of its identity waits for it before its operation
  /// begins. The caller that started that run, on another thread, attaches its task a moment later,
  /// finds it gone and cancels it; until then the task may run its operation, so without the wait
  /// two operations of one identity would run uncancelled at once (and the older one may even begin
  /// after the newer). An entry leaves only once it has fired (``cancellationFired(_:)``), so that a
  /// run registered between the attachment and the cancellation waits too. Empty unless callers on
  /// several threads race for one identity.
  @usableFromInline var unattachedCancels: [Int: (id: ID, signal: CompletionSignal)] = [:]
  /// The next run's number when the owner has no request log (with one, the log numbers runs).
  @usableFromInline var nextToken = 1
  @usableFromInline var nextWatcherID = 0

  @inlinable init() {}

  // MARK: Runs

  @usableFromInline enum ReserveAction {
    /// Cancel the tasks of `superseded` (the registrations that left, for the request log too),
    /// resume `wakes`, then start the task for `token`, whose operation begins after every one of
    /// `predecessors` fired: the ends of the runs it queues behind (`queue`), or the cancellations
    /// of the runs of its identity superseded before their tasks were attached (`latestWins`).
    case start(token: Int, superseded: Slot?, predecessors: [CompletionSignal], wakes: [Wake])
    /// `firstWins` while a run is registered: start nothing. A caller that joins the runs in flight
    /// (`runAndWait`) waits for `inFlight`, their ends; `[]` for one that does not.
    case ignore(inFlight: [CompletionSignal])
  }

  /// Registers a new run for `id` under `policy`, numbered `token` (the request log's number) or,
  /// without one, by the registry. For `latestWins` the runs in flight leave in the same step, so
  /// that the registry never holds two for one identity. With `joining`, an ignored `firstWins` run
  /// gets the ends of the runs it found, to wait for.
  @inlinable mutating func reserve(
    _ id: ID, policy: SlotPolicy, token: Int? = nil, trigger: String? = nil, joining: Bool = false
  ) -> ReserveAction {
    // Closed: the `TaskSlots` went during its own `run`, after its last use there. Nothing starts.
    guard case .open(var open) = state else { return .ignore(inFlight: []) }
    state = .modifying
    defer { state = .open(open) }
    // One lookup, and the slot changed in place through its index: taking it out and putting it
    // back cost two more hashes and the dictionary's deletion per run (W6).
    let index = open.slots.index(forKey: id)
    if let index, case .firstWins = policy.storage {
      guard joining else { return .ignore(inFlight: []) }
      var inFlight: [CompletionSignal] = []
      for registration in open.slots.values[index] { inFlight.append(awaitedEnd(of: registration.token)) }
      return .ignore(inFlight: inFlight)
    }
    let token = token ?? nextToken
    nextToken = token + 1
    let new = Registration(token: token, task: nil, trigger: trigger)
    open.runningCount += 1
    guard let index else {
      open.slots[id] = .one(new)
      let cancellations = policy.storage == .latestWins ? pendingCancellations(of: id) : []
      return .start(token: token, superseded: nil, predecessors: cancellations, wakes: open.wake(id, running: true))
    }
    if case .latestWins = policy.storage {
      // Handed out whole, so that their tasks and triggers are released after the lock.
      var superseded = Slot.one(new)
      swap(&superseded, &open.slots.values[index])
      open.runningCount -= superseded.count
      awaitCancellation(of: superseded, id: id)
      return .start(token: token, superseded: superseded, predecessors: pendingCancellations(of: id), wakes: [])
    }
    var predecessors: [CompletionSignal] = []  // `concurrent` waits for none
    if case .queue = policy.storage {
      for registration in open.slots.values[index] { predecessors.append(awaitedEnd(of: registration.token)) }
    }
    open.slots.values[index].append(new)
    return .start(token: token, superseded: nil, predecessors: predecessors, wakes: [])
  }

  /// Registrations of `id` were superseded: the cancellation of each whose task is not attached yet
  /// is pending.
  @inlinable mutating func awaitCancellation(of slot: Slot, id: ID) {
    for registration in slot where registration.task == nil {
      unattachedCancels[registration.token] = (id, CompletionSignal())
    }
  }

  /// What a `latestWins` run of `id` waits for: the pending cancellations of its identity.
  @inlinable func pendingCancellations(of id: ID) -> [CompletionSignal] {
    guard !unattachedCancels.isEmpty else { return [] }
    return unattachedCancels.values.compactMap { $0.id == id ? $0.signal : nil }
  }

  /// The superseded run `token`'s task was cancelled and its signal fired: nobody needs to wait for it.
  @inlinable mutating func cancellationFired(_ token: Int) {
    unattachedCancels.removeValue(forKey: token)
  }

  @inlinable mutating func awaitedEnd(of token: Int) -> CompletionSignal {
    if let signal = awaitedEnds[token] { return signal }
    let signal = CompletionSignal()
    awaitedEnds[token] = signal
    return signal
  }

  /// Whether run `token` may begin its operation: it is still registered (not superseded, not
  /// cancelled by `cancel(_:)` or `cancelAll()`, the `TaskSlots` not released). Asked by its task,
  /// on the operation's isolation, right before the operation.
  @inlinable func mayBegin(_ id: ID, token: Int) -> Bool {
    guard case .open(let open) = state, let slot = open.slots[id] else { return false }
    return slot.contains { $0.token == token }
  }

  @usableFromInline enum AttachAction {
    case attached
    /// The run left before its task existed (cancelled, superseded, the registry closed): cancel
    /// the task at once, then fire `superseded` (a later `latestWins` run's operation may wait for
    /// it) and report ``cancellationFired(_:)``.
    case cancel(superseded: CompletionSignal?)
  }

  /// The task of run `token` exists.
  @inlinable mutating func attach(_ task: Work, id: ID, token: Int) -> AttachAction {
    let superseded = unattachedCancels.isEmpty ? nil : unattachedCancels[token]?.signal
    guard case .open(var open) = state else { return .cancel(superseded: superseded) }
    state = .modifying
    defer { state = .open(open) }
    // Changed through `values[index]`, not through `slots[id]?`: the dictionary's `_modify` by key
    // is a coroutine whose frame is allocated on the heap, one malloc per run (measured with a
    // uprobe on malloc in W6); one lookup and the values' accessor cost none.
    guard let index = open.slots.index(forKey: id) else { return .cancel(superseded: superseded) }
    return open.slots.values[index].attach(task, token: token) ? .attached : .cancel(superseded: superseded)
  }

  @usableFromInline enum EndAction {
    /// Nobody waits for this end: no queued run, no watcher of an identity now idle.
    case none
    /// Resume `wakes` (the identity is idle now), fire `signal` (a queued run waits for this end).
    case wake([Wake], signal: CompletionSignal?)
  }

  /// A task ended; only its own registration is removed, never a successor's.
  @inlinable mutating func finished(id: ID, token: Int) -> EndAction {
    let signal = awaitedEnds.isEmpty ? nil : awaitedEnds.removeValue(forKey: token)
    var wakes: [Wake] = []
    if case .open(var open) = state, let index = open.slots.index(forKey: id) {
      state = .modifying
      switch open.slots.values[index].remove(token) {
      case .last:
        open.slots.remove(at: index)
        open.runningCount -= 1
        wakes = open.wake(id, running: false)
      case .removed:
        open.runningCount -= 1
      case .absent:
        break
      }
      state = .open(open)
    }
    return signal == nil && wakes.isEmpty ? .none : .wake(wakes, signal: signal)
  }

  @usableFromInline enum CancelAction {
    /// Nothing was registered, and no watcher is to be told.
    case none
    /// Resume `wakes`, then cancel the tasks of `slot`: one identity's registrations, which left.
    case cancel(Slot, wakes: [Wake])
    /// Resume `wakes`, then cancel the tasks of every slot in `slots`, which left.
    case cancelAll([ID: Slot], wakes: [Wake])
  }

  @inlinable mutating func cancel(_ id: ID) -> CancelAction {
    guard case .open(var open) = state else { return .none }
    state = .modifying
    defer { state = .open(open) }
    guard let slot = open.slots.removeValue(forKey: id) else { return .none }
    open.runningCount -= slot.count
    return .cancel(slot, wakes: open.wake(id, running: false))
  }

  @inlinable mutating func cancelAll() -> CancelAction {
    removeAll(closing: false)
  }

  /// The `TaskSlots` is gone: every registration is removed, and every watcher finishes (after
  /// `false`, if it last saw `true`).
  @inlinable mutating func close() -> CancelAction {
    removeAll(closing: true)
  }

  @inlinable mutating func removeAll(closing: Bool) -> CancelAction {
    guard case .open(var open) = state else { return .none }
    state = .modifying
    var removed: [ID: Slot] = [:]
    swap(&removed, &open.slots)
    var wakes: [Wake] = []
    if !open.watchers.isEmpty {
      for id in removed.keys { wakes += open.wake(id, running: false) }
    }
    open.runningCount = 0
    if closing {
      wakes += open.watchers.map { ($0.watcher, nil) }
      state = .closed
    } else {
      state = .open(open)
    }
    return removed.isEmpty && wakes.isEmpty ? .none : .cancelAll(removed, wakes: wakes)
  }

  @inlinable func isRunning(_ id: ID) -> Bool {
    guard case .open(let open) = state else { return false }
    return open.slots[id] != nil
  }

  /// Whether no run registered after `token` is still registered under `id`. Registrations are
  /// appended in token order, so the last one tells.
  @inlinable func isLatest(_ id: ID, token: Int) -> Bool {
    guard case .open(let open) = state, let last = open.slots[id]?.last else { return true }
    return last.token <= token
  }

  @inlinable var runningCount: Int {
    guard case .open(let open) = state else { return 0 }
    return open.runningCount
  }

  // MARK: Running-state watchers

  @inlinable var watchers: [Parked] {
    guard case .open(let open) = state else { return [] }
    return open.watchers
  }

  @inlinable mutating func makeWatcherID() -> Int {
    defer { nextWatcherID += 1 }
    return nextWatcherID
  }

  @usableFromInline enum WatchAction {
    /// Resume the watcher at once with this state (`nil`: finish).
    case resume(Bool?)
    /// The watcher is parked until the state changes.
    case parked
  }

  /// A watcher that last delivered `last` (`nil`: nothing yet) asks for `id`'s next state.
  @inlinable mutating func watch(
    _ id: ID, last: Bool?, watcher: Int, continuation: Watcher, isCancelled: Bool
  ) -> WatchAction {
    if isCancelled { return .resume(nil) }
    let running = isRunning(id)
    if running != last { return .resume(running) }
    guard case .open(var open) = state else { return .resume(nil) }
    state = .modifying
    open.watchers.append((watcher, id, continuation))
    state = .open(open)
    return .parked
  }

  /// The watcher's consumer was cancelled: its continuation, to resume with `nil`, if it is parked.
  @inlinable mutating func cancelWatcher(_ watcher: Int) -> Watcher? {
    guard case .open(var open) = state, let index = open.watchers.firstIndex(where: { $0.id == watcher }) else {
      return nil
    }
    state = .modifying
    defer { state = .open(open) }
    return open.watchers.remove(at: index).watcher
  }
}
