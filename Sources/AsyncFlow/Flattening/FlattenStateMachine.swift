/// What happens to the running inner sequence when a new outer element arrives.
@usableFromInline
enum FlattenPolicy: Sendable, Equatable {
  /// The new element supersedes the running inner of its key (switch-to-latest).
  case latest
  /// Up to `maxConcurrent` inners run at once; the outer is not pulled while that many run.
  case merge(maxConcurrent: Int)
  /// The new element is dropped while an inner runs (first wins).
  case exhaust

  /// `merge`, with the argument checked as the public API promises.
  @inlinable static func merge(checking maxConcurrent: Int) -> FlattenPolicy {
    precondition(
      maxConcurrent >= 1, "mergeFlow(maxConcurrent:_:): maxConcurrent must be 1 or greater, got \(maxConcurrent)")
    return .merge(maxConcurrent: maxConcurrent)
  }
}

/// The logic of every flattening operator: which inner sequences run, which are superseded,
/// what the consumer may take and when the whole is over.
///
/// Each inner runs in a task of its own and pulls its sequence on demand into its
/// ``FlattenInnerChannel``: it may hold up to ``FlattenInnerChannel/bufferLimit`` elements the
/// consumer has not taken yet, then waits (or is superseded) before pulling more. So a slow
/// consumer never makes anything buffer without bound, the hand-offs of a busy inner do not cost a
/// suspension each, and a superseded inner's channel is dropped under the same lock that registers
/// its successor: its elements can never reach the consumer afterwards. The machine runs under the
/// operator's shared lock and takes the channels' locks inside it.
@usableFromInline
struct FlattenStateMachine<OuterElement: Sendable, Key: Hashable & Sendable, Element: Sendable, Failure: Error> {
  @usableFromInline
  typealias Channel = FlattenInnerChannel<Element, Failure>
  @usableFromInline
  typealias Resumption = UnsafeContinuation<Bool, Never>

  @usableFromInline
  struct Inner {
    @usableFromInline var key: Key
    @usableFromInline let channel: Channel
    /// False once superseded (or once the operator is ending).
    @usableFromInline var isCurrent = true
    @usableFromInline var task: Task<Void, Never>?
    /// The outer element it was made for, until its task begins and claims it.
    @usableFromInline var element: OuterElement?

    @inlinable init(key: Key, channel: Channel, element: OuterElement) {
      self.key = key
      self.channel = channel
      self.element = element
    }
  }

  @usableFromInline
  enum Phase {
    case idle
    case running
    /// Decided: the consumer ends with `failure` once every task has ended.
    case ending(Failure?)
    case finished
  }

  @usableFromInline let policy: FlattenPolicy
  @usableFromInline var phase = Phase.idle
  @usableFromInline var inners: [Int: Inner] = [:]
  /// The running inner of each key, for `latest` and `exhaust`.
  @usableFromInline var currentByKey: [Key: Int] = [:]
  /// Inners that are current: not superseded, not retired.
  @usableFromInline var activeCount = 0
  /// Channels with something for the consumer (elements, or their end), in the order they got it.
  @usableFromInline var ready: [Channel] = []
  @usableFromInline var readyStart = 0
  @usableFromInline var nextID = 0
  @usableFromInline var outerHasEnded = false
  @usableFromInline var outerTask: Task<Void, Never>?
  @usableFromInline var outerWaiting: Resumption?
  @usableFromInline var consumer: UnsafeContinuation<Void, Never>?

  @inlinable init(policy: FlattenPolicy) {
    self.policy = policy
  }

  /// What the storage must do after an event, outside the lock.
  @usableFromInline
  struct Effects {
    @usableFromInline var resume: [(Resumption, Bool)] = []
    @usableFromInline var resumeConsumer: UnsafeContinuation<Void, Never>?
    @usableFromInline var cancel: [Task<Void, Never>] = []
    /// Start a task for this inner; it begins by claiming its element (``claim(_:)``).
    @usableFromInline var startInner: Int?

    @inlinable init() {}

    @inlinable var isEmpty: Bool { resume.isEmpty && resumeConsumer == nil && cancel.isEmpty }

    @inlinable mutating func merge(_ other: Effects) {
      resume += other.resume
      resumeConsumer = resumeConsumer ?? other.resumeConsumer
      cancel += other.cancel
    }

    @inlinable func perform() {
      for task in cancel { task.cancel() }
      for (continuation, value) in resume { continuation.resume(returning: value) }
      resumeConsumer?.resume()
    }
  }

