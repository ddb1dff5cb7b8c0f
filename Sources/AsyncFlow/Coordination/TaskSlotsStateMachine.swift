/// The registry behind ``TaskSlots``: which tasks run under which identity, and who watches an
/// identity's running state. Pure: the owner starts and cancels tasks, and resumes watchers,
/// outside its lock, as the returned decisions say.
///
/// Mixed policies on one identity: the policy of the new run decides, whatever the policies of
/// the runs already registered. `latestWins` removes (and cancels) every registration, queued ones
/// included; `firstWins` starts nothing while any registration exists; `queue` waits for the end
/// of every registration before it; `concurrent` relates to none.
@usableFromInline
struct TaskSlotsStateMachine<ID: Hashable> {
  @usableFromInline struct Entry {
    @usableFromInline let token: Int
    /// `nil` between the reservation and the task's creation.
    @usableFromInline var task: Task<Void, Never>?
    /// What the caller named as the run's reason, kept for the request log (`nil` without one).
    @usableFromInline let trigger: String?

    @inlinable init(token: Int, task: Task<Void, Never>?, trigger: String? = nil) {
      self.token = token
      self.task = task
      self.trigger = trigger
    }
  }

  /// A consumer of `TaskSlots.isRunningFlow(_:)` suspended until `slot`'s running state differs
  /// from the one it delivered last (which was the current one when it parked).
  @usableFromInline struct Watcher {
    @usableFromInline let id: Int
    @usableFromInline let slot: ID
    @usableFromInline let continuation: UnsafeContinuation<Bool?, Never>

    @inlinable init(id: Int, slot: ID, continuation: UnsafeContinuation<Bool?, Never>) {
      self.id = id
      self.slot = slot
      self.continuation = continuation
    }
  }

  /// A watcher to resume with a running state, or with `nil` (the registry is closed: finish).
  @usableFromInline struct Wake {
    @usableFromInline let continuation: UnsafeContinuation<Bool?, Never>
    @usableFromInline let running: Bool?

    @inlinable init(continuation: UnsafeContinuation<Bool?, Never>, running: Bool?) {
      self.continuation = continuation
      self.running = running
    }

    @inlinable func resume() {
      continuation.resume(returning: running)
    }
  }

  @usableFromInline var slots: [ID: [Entry]] = [:]
  /// The end of each task that a queued task waits for, by token. Made only when a `queue` task
  /// needs one (most tasks are never waited for), and kept apart from `slots`: a registration can
  /// leave (cancelled, superseded) while its task still runs, and the signal must fire when that
  /// task really ends.
  @usableFromInline var awaitedEnds: [Int: CompletionSignal] = [:]
  /// The next run's number when the owner has no request log (with one, the log numbers runs).
  @usableFromInline var nextToken = 1
  @usableFromInline var runningCount = 0
  /// Whether watchers may park, and the parked ones.
  @usableFromInline enum Watching {
    /// Watchers parked in the order they parked; empty unless someone binds a running state.
    case open([Watcher])
    /// The `TaskSlots` is gone: watchers finish instead of parking, so none is ever left parked.
    case closed
  }

  @usableFromInline var watching = Watching.open([])
  @usableFromInline var nextWatcherID = 0

  /// The parked watchers.
  @inlinable var watchers: [Watcher] {
    guard case .open(let parked) = watching else { return [] }
    return parked
  }

  /// Changes the parked watchers in place: the array is taken out of the enum first, so that it is
  /// uniquely referenced and changing it costs no copy.
  @inlinable mutating func withParkedWatchers<Result>(_ body: (inout [Watcher]) -> Result) -> Result? {
    guard case .open(var parked) = watching else { return nil }
    watching = .open([])
    defer { watching = .open(parked) }
    return body(&parked)
  }

  @inlinable init() {}

  @usableFromInline enum RunDecision {
    /// Cancel the tasks of `superseded` (the registrations that left, for the request log too),
    /// resume `wakes`, then start the task for `token`, after every one of `predecessors` fired.
    case start(token: Int, superseded: [Entry], predecessors: [CompletionSignal], wakes: [Wake])
    /// `firstWins` while a task runs: start nothing.
    case ignore
  }

  /// Registers a new task for `id` under `policy`, numbered `token` (the request log's number) or,
  /// without one, by the registry. For `latestWins` the tasks in flight leave the registry in the
  /// same step, so it never holds two for one identity.
  @inlinable mutating func reserve(
    _ id: ID, policy: SlotPolicy, token: Int? = nil, trigger: String? = nil
  ) -> RunDecision {
    // Taken out of the dictionary so that the array is uniquely referenced: mutating it in place
    // then costs no copy.
    var entries = slots.removeValue(forKey: id) ?? []
    let wasRunning = !entries.isEmpty
    var superseded: [Entry] = []
    var predecessors: [CompletionSignal] = []
    switch policy.storage {
    case .latestWins:
      // Handed out whole (the buffer moves, no copy), so that their tasks and triggers are
      // released after the lock.
      runningCount -= entries.count
      swap(&superseded, &entries)
    case .firstWins:
      if wasRunning {
        slots[id] = entries
        return .ignore
      }
    case .queue:
      for entry in entries { predecessors.append(awaitedEnd(of: entry.token)) }
    case .concurrent:
      break
    }
    let token = token ?? nextToken
    nextToken = token + 1
    entries.append(Entry(token: token, task: nil, trigger: trigger))
    runningCount += 1
    slots[id] = entries
    let wakes = wasRunning ? [] : wake(id, running: true)
    return .start(token: token, superseded: superseded, predecessors: predecessors, wakes: wakes)
  }

