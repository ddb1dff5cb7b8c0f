/// The pure machine of ``AsyncGroupedSequence``: the groups by key, the new groups the outer
/// consumer has not taken yet, who waits, and the end. No lock, no resume, no task start here: each
/// event returns what the storage does after its lock. Generic over the waiters and the task, so
/// that its table of events is tested with integers.
struct GroupedStateMachine<Key: Hashable, Element, Failure: Error, OuterWaiter, GroupWaiter, PumpWaiter, TaskHandle> {
  /// How the base ended, as the outer consumer and every group see it.
  enum End {
    case finished
    case failed(Failure)
    /// The outer iteration was cancelled or released: every group ends at once, with `nil`.
    case cancelled
  }

  /// The operator's life: before the first outer `next()`, while the pump runs, after.
  enum Phase {
    case idle
    case running(TaskHandle?)
    case ended(End)
  }

  struct Group {
    let key: Key
    var buffer = RingBuffer<Element>()
    var waiter: GroupWaiter?
    var iteratorMade = false
  }

  let limit: Int
  var phase = Phase.idle
  var groups: [Int: Group] = [:]
  var ids: [Key: Int] = [:]
  var newGroups = RingBuffer<Int>()
  var outerWaiter: OuterWaiter?
  var pumpWaiter: PumpWaiter?
  /// The groups whose buffers are full: the pump waits while one is, or while the outer's queue
  /// of new groups is.
  var full: Set<Int> = []
  var nextID = 0
  /// The pump's task, kept after the end: the outer consumer's end comes after it.
  var pumpTask: TaskHandle?
  /// Whether the outer consumer was given the end (its failure, if any).
  var outerGotItsEnd = false

  init(limit: Int) {
    self.limit = limit
  }

  // MARK: the outer consumer

  enum OuterAction {
    case startPump
    case deliver(id: Int, key: Key, resumePump: PumpWaiter?)
    case suspend
    case end(Failure?)
  }

  mutating func outerNext() -> OuterAction {
    if let id = newGroups.popFirst() {
      return .deliver(id: id, key: groups[id]!.key, resumePump: resumedPump())
    }
    switch phase {
    case .idle:
      phase = .running(nil)
      return .startPump
    case .running: return .suspend
    case .ended(let end):
      // The failure comes once; every `next()` after it answers `nil`.
      guard !outerGotItsEnd else { return .end(nil) }
      outerGotItsEnd = true
      if case .failed(let failure) = end { return .end(failure) }
      return .end(nil)
    }
  }

  /// The pump's task has started; `false` when the outer consumer left meanwhile: cancel it.
  mutating func pumpStarted(_ task: TaskHandle) -> Bool {
    pumpTask = task
    guard case .running(nil) = phase else { return false }
    phase = .running(task)
    return true
  }

  /// The outer consumer parks; `false` when it must ask again at once (something came meanwhile).
  mutating func outerSuspends(_ waiter: OuterWaiter) -> Bool {
    guard newGroups.isEmpty, case .running = phase else { return false }
    outerWaiter = waiter
    return true
  }

  /// What the outer consumer's leaving lets go.
  struct Leaving {
    var task: TaskHandle?
    var outer: OuterWaiter?
    var pump: PumpWaiter?
    var groupWaiters: [GroupWaiter] = []
    var released: [RingBuffer<Element>] = []
  }

  /// The outer consumer was cancelled, or released its iterator. Before the base's end, the pump
  /// is cancelled and every group ends at once, its buffer released. After it, the groups keep what
  /// they hold for their consumers: no task is left.
  mutating func outerLeft() -> Leaving {
    var leaving = Leaving()
    leaving.outer = outerWaiter.take()
    switch phase {
    case .idle, .running:
      if case .running(let task) = phase { leaving.task = task }
      phase = .ended(.cancelled)
      leaving.pump = pumpWaiter.take()
      full = []
      for (_, group) in groups {
        if let waiter = group.waiter { leaving.groupWaiters.append(waiter) }
        leaving.released.append(group.buffer)
      }
      groups = [:]
      ids = [:]
      newGroups = RingBuffer()
    case .ended:
      // The groups not taken are nobody's now.
      while let id = newGroups.popFirst() {
        if let group = groups.removeValue(forKey: id) { leaving.released.append(group.buffer) }
      }
    }
    return leaving
  }

  // MARK: the pump

  enum PumpAction {
    /// Go on pulling, after handing the element to the group's waiter, or the new group to the
    /// outer's, if one waits.
    case next(group: (GroupWaiter, Element)?, outer: (OuterWaiter, Int, Key)?, wait: Bool)
    /// The operator is over: stop, releasing the element.
    case stop(Element)
  }

