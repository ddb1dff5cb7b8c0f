/// What happens to the running inner sequence when a new outer element arrives.
enum FlattenPolicy: Sendable, Equatable {
  /// The new element supersedes the running inner of its key (switch-to-latest).
  case latest
  /// Up to `maxConcurrent` inners run at once; the outer is not pulled while that many run.
  case merge(maxConcurrent: Int)
  /// The new element is dropped while an inner runs (first wins).
  case exhaust

  /// `merge`, with the argument checked as the public API promises.
  static func merge(checking maxConcurrent: Int) -> FlattenPolicy {
    precondition(
      maxConcurrent >= 1, "mergeFlow(maxConcurrent:_:): maxConcurrent must be 1 or greater, got \(maxConcurrent)")
    return .merge(maxConcurrent: maxConcurrent)
  }
}

/// The pure logic of every flattening operator: which inner sequences run, which are superseded,
/// what the consumer may take and when the whole is over.
///
/// Each inner runs in a task of its own and pulls its sequence on demand: it may hold up to
/// ``innerBufferLimit`` elements the consumer has not taken, then waits (or is superseded) before
/// pulling more. So a slow consumer never makes anything buffer without bound, the hand-offs of a
/// busy inner do not cost a suspension each, and a superseded inner's elements are dropped under
/// the same lock that registers its successor: they can never reach the consumer afterwards.
struct FlattenStateMachine<OuterElement: Sendable, Key: Hashable & Sendable, Element: Sendable, Failure: Error> {
  typealias Resumption = UnsafeContinuation<Bool, Never>

  /// How many elements one inner may hold that the consumer has not taken yet.
  static var innerBufferLimit: Int { 16 }

  private struct Inner {
    var key: Key
    /// False once superseded (or once the operator is ending): nothing it offers is taken.
    var isCurrent = true
    var pending: [Element] = []
    /// The inner's task waiting for room (`true`) or for being dropped (`false`).
    var producer: Resumption?
    var task: Task<Void, Never>?
    /// The inner sequence ended while elements were still pending; it retires once they are taken.
    var hasEnded = false
    var failure: Failure?
  }

  private enum Phase {
    case idle
    case running
    /// Decided: the consumer ends with `failure` once every task has ended.
    case ending(Failure?)
    case finished
  }

  let policy: FlattenPolicy
  private var phase = Phase.idle
  private var inners: [Int: Inner] = [:]
  /// The running inner of each key, for `latest` and `exhaust`.
  private var currentByKey: [Key: Int] = [:]
  /// Inners that are current: not superseded, not ended.
  private var activeCount = 0
  private var ready: [Int] = []
  private var readyStart = 0
  private var nextID = 0
  private var outerHasEnded = false
  private var outerTask: Task<Void, Never>?
  private var outerWaiting: Resumption?
  private var consumer: UnsafeContinuation<Void, Never>?

  init(policy: FlattenPolicy) {
    self.policy = policy
  }

  /// What the storage must do after an event, outside the lock.
  struct Effects {
    var resume: [(Resumption, Bool)] = []
    var resumeConsumer: UnsafeContinuation<Void, Never>?
    var cancel: [Task<Void, Never>] = []
    var startInner: (id: Int, element: OuterElement)?

    mutating func merge(_ other: Effects) {
      resume += other.resume
      resumeConsumer = resumeConsumer ?? other.resumeConsumer
      cancel += other.cancel
    }

    func perform() {
      for task in cancel { task.cancel() }
      for (continuation, value) in resume { continuation.resume(returning: value) }
      resumeConsumer?.resume()
    }
  }

  private var outerWanted: Bool {
    guard case .merge(let maxConcurrent) = policy else { return true }
    return activeCount < maxConcurrent
  }

  // MARK: Consumer

  enum NextAction {
    case deliver(Element, Effects)
    case start
    case suspend
    /// Await the outer task, then the inner tasks, then end with the failure (or finish).
    case end(Failure?, outer: Task<Void, Never>?)
  }

  mutating func next() -> NextAction {
    switch phase {
    case .idle:
      phase = .running
      return .start
    case .running:
      while readyStart < ready.count {
        let id = ready[readyStart]
        readyStart += 1
        if readyStart == ready.count {
          ready.removeAll(keepingCapacity: true)
          readyStart = 0
        }
        guard var inner = inners[id], inner.isCurrent, !inner.pending.isEmpty else { continue }
        let element = inner.pending.removeFirst()
        var effects = Effects()
        // Waking a full inner only once half its room is free keeps a busy inner and consumer from
        // trading a suspension per element.
        if inner.pending.count <= Self.innerBufferLimit / 2, let producer = inner.producer.take() {
          effects.resume.append((producer, true))
        }
        if inner.hasEnded && inner.pending.isEmpty {
          inners.removeValue(forKey: id)
          effects.merge(retire(inner))
        } else {
          inners[id] = inner
        }
        return .deliver(element, effects)
      }
      return .suspend
    case .ending(let failure):
      phase = .finished
      return .end(failure, outer: outerTask)
    case .finished:
      return .end(nil, outer: nil)
    }
  }

  /// Registers the waiting consumer, or returns it to be resumed at once.
  mutating func suspendConsumer(_ continuation: UnsafeContinuation<Void, Never>) -> UnsafeContinuation<Void, Never>? {
    guard case .running = phase, readyStart == ready.count else { return continuation }
    consumer = continuation
    return nil
  }

  /// The inner tasks still running, once the outer task has ended (it starts no more of them).
  func remainingInnerTasks() -> [Task<Void, Never>] {
    inners.values.compactMap { $0.task }
  }