  @inlinable mutating func awaitedEnd(of token: Int) -> CompletionSignal {
    if let signal = awaitedEnds[token] { return signal }
    let signal = CompletionSignal()
    awaitedEnds[token] = signal
    return signal
  }

  /// Attaches the started task; returns `false` if its registration is already gone (cancelled),
  /// so that the task is cancelled at once.
  @inlinable mutating func attach(_ task: Task<Void, Never>, id: ID, token: Int) -> Bool {
    guard let index = slots[id]?.firstIndex(where: { $0.token == token }) else { return false }
    slots[id]![index].task = task
    return true
  }

  /// What the end of a task asks for: fire the signal a queued task waits for, resume watchers.
  @usableFromInline struct Ended {
    @usableFromInline let signal: CompletionSignal?
    @usableFromInline let wakes: [Wake]

    @inlinable init(signal: CompletionSignal?, wakes: [Wake]) {
      self.signal = signal
      self.wakes = wakes
    }

    @inlinable func perform() {
      for wake in wakes { wake.resume() }
      signal?.fire()
    }
  }

  /// A task ended; only its own registration is removed, never a successor's.
  @inlinable mutating func finished(id: ID, token: Int) -> Ended {
    var wakes: [Wake] = []
    if var entries = slots.removeValue(forKey: id) {
      if let index = entries.firstIndex(where: { $0.token == token }) {
        entries.remove(at: index)
        runningCount -= 1
      }
      if entries.isEmpty { wakes = wake(id, running: false) } else { slots[id] = entries }
    }
    return Ended(signal: awaitedEnds.isEmpty ? nil : awaitedEnds.removeValue(forKey: token), wakes: wakes)
  }

  /// What cancelling asks for: cancel the tasks, resume the watchers.
  @usableFromInline struct Cancellation {
    @usableFromInline let tasks: [Task<Void, Never>]
    @usableFromInline let wakes: [Wake]

    @inlinable init(tasks: [Task<Void, Never>], wakes: [Wake]) {
      self.tasks = tasks
      self.wakes = wakes
    }

    @inlinable func perform() {
      for wake in wakes { wake.resume() }
      for task in tasks { task.cancel() }
    }
  }

  /// Removes every registration of `id`.
  @inlinable mutating func cancel(_ id: ID) -> Cancellation {
    guard let entries = slots.removeValue(forKey: id) else { return Cancellation(tasks: [], wakes: []) }
    runningCount -= entries.count
    return Cancellation(tasks: entries.compactMap { $0.task }, wakes: wake(id, running: false))
  }

  /// Removes every registration.
  @inlinable mutating func cancelAll() -> Cancellation {
    let tasks = slots.values.flatMap { $0.compactMap { $0.task } }
    var wakes: [Wake] = []
    if !watchers.isEmpty {
      for id in slots.keys { wakes += wake(id, running: false) }
    }
    slots.removeAll()
    runningCount = 0
    return Cancellation(tasks: tasks, wakes: wakes)
  }

  /// The `TaskSlots` is gone: every registration is removed, and every watcher finishes (after
  /// `false`, if it last saw `true`).
  @inlinable mutating func close() -> Cancellation {
    let cancellation = cancelAll()
    let finishing = watchers.map { Wake(continuation: $0.continuation, running: nil) }
    watching = .closed
    return Cancellation(tasks: cancellation.tasks, wakes: cancellation.wakes + finishing)
  }

  @inlinable func isRunning(_ id: ID) -> Bool {
    slots[id] != nil
  }

  /// Whether no run registered after `token` is still registered under `id`. Entries are appended
  /// in token order, so the last one tells.
  @inlinable func isLatest(_ id: ID, token: Int) -> Bool {
    guard let last = slots[id]?.last else { return true }
    return last.token <= token
  }

  // MARK: Running-state watchers

  @inlinable mutating func makeWatcherID() -> Int {
    defer { nextWatcherID += 1 }
    return nextWatcherID
  }

  @usableFromInline enum WatchDecision {
    /// Resume the watcher at once with this state (`nil`: finish).
    case resume(Bool?)
    /// The watcher is parked until the state changes.
    case parked
  }

  /// A watcher that last delivered `last` (`nil`: nothing yet) asks for `id`'s next state.
  @inlinable mutating func watch(
    _ id: ID, last: Bool?, watcher: Int, continuation: UnsafeContinuation<Bool?, Never>, isCancelled: Bool
  ) -> WatchDecision {
    if isCancelled { return .resume(nil) }
    let running = isRunning(id)
    if running != last { return .resume(running) }
    guard case .open = watching else { return .resume(nil) }
    _ = withParkedWatchers { $0.append(Watcher(id: watcher, slot: id, continuation: continuation)) }
    return .parked
  }

  /// The watcher's consumer was cancelled: its continuation, to resume with `nil`, if it is parked.
  @inlinable mutating func cancelWatcher(_ watcher: Int) -> UnsafeContinuation<Bool?, Never>? {
    withParkedWatchers { parked in
      parked.firstIndex { $0.id == watcher }.map { parked.remove(at: $0).continuation }
    } ?? nil
  }

  /// Takes out the watchers of `id`: its running state just became `running`, which differs from
  /// what each of them delivered last.
  @inlinable mutating func wake(_ id: ID, running: Bool) -> [Wake] {
    guard !watchers.isEmpty else { return [] }
    var wakes: [Wake] = []
    _ = withParkedWatchers { parked in
      parked.removeAll { watcher in
        guard watcher.slot == id else { return false }
        wakes.append(Wake(continuation: watcher.continuation, running: running))
        return true
      }
    }
    return wakes
  }
}
