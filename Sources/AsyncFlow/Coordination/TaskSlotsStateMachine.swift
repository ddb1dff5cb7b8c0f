/// The registry behind ``TaskSlots``: which tasks run under which identity. Pure: the owner starts
/// and cancels tasks outside its lock, as the returned decisions say.
struct TaskSlotsStateMachine<ID: Hashable> {
  private struct Entry {
    let token: Int
    /// `nil` between the reservation and the task's creation.
    var task: Task<Void, Never>?
    /// Fired when the task ends; a queued task waits for those of every task before it, which
    /// exist from the reservation on (a task handle does not, yet).
    let done: CompletionSignal
  }

  private var slots: [ID: [Entry]] = [:]
  private var nextToken = 0
  private(set) var runningCount = 0

  enum RunDecision {
    /// Cancel `superseded`, then start the task for `token`, after every one of `predecessors` fired.
    case start(token: Int, done: CompletionSignal, superseded: [Task<Void, Never>], predecessors: [CompletionSignal])
    /// `firstWins` while a task runs: start nothing.
    case ignore
  }

  /// Registers a new task for `id` under `policy`. For `latestWins` the tasks in flight leave the
  /// registry in the same step, so it never holds two for one identity.
  mutating func reserve(_ id: ID, policy: SlotPolicy) -> RunDecision {
    // Taken out of the dictionary so that the array is uniquely referenced: mutating it in place
    // then costs no copy.
    var entries = slots.removeValue(forKey: id) ?? []
    var superseded: [Task<Void, Never>] = []
    var predecessors: [CompletionSignal] = []
    switch policy.storage {
    case .latestWins:
      superseded = entries.compactMap { $0.task }
      runningCount -= entries.count
      entries.removeAll()
    case .firstWins:
      if !entries.isEmpty {
        slots[id] = entries
        return .ignore
      }
    case .queue:
      predecessors = entries.map { $0.done }
    case .concurrent:
      break
    }
    let token = nextToken
    nextToken += 1
    let done = CompletionSignal()
    entries.append(Entry(token: token, task: nil, done: done))
    runningCount += 1
    slots[id] = entries
    return .start(token: token, done: done, superseded: superseded, predecessors: predecessors)
  }

  /// Attaches the started task; returns `false` if its registration is already gone (cancelled),
  /// so that the task is cancelled at once.
  mutating func attach(_ task: Task<Void, Never>, id: ID, token: Int) -> Bool {
    guard let index = slots[id]?.firstIndex(where: { $0.token == token }) else { return false }
    slots[id]![index].task = task
    return true
  }

  /// A task ended; only its own registration is removed, never a successor's.
  mutating func finished(id: ID, token: Int) {
    guard var entries = slots.removeValue(forKey: id) else { return }
    if let index = entries.firstIndex(where: { $0.token == token }) {
      entries.remove(at: index)
      runningCount -= 1
    }
    if !entries.isEmpty { slots[id] = entries }
  }

  /// Removes every registration of `id`; returns the tasks to cancel.
  mutating func cancel(_ id: ID) -> [Task<Void, Never>] {
    guard let entries = slots.removeValue(forKey: id) else { return [] }
    runningCount -= entries.count
    return entries.compactMap { $0.task }
  }

  /// Removes every registration; returns the tasks to cancel.
  mutating func cancelAll() -> [Task<Void, Never>] {
    defer {
      slots.removeAll()
      runningCount = 0
    }
    return slots.values.flatMap { $0.compactMap { $0.task } }
  }

  func isRunning(_ id: ID) -> Bool {
    slots[id] != nil
  }
}