  mutating func pumped(_ element: Element, key: Key) -> PumpAction {
    guard case .running = phase else { return .stop(element) }
    if let id = ids[key] {
      if let waiter = groups[id]!.waiter {
        groups[id]!.waiter = nil
        return .next(group: (waiter, element), outer: nil, wait: false)
      }
      groups[id]!.buffer.append(element)
      if groups[id]!.buffer.count >= limit { full.insert(id) }
      return .next(group: nil, outer: nil, wait: !hasRoom)
    }
    let id = nextID
    nextID += 1
    var group = Group(key: key)
    group.buffer.append(element)
    groups[id] = group
    ids[key] = id
    if limit == 1 { full.insert(id) }
    if let waiter = outerWaiter.take() {
      return .next(group: nil, outer: (waiter, id, key), wait: !hasRoom)
    }
    newGroups.append(id)
    return .next(group: nil, outer: nil, wait: !hasRoom)
  }

  /// Whether the pump may pull: no group's buffer is full, nor the outer's queue of new groups.
  var hasRoom: Bool { full.isEmpty && newGroups.count < limit }

  /// The pump parks until there is room; `false` when there is room already, or the operator is over.
  mutating func pumpWaits(_ waiter: PumpWaiter) -> Bool {
    guard !hasRoom, case .running = phase else { return false }
    pumpWaiter = waiter
    return true
  }

  /// Whether the pump may go on once it is resumed.
  var pumpMayGoOn: Bool {
    if case .running = phase { return true }
    return false
  }

  /// What the base's end lets go: the outer waiter with its answer and the waiting groups'.
  struct Ending {
    var outer: OuterWaiter?
    var groupWaiters: [GroupWaiter] = []
    var end: End = .finished
  }

  mutating func pumpEnded(_ end: End) -> Ending {
    guard case .running = phase else { return Ending() }
    phase = .ended(end)
    var ending = Ending(end: end)
    if newGroups.isEmpty { ending.outer = outerWaiter.take() }
    for (id, group) in groups where group.buffer.isEmpty {
      if let waiter = group.waiter {
        ending.groupWaiters.append(waiter)
        groups[id]!.waiter = nil
      }
    }
    return ending
  }

  // MARK: a group's consumer

  /// Whether the group may make its iterator: a group is iterated once.
  mutating func makeIterator(_ id: Int) -> Bool {
    guard groups[id] != nil else { return true }  // already over: the iterator ends at once
    if groups[id]!.iteratorMade { return false }
    groups[id]!.iteratorMade = true
    return true
  }

  enum GroupAction {
    case deliver(Element, resumePump: PumpWaiter?)
    case suspend
    case end(Failure?)
  }

  mutating func groupNext(_ id: Int) -> GroupAction {
    guard groups[id] != nil else { return .end(nil) }
    if let element = groups[id]!.buffer.popFirst() {
      full.remove(id)
      return .deliver(element, resumePump: resumedPump())
    }
    switch phase {
    case .idle, .running: return .suspend
    case .ended(let end):
      remove(id)
      if case .failed(let failure) = end { return .end(failure) }
      return .end(nil)
    }
  }

  /// The group's consumer parks; `false` when it must ask again at once.
  mutating func groupSuspends(_ id: Int, _ waiter: GroupWaiter) -> Bool {
    guard groups[id] != nil, groups[id]!.buffer.isEmpty, case .running = phase else { return false }
    groups[id]!.waiter = waiter
    return true
  }

  /// A group's consumer was cancelled, or the group and its iterator were released: the key is
  /// free, and its next element starts a new group.
  mutating func groupLeft(_ id: Int) -> (GroupWaiter?, RingBuffer<Element>?, PumpWaiter?) {
    guard let group = groups[id] else { return (nil, nil, nil) }
    remove(id)
    return (group.waiter, group.buffer, resumedPump())
  }

  private mutating func remove(_ id: Int) {
    guard let group = groups.removeValue(forKey: id) else { return }
    full.remove(id)
    if ids[group.key] == id { ids[group.key] = nil }
  }

  /// The parked pump, once there is room.
  private mutating func resumedPump() -> PumpWaiter? {
    hasRoom ? pumpWaiter.take() : nil
  }
}

extension GroupedStateMachine: Sendable
where Key: Sendable, Element: Sendable, OuterWaiter: Sendable, GroupWaiter: Sendable, PumpWaiter: Sendable, TaskHandle: Sendable {}
extension GroupedStateMachine.Phase: Sendable
where Key: Sendable, Element: Sendable, OuterWaiter: Sendable, GroupWaiter: Sendable, PumpWaiter: Sendable, TaskHandle: Sendable {}
extension GroupedStateMachine.End: Sendable
where Key: Sendable, Element: Sendable, OuterWaiter: Sendable, GroupWaiter: Sendable, PumpWaiter: Sendable, TaskHandle: Sendable {}
extension GroupedStateMachine.Group: Sendable
where Key: Sendable, Element: Sendable, OuterWaiter: Sendable, GroupWaiter: Sendable, PumpWaiter: Sendable, TaskHandle: Sendable {}