  @inlinable var outerWanted: Bool {
    guard case .merge(let maxConcurrent) = policy else { return true }
    return activeCount < maxConcurrent
  }

  // MARK: Consumer

  @usableFromInline
  enum NextAction {
    /// Perform `effects`, then deliver `elements` in order (if none, ask again).
    case deliver([Element], Effects)
    case start
    case suspend
    /// Await the outer task, then the inner tasks, then end with the failure (or finish).
    case end(Failure?, outer: Task<Void, Never>?)
  }

  /// Whether the consumer may take everything ready at once. A superseding policy may not: an
  /// element handed over early could be superseded before the consumer returns it, and a stale
  /// element must never reach the consumer.
  @inlinable var takesBatches: Bool { policy != .latest }

  @inlinable mutating func next() -> NextAction {
    switch phase {
    case .idle:
      phase = .running
      return .start
    case .running:
      var elements: [Element] = []
      var effects = Effects()
      while readyStart < ready.count {
        let channel = ready[readyStart]
        readyStart += 1
        let taken = channel.take(all: takesBatches, into: &elements)
        if let producer = taken.producer { effects.resume.append((producer, true)) }
        // One that still has elements goes to the back, behind the others: a busy inner cannot
        // starve the other keys of a keyed `switchToLatestFlow`.
        if !taken.isDrained { ready.append(channel) }
        if taken.retires, let inner = inners.removeValue(forKey: channel.id) {
          effects.merge(retire(inner, failure: taken.failure))
          // A failure ends the operator: what was taken before it is still delivered.
          guard case .running = phase else { break }
        }
        if !takesBatches && !elements.isEmpty { break }
      }
      if readyStart == ready.count {
        ready.removeAll(keepingCapacity: true)
        readyStart = 0
      } else if readyStart >= 32 && readyStart * 2 >= ready.count {
        // A queue that never empties (a busy current inner) is trimmed as it goes.
        ready.removeFirst(readyStart)
        readyStart = 0
      }
      guard elements.isEmpty, effects.isEmpty, case .running = phase else {
        // Retiring may have ended the operator or let the outer go on: then there is something to
        // do even without elements.
        return .deliver(elements, effects)
      }
      return .suspend
    case .ending(let failure):
      phase = .finished
      return .end(failure, outer: outerTask)
    case .finished:
      return .end(nil, outer: nil)
    }
  }

  /// How many entries the ready queue holds, taken ones included (for tests: it must stay bounded).
  var readyQueueLength: Int { ready.count }

  /// Registers the waiting consumer, or returns it to be resumed at once.
  @inlinable mutating func suspendConsumer(_ continuation: UnsafeContinuation<Void, Never>) -> UnsafeContinuation<
    Void, Never
  >? {
    guard case .running = phase, readyStart == ready.count else { return continuation }
    consumer = continuation
    return nil
  }

  /// The inner tasks still running, once the outer task has ended (it starts no more of them).
  @inlinable func remainingInnerTasks() -> [Task<Void, Never>] {
    inners.values.compactMap { $0.task }
  }

