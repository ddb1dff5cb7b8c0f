/// The registry behind ``TaskSlots``: which tasks run under which identity. Pure: the owner starts
/// and cancels tasks outside its lock, as the returned decisions say.
@usableFromInline
struct TaskSlotsStateMachine<ID: Hashable> {
  @usableFromInline struct Entry {
    @usableFromInline let token: Int
    /// `nil` between the reservation and the task's creation.
    @usableFromInline var task: Task<Void, Never>?

    @inlinable init(token: Int, task: Task<Void, Never>?) {
      self.token = token
      self.task = task
    }
  }

  @usableFromInline var slots: [ID: [Entry]] = [:]
  /// The end of each task that a queued task waits for, by token. Made only when a `queue` task
  /// needs one (most tasks are never waited for), and kept apart from `slots`: a registration can
  /// leave (cancelled, superseded) while its task still runs, and the signal must fire when that
  /// task really ends.
  @usableFromInline var awaitedEnds: [Int: CompletionSignal] = [:]
  @usableFromInline var nextToken = 0
  @usableFromInline var runningCount = 0

  @inlinable init() {}

  @usableFromInline enum RunDecision {
    /// Cancel `superseded`, then start the task for `token`, after every one of `predecessors` fired.
    case start(token: Int, superseded: [Task<Void, Never>], predecessors: [CompletionSignal])
    /// `firstWins` while a task runs: start nothing.
    case ignore
  }

  /// Registers a new task for `id` under `policy`. For `latestWins` the tasks in flight leave the
  /// registry in the same step, so it never holds two for one identity.
  @inlinable mutating func reserve(_ id: ID, policy: SlotPolicy) -> RunDecision {
    // Taken out of the dictionary so that the array is uniquely referenced: mutating it in place
    // then costs no copy.
    var entries = slots.removeValue(forKey: id) ?? []
    var superseded: [Task<Void, Never>] = []
    var predecessors: [CompletionSignal] = []
    switch policy.storage {
    case .latestWins:
      for entry in entries {
        if let task = entry.task { superseded.append(task) }
      }
      runningCount -= entries.count
      entries.removeAll(keepingCapacity: true)
    case .firstWins:
      if !entries.isEmpty {
        slots[id] = entries
        return .ignore
      }
    case .queue:
      for entry in entries { predecessors.append(awaitedEnd(of: entry.token)) }
    case .concurrent:
      break
    }
    let token = nextToken
    nextToken += 1
    entries.append(Entry(token: token, task: nil))
    runningCount += 1
    slots[id] = entries
    return .start(token: token, superseded: superseded, predecessors: predecessors)
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

  /// A task ended; only its own registration is removed, never a successor's. Returns the signal
  /// to fire if a queued task waits for this one.
  @inlinable mutating func finished(id: ID, token: Int) -> CompletionSignal? {
    if var entries = slots.removeValue(forKey: id) {
      if let index = entries.firstIndex(where: { $0.token == token }) {
        entries.remove(at: index)
        runningCount -= 1
      }
      if !entries.isEmpty { slots[id] = entries }
    }
    return awaitedEnds.isEmpty ? nil : awaitedEnds.removeValue(forKey: token)
  }

  /// Removes every registration of `id`; returns the tasks to cancel.
  @inlinable mutating func cancel(_ id: ID) -> [Task<Void, Never>] {
    guard let entries = slots.removeValue(forKey: id) else { return [] }
    runningCount -= entries.count
    return entries.compactMap { $0.task }
  }

  /// Removes every registration; returns the tasks to cancel.
  @inlinable mutating func cancelAll() -> [Task<Void, Never>] {
    defer {
      slots.removeAll()
      runningCount = 0
    }
    return slots.values.flatMap { $0.compactMap { $0.task } }
  }

  @inlinable func isRunning(_ id: ID) -> Bool {
    slots[id] != nil
  }
}