  /// The consumer's task was cancelled or its iterator released.
  mutating func cancel() -> Effects {
    switch phase {
    case .idle:
      phase = .finished
      return Effects()
    case .running:
      return end(nil)
    case .ending, .finished:
      return Effects()
    }
  }

  // MARK: Outer

  mutating func outerStarted(_ task: Task<Void, Never>) -> Task<Void, Never>? {
    outerTask = task
    if case .running = phase { return nil }
    return task
  }

  /// Whether the outer pump may pull; `nil` if it must wait, in which case `continuation` (if
  /// given) is registered to be resumed with the answer.
  mutating func outerMayPull(_ continuation: Resumption?) -> Bool? {
    guard case .running = phase else { return false }
    if outerWanted { return true }
    if let continuation { outerWaiting = continuation }
    return nil
  }

  mutating func outerElement(_ element: OuterElement, key: Key) -> Effects {
    guard case .running = phase else { return Effects() }
    var effects = Effects()
    if !isMerge, let running = currentByKey[key] {
      switch policy {
      case .exhaust:
        return effects
      case .latest:
        supersede(running, into: &effects)
      case .merge:
        break
      }
    }
    let id = nextID
    nextID += 1
    inners[id] = Inner(key: key)
    activeCount += 1
    if !isMerge { currentByKey[key] = id }
    effects.startInner = (id, element)
    return effects
  }

  mutating func outerEnded(_ failure: Failure?) -> Effects {
    guard case .running = phase else { return Effects() }
    if let failure { return end(failure) }
    outerHasEnded = true
    return finishIfDone()
  }

  // MARK: Inners

  /// Returns the task if the inner is no longer wanted, so that it is cancelled.
  mutating func innerStarted(_ id: Int, task: Task<Void, Never>) -> Task<Void, Never>? {
    guard var inner = inners[id] else { return nil }
    inner.task = task
    inners[id] = inner
    return inner.isCurrent ? nil : task
  }

  enum OfferResult {
    case accepted(Effects)
    /// The inner holds ``innerBufferLimit`` elements: wait for room, then offer again.
    case full
    /// Superseded, or the operator is ending: stop.
    case dropped
  }

  /// An inner offers `element`.
  mutating func offer(_ id: Int, _ element: Element) -> OfferResult {
    guard case .running = phase, var inner = inners[id], inner.isCurrent else { return .dropped }
    guard inner.pending.count < Self.innerBufferLimit else { return .full }
    inner.pending.append(element)
    inners[id] = inner
    ready.append(id)
    var effects = Effects()
    effects.resumeConsumer = consumer.take()
    return .accepted(effects)
  }

  /// A full inner waits for room; returns the answer at once (`true`: offer again, `false`: stop)
  /// if it need not wait.
  mutating func waitForRoom(_ id: Int, _ producer: Resumption) -> Bool? {
    guard case .running = phase, var inner = inners[id], inner.isCurrent else { return false }
    guard inner.pending.count >= Self.innerBufferLimit else { return true }
    inner.producer = producer
    inners[id] = inner
    return nil
  }

  mutating func innerEnded(_ id: Int, failure: Failure?) -> Effects {
    guard var inner = inners[id] else { return Effects() }
    // A superseded inner's end, failure included, is stale: it must not touch the live stream.
    guard inner.isCurrent, case .running = phase else {
      inners.removeValue(forKey: id)
      return Effects()
    }
    inner.task = nil
    inner.hasEnded = true
    inner.failure = failure
    // Elements it offered before it ended are delivered first; it retires after the last one.
    guard inner.pending.isEmpty else {
      inners[id] = inner
      return Effects()
    }
    inners.removeValue(forKey: id)
    return retire(inner)
  }

  /// An ended inner whose elements have all been taken leaves: it ends the operator if it failed,
  /// lets the outer pull again (merge), and may finish the operator.
  private mutating func retire(_ inner: Inner) -> Effects {
    activeCount -= 1
    if !isMerge { currentByKey.removeValue(forKey: inner.key) }
    if let failure = inner.failure { return end(failure) }
    var effects = finishIfDone()
    if let outer = outerWaiting.take() { effects.resume.append((outer, outerWanted)) }
    return effects
  }

  // MARK: Helpers

  private var isMerge: Bool {
    if case .merge = policy { return true }
    return false
  }

  private mutating func supersede(_ id: Int, into effects: inout Effects) {
    guard var inner = inners[id] else { return }
    inner.isCurrent = false
    inner.pending = []
    if let producer = inner.producer.take() { effects.resume.append((producer, false)) }
    if let task = inner.task { effects.cancel.append(task) }
    // An inner that already ended has no task left to report back: it leaves now.
    if inner.hasEnded { inners.removeValue(forKey: id) } else { inners[id] = inner }
    activeCount -= 1
    currentByKey.removeValue(forKey: inner.key)
  }

  private mutating func finishIfDone() -> Effects {
    guard outerHasEnded, activeCount == 0 else { return Effects() }
    return end(nil)
  }

  /// Ends the operator: every inner is dropped and every task cancelled; the consumer ends with
  /// `failure` once they have all ended.
  private mutating func end(_ failure: Failure?) -> Effects {
    phase = .ending(failure)
    var effects = Effects()
    for (id, var inner) in inners {
      inner.isCurrent = false
      inner.pending = []
      if let producer = inner.producer.take() { effects.resume.append((producer, false)) }
      if let task = inner.task { effects.cancel.append(task) }
      inners[id] = inner
    }
    currentByKey.removeAll()
    activeCount = 0
    ready.removeAll()
    readyStart = 0
    if let outer = outerWaiting.take() { effects.resume.append((outer, false)) }
    if let outerTask { effects.cancel.append(outerTask) }
    effects.resumeConsumer = consumer.take()
    return effects
  }
}