  /// The consumer's task was cancelled or its iterator released.
  @inlinable mutating func cancel() -> Effects {
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

  @inlinable mutating func outerStarted(_ task: Task<Void, Never>) -> Task<Void, Never>? {
    outerTask = task
    if case .running = phase { return nil }
    return task
  }

  /// Whether the outer pump may pull; `nil` if it must wait, in which case `continuation` (if
  /// given) is registered to be resumed with the answer.
  @inlinable mutating func outerMayPull(_ continuation: Resumption?) -> Bool? {
    guard case .running = phase else { return false }
    if outerWanted { return true }
    if let continuation { outerWaiting = continuation }
    return nil
  }

  @inlinable mutating func outerElement(_ element: OuterElement, key: Key) -> Effects {
    guard case .running = phase else { return Effects() }
    var effects = Effects()
    if !isMerge, let running = currentByKey[key] {
      switch policy {
      case .exhaust:
        return effects
      case .latest:
        // Its task has not begun: it begins with this element instead. The superseded element is
        // never transformed, and a fast outer costs no task per element.
        if let index = inners.index(forKey: running), inners.values[index].element != nil {
          inners.values[index].element = element
          return effects
        }
        supersede(running, into: &effects)
      case .merge:
        break
      }
    }
    let id = nextID
    nextID += 1
    inners[id] = Inner(key: key, channel: Channel(id: id), element: element)
    activeCount += 1
    if !isMerge { currentByKey[key] = id }
    effects.startInner = id
    return effects
  }

  @inlinable mutating func outerEnded(_ failure: Failure?) -> Effects {
    guard case .running = phase else { return Effects() }
    if let failure { return end(failure) }
    outerHasEnded = true
    return finishIfDone()
  }

  // MARK: Inners

  /// An inner's task begins: the element to transform and the channel to offer into, or `nil`
  /// if the operator is ending (the task then ends at once).
  @inlinable mutating func claim(_ id: Int) -> (channel: Channel, element: OuterElement)? {
    guard let index = inners.index(forKey: id) else { return nil }
    guard case .running = phase, inners.values[index].isCurrent, let element = inners.values[index].element.take()
    else {
      inners.remove(at: index)
      return nil
    }
    return (inners.values[index].channel, element)
  }

  /// Returns the task if the inner is no longer wanted, so that it is cancelled.
  @inlinable mutating func innerStarted(_ id: Int, task: Task<Void, Never>) -> Task<Void, Never>? {
    guard let index = inners.index(forKey: id) else { return nil }
    inners.values[index].task = task
    return inners.values[index].isCurrent ? nil : task
  }

  /// A channel got its first element since the consumer last emptied it: list it as ready.
  @inlinable mutating func listReady(_ channel: Channel) -> UnsafeContinuation<Void, Never>? {
    guard case .running = phase else { return nil }
    ready.append(channel)
    return consumer.take()
  }

  /// An inner's task is ending, with `failure` if its sequence threw. A superseded inner's end,
  /// failure included, is stale. One with nothing left to take retires at once (so its failure
  /// ends the operator, and `exhaustFlow` and `mergeFlow` may start the next inner, whatever the
  /// consumer is doing); otherwise the consumer retires it after taking its last element.
  @inlinable mutating func innerEnded(_ channel: Channel, failure: Failure?) -> Effects {
    guard let index = inners.index(forKey: channel.id) else { return Effects() }
    guard case .running = phase, inners.values[index].isCurrent else {
      inners.remove(at: index)
      return Effects()
    }
    switch channel.end(failure: failure) {
    case .stale:
      inners.remove(at: index)
      return Effects()
    case .retire:
      return retire(inners.remove(at: index).value, failure: failure)
    case .retireWhenDrained(let needsListing):
      // Its task is ending now.
      inners.values[index].task = nil
      var effects = Effects()
      if needsListing { effects.resumeConsumer = listReady(channel) }
      return effects
    }
  }

  /// An ended inner whose elements have all been taken leaves: it ends the operator if it failed,
  /// lets the outer pull again (merge), and may finish the operator.
  @inlinable mutating func retire(_ inner: Inner, failure: Failure?) -> Effects {
    activeCount -= 1
    if !isMerge { currentByKey.removeValue(forKey: inner.key) }
    if let failure { return end(failure) }
    var effects = finishIfDone()
    if let outer = outerWaiting.take() { effects.resume.append((outer, outerWanted)) }
    return effects
  }

  // MARK: Helpers

  @inlinable var isMerge: Bool {
    if case .merge = policy { return true }
    return false
  }

  @inlinable mutating func supersede(_ id: Int, into effects: inout Effects) {
    guard let index = inners.index(forKey: id) else { return }
    let key = inners.values[index].key
    inners.values[index].isCurrent = false
    let (producer, hadEnded) = inners.values[index].channel.drop()
    if let producer { effects.resume.append((producer, false)) }
    if let task = inners.values[index].task { effects.cancel.append(task) }
    // An inner that already ended has no task left to report back: it leaves now.
    if hadEnded { inners.remove(at: index) }
    activeCount -= 1
    currentByKey.removeValue(forKey: key)
  }

  @inlinable mutating func finishIfDone() -> Effects {
    guard outerHasEnded, activeCount == 0 else { return Effects() }
    return end(nil)
  }

  /// Ends the operator: every inner is dropped and every task cancelled; the consumer ends with
  /// `failure` once they have all ended.
  @inlinable mutating func end(_ failure: Failure?) -> Effects {
    phase = .ending(failure)
    var effects = Effects()
    for index in inners.indices {
      inners.values[index].isCurrent = false
      let (producer, _) = inners.values[index].channel.drop()
      if let producer { effects.resume.append((producer, false)) }
      if let task = inners.values[index].task { effects.cancel.append(task) }
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
