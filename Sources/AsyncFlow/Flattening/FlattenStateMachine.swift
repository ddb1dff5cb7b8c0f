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
/// which inner the consumer takes from next and when the whole is over.
///
/// Each inner runs in a task of its own and hands its elements over through a channel with a lock
/// and a ``FlattenInnerStateMachine`` of its own (so that the inners do not contend with each other
/// per element); this machine knows the inners by id and lists the ones with something for the
/// consumer. It is pure: it never locks, resumes, cancels or starts anything. ``FlattenStorage``
/// holds it under the operator's shared lock, takes a channel's lock (shared, then inner: never the
/// reverse) when this machine asks it to take from that channel or when an inner ends, and carries
/// out the action each event returns after releasing the locks.
///
/// Generic over the channel, continuation (`Waiter`) and task (`Handle`) types so that its grid is
/// tested with plain values.
@usableFromInline
struct FlattenStateMachine<OuterElement, Key: Hashable, Channel, Waiter, Handle, Failure: Error> {
  @usableFromInline
  enum State {
    /// Nobody has asked for an element yet: nothing runs.
    case idle
    /// Its data is ``FlattenStateMachine/running``, beside the state.
    case running
    /// Decided: the consumer ends with `failure` once every task has ended.
    case ending(failure: Failure?, Stopping)
    /// The consumer has seen the end (or left before the start).
    case finished(Stopping)
    /// Held only inside an event on the ending or finished payload, while it is out of the state
    /// (``updateStopping(_:_:)``).
    case modifying
  }

  /// The running state's data (``FlattenStateMachine/running``).
  @usableFromInline
  struct Running {
    @usableFromInline var inners: [Int: Inner] = [:]
    /// The current inner of each key, for `latest` and `exhaust`.
    @usableFromInline var currentByKey: [Key: Int] = [:]
    /// Inners that are current: not superseded, not retired.
    @usableFromInline var activeCount = 0
    /// Inners with something for the consumer (elements, or their end), in the order they got it.
    /// One may linger after its inner left: its channel is dropped then, and taking from it takes
    /// nothing. (Channels rather than ids: no lookup per hand-off.) A ``RingBuffer``: a busy
    /// inner goes to the back after each take, so the queue may never empty.
    @usableFromInline var ready = RingBuffer<(id: Int, channel: Channel)>()
    @usableFromInline var nextID = 0
    /// Inners whose turn has ended (`exhaustFlow`) while their elements wait for the consumer: the
    /// operator does not finish before they are taken.
    @usableFromInline var drainingAfterTurn = 0
    /// Inners the consumer is behind (``Inner/isBehind``): with ``batchInners``, what bounds the
    /// inners that start while the consumer does not take (``behindLimit``).
    @usableFromInline var behindCount = 0
    /// Inners whose elements the consumer took into the batch it has not delivered yet: they are
    /// still behind the consumer's code, so they count toward ``behindLimit`` until it asks again.
    @usableFromInline var batchInners = 0
    @usableFromInline var outerHasEnded = false
    @usableFromInline var outerTask: Handle?
    /// An outer element pulled while every slot of `mergeFlow` was busy: it starts when one frees.
    /// The outer is pulled one element ahead, so that its failure or end is seen while the inners
    /// run, and no further: at most one element waits here.
    @usableFromInline var held: (element: OuterElement, key: Key)?
    /// The outer pump, waiting for a slot while an element is held (resumed to ask again). Only
    /// while an element is held, so the operator cannot finish while it waits.
    @usableFromInline var outerWaiting: Waiter?
    @usableFromInline var consumer: Waiter?

    @inlinable init() {}
  }

  @usableFromInline
  struct Inner {
    @usableFromInline let key: Key
    @usableFromInline let channel: Channel
    /// Unknown until the outer task registers it just after starting it.
    @usableFromInline var task: Handle?
    @usableFromInline var stage: Stage
    /// The consumer is behind this inner: from its start until the consumer has taken everything it
    /// offered (an inner that has not delivered yet may be about to: a short inner offers and ends
    /// before the outer's task starts the next one), and again whenever it holds elements. Counted
    /// in ``Running/behindCount``.
    @usableFromInline var isBehind = false

    @inlinable init(key: Key, channel: Channel, element: OuterElement) {
      self.key = key
      self.channel = channel
      self.stage = .unclaimed(element)
    }

    /// Hands a task that has not begun a newer element: returns the element it replaces (for the
    /// storage to release after the lock), or `nil` if the task has begun. Mutating, so that it
    /// runs in place in the dictionary rather than on a copy of the inner.
    @inlinable mutating func replaceUnclaimed(_ element: OuterElement) -> OuterElement? {
      guard case .unclaimed(let replaced) = stage else { return nil }
      stage = .unclaimed(element)
      return replaced
    }
  }

  @usableFromInline
  enum Stage {
    /// Its task has not begun: the outer element it begins with (`latest` may replace it).
    case unclaimed(OuterElement)
    case running
    /// Superseded: its task may still run, but nothing it does counts any more.
    case superseded
    /// Its sequence ended while elements wait; it has no task. It leaves when the consumer took the
    /// last one. (One that failed with elements waiting ends the operator at once instead.) If
    /// `holdsTurn`, it is still the current inner of its key, or holds its slot, until then; an
    /// `exhaustFlow` inner's turn ends with its work instead, as in Rx's `flatMapFirst`.
    case draining(holdsTurn: Bool)
  }

  /// What is left to wait for once the operator is ending: the tasks that have not reported their end.
  @usableFromInline
  struct Stopping {
    @usableFromInline var outerTask: Handle?
    /// By inner id; `nil` until the outer task registers the handle.
    @usableFromInline var innerTasks: [Int: Handle?] = [:]
    /// The inner whose failure ends the operator, if elements it offered before failing wait: they
    /// precede its failure, so the consumer takes them first. Every other inner's are discarded.
    @usableFromInline var drain: Channel?

    @inlinable init(outerTask: Handle? = nil) {
      self.outerTask = outerTask
    }
  }

  /// What the storage does when the operator ends (the action of every event that may end it).
  @usableFromInline
  struct Ending {
    /// Dropped (under their own lock) BEFORE the shared lock is released: their elements are
    /// discarded and a waiting task stops, and the consumer (which takes under the shared lock)
    /// never takes from them afterwards.
    @usableFromInline var drop: [Channel] = []
    @usableFromInline var cancel: [Handle] = []
    /// The outer pump waiting for a slot: resumed with `false` (stop).
    @usableFromInline var outer: Waiter?
    /// The waiting consumer: resumed, to see the end.
    @usableFromInline var consumer: Waiter?
    /// Outer elements that left the machine without being transformed (held, or not begun):
    /// released after the lock, since a `deinit` may call back into the operator.
    @usableFromInline var release: [OuterElement] = []

    @inlinable init(drop: [Channel] = []) {
      self.drop = drop
    }
  }

  @usableFromInline let policy: FlattenPolicy
  @usableFromInline var state = State.idle
  /// The running state's data: there exactly while `state` is `running` (set at the start, taken
  /// out by ``end(_:drain:)``, whose action carries the outer elements it held, released after the
  /// lock), `nil` otherwise, so that it cannot be read in another state: such a read traps.
  ///
  /// Outside `state`, so that events mutate it in place, as ``OperatorLifecycle``'s `logic` and
  /// `inputs`: as the payload of the generic `State`, it was copied and destroyed through value
  /// witnesses at every event (IRGen outlines them for these nested generic types), which made
  /// `W3.switchToLatest` 40–90 % slower. Here it needs neither a class nor unchecked exclusivity
  /// (measured against the class it replaced: the events alone 3–38 % faster, `W3` and `W4` within
  /// noise or better); as an optional beside the state it is changed in place too (`running!`).
  @usableFromInline var running: Running?

  /// Whether the operator is ending or finished: the only states, besides running, in which the
  /// events of its tasks may come.
  @inlinable var hasEnded: Bool {
    switch state {
    case .ending, .finished: true
    case .idle, .running, .modifying: false
    }
  }

  @inlinable init(policy: FlattenPolicy) {
    self.policy = policy
  }

  @inlinable var isMerge: Bool {
    if case .merge = policy { return true }
    return false
  }

  /// Whether the consumer may take everything an inner holds at once. A superseding policy may
  /// not: an element handed over early could be superseded before the consumer returns it, and a
  /// stale element must never reach the consumer.
  @inlinable var takesBatches: Bool { policy != .latest }

  // MARK: Consumer

  @usableFromInline
  enum NextAction {
    /// Start the outer task, then ask again.
    case start
    /// Take from this inner's channel (everything, if `all`), then report ``taken(_:channel:isDrained:retires:)``.
    case take(id: Int, channel: Channel, all: Bool)
    /// Take everything from this channel (the failing inner's last elements), then ask again.
    case drain(Channel)
    /// Nothing is ready: suspend (``suspendConsumer(_:)``), then ask again.
    case suspend
    /// Await the outer task, then ``remainingInnerTasks()``, then end with the failure (or finish).
    case end(failure: Failure?, outerTask: Handle?)
  }

  @inlinable mutating func next() -> NextAction {
    switch state {
    case .running:
      guard let entry = running!.ready.popFirst() else { return .suspend }
      return .take(id: entry.id, channel: entry.channel, all: takesBatches)
    case .idle:
      state = .running
      running = Running()
      return .start
    case .ending(let failure, var stopping):
      if let drain = stopping.drain.take() {
        state = .ending(failure: failure, stopping)
        return .drain(drain)
      }
      state = .finished(stopping)
      return .end(failure: failure, outerTask: stopping.outerTask)
    case .finished:
      return .end(failure: nil, outerTask: nil)
    case .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event next")
    }
  }

  @usableFromInline
  enum TakenAction {
    /// Go on taking (``next()``).
    case takeMore
    /// Resume the outer pump with `true` (a slot is free), and go on taking.
    case resumeOuter(Waiter)
    /// The operator ends: deliver what was taken before the end, then ask again.
    case end(Ending)
  }

  /// The storage took from inner `id`'s channel as ``next()`` asked, still under the shared lock:
  /// `isDrained`, nothing is left in it; `retires`, it had ended and its last element is taken.
  @inlinable mutating func taken(_ id: Int, channel: Channel, isDrained: Bool, retires: Bool) -> TakenAction {
    guard case .running = state else {
      preconditionFailure("Internal inconsistency: state \(state), event taken")
    }
    // One that still has elements goes to the back, behind the others: a busy inner cannot
    // starve the other keys of a keyed `switchToLatestFlow`.
    if !isDrained {
      running!.ready.append((id, channel))
    } else if tracksBehind, let index = running!.inners.index(forKey: id), running!.inners.values[index].isBehind {
      // Caught up with (a superseded inner is not behind: it gave nothing). What was taken is
      // in the consumer's batch until it asks again (``batchDelivered()``).
      running!.inners.values[index].isBehind = false
      running!.behindCount -= 1
      if takesBatches { running!.batchInners += 1 }
    }
    guard retires else {
      // The consumer took one off the ready queue: the outer may go on (mergeFlow).
      guard running!.outerWaiting != nil, outerWanted, let outer = running!.outerWaiting.take() else {
        return .takeMore
      }
      return .resumeOuter(outer)
    }
    guard let inner = running!.inners.removeValue(forKey: id), case .draining(let holdsTurn) = inner.stage else {
      preconditionFailure(
        "Internal inconsistency: state running, event taken retiring inner \(id) that is not draining")
    }
    guard holdsTurn else {
      running!.drainingAfterTurn -= 1
      return finishIfDone().map { .end($0) } ?? .takeMore
    }
    switch retire(inner, failure: nil) {
    case .none: return .takeMore
    case .resume(let outer): return .resumeOuter(outer)
    case .end(let ending): return .end(ending)
    }
  }

  /// The consumer asks again: the batch it took last has been delivered, so the inners it came
  /// from no longer count toward ``behindLimit``. Called before the ``next()`` of each request;
  /// returns the outer pump to resume with `true` if that freed it.
  @inlinable mutating func batchDelivered() -> Waiter? {
    // `switchToLatestFlow` counts no batch: nothing to look at (it asks once per element).
    guard tracksBehind, case .running = state, running!.batchInners > 0 else { return nil }
    running!.batchInners = 0
    guard running!.outerWaiting != nil, outerWanted else { return nil }
    return running!.outerWaiting.take()
  }

  /// Registers the waiting consumer, or returns it to be resumed at once.
  @inlinable mutating func suspendConsumer(_ consumer: Waiter) -> Waiter? {
    if case .running = state {
      // Something may have been listed between `next()` and this registration.
      guard running!.ready.isEmpty else { return consumer }
      precondition(running!.consumer == nil, "Internal inconsistency: state running, event suspendConsumer twice")
      running!.consumer = consumer
      return nil
    }
    precondition(hasEnded, "Internal inconsistency: state \(state), event suspendConsumer")
    return consumer
  }

  /// The consumer's task was cancelled or its iterator released: what ends, if anything.
  @inlinable mutating func cancel() -> Ending? {
    switch state {
    case .running:
      return end(nil)
    case .idle:
      state = .finished(Stopping())
      return nil
    case .ending:
      // A cancelled consumer finishes without a failure, and takes no element afterwards.
      return updateStopping("cancel") { stopping, failure in
        failure = nil
        return stopping.drain.take().map { Ending(drop: [$0]) }
      }
    case .finished:
      return nil
    case .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event cancel")
    }
  }

  /// The inner tasks still running, once the outer task has ended (it starts no more of them).
  @inlinable func remainingInnerTasks() -> [Handle] {
    guard case .finished(let stopping) = state else {
      preconditionFailure("Internal inconsistency: state \(state), event remainingInnerTasks")
    }
    return stopping.innerTasks.values.compactMap { $0 }
  }

  // MARK: Outer

  /// The outer task exists; returns it if the operator is ending already, so that it is cancelled.
  @inlinable mutating func outerStarted(_ task: Handle) -> Handle? {
    if case .running = state {
      running!.outerTask = task
      return nil
    }
    // The consumer starts the outer task right after `next()` returned `.start`: it cannot have
    // seen the end in between.
    guard case .ending = state else {
      preconditionFailure("Internal inconsistency: state \(state), event outerStarted")
    }
    updateStopping("outerStarted") { stopping, _ in stopping.outerTask = task }
    return task
  }

  @usableFromInline
  enum PumpAction: Equatable {
    /// Pull the outer once, and hand what it gives to ``outerElement(_:key:channel:)``.
    case pull
    /// Start a task for this inner: the held element got a slot.
    case startInner(Int)
    /// An element is held and every slot is busy: wait (``pumpWait(_:)``), then ask again.
    case wait
    /// The operator is ending or the outer has ended: stop pulling.
    case stop
  }

  /// What the outer pump does next. It pulls only while no element is held, so the outer runs at
  /// most one element ahead of the slots of `mergeFlow`, and its failure or end is seen then.
  @inlinable mutating func pumpStep(channel: (Int) -> Channel) -> PumpAction {
    if case .running = state {
      guard let held = running!.held else { return running!.outerHasEnded ? .stop : .pull }
      guard outerWanted else { return .wait }
      running!.held = nil
      return .startInner(makeInner(held.element, key: held.key, channel: channel))
    }
    precondition(hasEnded, "Internal inconsistency: state \(state), event pumpStep")
    return .stop
  }

  /// The pump is about to wait; registers it, or returns false if it must ask again at once.
  @inlinable mutating func pumpWait(_ waiter: Waiter) -> Bool {
    if case .running = state {
      guard running!.held != nil, !outerWanted else { return false }
      precondition(running!.outerWaiting == nil, "Internal inconsistency: state running, event pumpWait twice")
      running!.outerWaiting = waiter
      return true
    }
    precondition(hasEnded, "Internal inconsistency: state \(state), event pumpWait")
    return false
  }

  @usableFromInline
  enum OuterElementAction {
    /// Dropped (`exhaustFlow` while an inner runs), held for a slot (`mergeFlow`), or the
    /// operator is ending: nothing to do.
    case none
    /// It replaced the element of an inner whose task has not begun (`latest`): release the
    /// replaced one after the lock. The superseded element is never transformed, and a fast outer
    /// costs no task per element.
    case release(OuterElement)
    /// Start a task for inner `id`; it begins by claiming its element (``claim(_:)``). First drop
    /// the channel it supersedes under the lock, and cancel that inner's task after it.
    case startInner(Int, superseding: Channel?, cancelling: Handle?)
  }

  /// The outer handed over `element`.
  @inlinable mutating func outerElement(
    _ element: OuterElement, key: Key, channel: (Int) -> Channel
  ) -> OuterElementAction {
    if case .running = state {
      if policy == .exhaust && running!.behindCount + running!.batchInners >= behindLimit {
        // Dropped as while an inner runs: the consumer is that many ended inners behind (or holds
        // their elements in its batch), which bounds what `exhaustFlow` holds however fast the outer.
        return .none
      }
      if !isMerge, let current = running!.currentByKey[key] {
        guard policy == .latest else { return .none }  // exhaust: dropped, the current inner's work runs
        if let index = running!.inners.index(forKey: current),
          let replaced = running!.inners.values[index].replaceUnclaimed(element)
        {
          return .release(replaced)
        }
        let superseded = supersede(current)
        let id = makeInner(element, key: key, channel: channel)
        return .startInner(id, superseding: superseded?.channel, cancelling: superseded?.task)
      }
      guard outerWanted else {
        precondition(running!.held == nil, "Internal inconsistency: state running, event outerElement with one held")
        running!.held = (element, key)
        return .none
      }
      return .startInner(makeInner(element, key: key, channel: channel), superseding: nil, cancelling: nil)
    }
    precondition(hasEnded, "Internal inconsistency: state \(state), event outerElement")
    return .none
  }

  /// The outer finished (`failure == nil`) or threw: what ends, if the operator does.
  @inlinable mutating func outerEnded(_ failure: Failure?) -> Ending? {
    if case .running = state {
      precondition(!running!.outerHasEnded, "Internal inconsistency: state running, event outerEnded twice")
      if let failure { return end(failure) }
      running!.outerHasEnded = true
      return finishIfDone()
    }
    precondition(hasEnded, "Internal inconsistency: state \(state), event outerEnded")
    return nil
  }

  // MARK: Inners

  /// The outer task registers the task it started for inner `id`; returns it if that inner is no
  /// longer wanted, so that it is cancelled.
  @inlinable mutating func innerStarted(_ id: Int, task: Handle) -> Handle? {
    if case .running = state {
      // The task may have ended already (then its inner is gone).
      guard let index = running!.inners.index(forKey: id) else { return nil }
      running!.inners.values[index].task = task
      if case .superseded = running!.inners.values[index].stage { return task }
      return nil
    }
    return updateStopping("innerStarted") { stopping, _ in
      guard stopping.innerTasks[id] != nil else { return nil }
      stopping.innerTasks[id] = task
      return task
    }
  }

  /// An inner's task begins: the element to transform and the channel to offer into, or `nil`
  /// if the operator is ending (the task then ends at once, without reporting its end).
  @inlinable mutating func claim(_ id: Int) -> (channel: Channel, element: OuterElement)? {
    if case .running = state {
      // An inner is superseded or retired only once its task claimed its element.
      guard let index = running!.inners.index(forKey: id),
        case .unclaimed(let element) = running!.inners.values[index].stage
      else {
        preconditionFailure("Internal inconsistency: state running, event claim of inner \(id) that is not unclaimed")
      }
      // Through the index: one hash lookup per event on the path every outer element may take.
      running!.inners.values[index].stage = .running
      return (running!.inners.values[index].channel, element)
    }
    updateStopping("claim") { stopping, _ in _ = stopping.innerTasks.removeValue(forKey: id) }
    return nil
  }

  /// Inner `id` got its first element since the consumer last emptied it: list it as ready, and
  /// return the consumer to resume if it waits. A superseded inner may list itself (it offered
  /// just before its channel was dropped): its channel is dropped, so nothing is taken from it.
  @inlinable mutating func listReady(_ id: Int, channel: Channel) -> Waiter? {
    if case .running = state {
      running!.ready.append((id, channel))
      // A caught-up inner offers again: the consumer is behind it again. (A superseded one is
      // not counted: what it offered is dropped.)
      if tracksBehind, let index = running!.inners.index(forKey: id), !running!.inners.values[index].isBehind,
        case .running = running!.inners.values[index].stage
      {
        running!.inners.values[index].isBehind = true
        running!.behindCount += 1
      }
      return running!.consumer.take()
    }
    precondition(hasEnded, "Internal inconsistency: state \(state), event listReady")
    return nil
  }

  @usableFromInline
  enum InnerEndedAction {
    case none
    /// Resume this waiter with `true`: the outer pump (a slot is free) or the consumer (the
    /// inner's last elements are listed).
    case resume(Waiter)
    case end(Ending)
  }

  /// Inner `id`'s task is ending, with `failure` if its sequence threw; `channelEnd` is what its
  /// channel answered (the storage asks it under this lock). A superseded inner's end, failure
  /// included, is stale. One with nothing left to take retires at once (so its failure ends the
  /// operator, and `exhaustFlow` and `mergeFlow` may start the next inner, whatever the consumer is
  /// doing); otherwise the consumer retires it after taking its last element.
  @inlinable mutating func innerEnded(
    _ id: Int, _ channelEnd: FlattenInnerStateMachine<some Any, Waiter>.EndAction, failure: Failure?
  ) -> InnerEndedAction {
    if case .running = state {
      guard let index = running!.inners.index(forKey: id) else {
        preconditionFailure("Internal inconsistency: state running, event innerEnded of unknown inner \(id)")
      }
      let inner = running!.inners.values[index]
      switch (inner.stage, channelEnd) {
      case (.superseded, _):
        running!.inners.remove(at: index)
        return .none
      case (.running, .retire):
        running!.inners.remove(at: index)
        if inner.isBehind { running!.behindCount -= 1 }
        return retire(inner, failure: failure)
      case (.running, .retireWhenDrained(let needsListing)):
        if let failure {
          // Its failure ends the operator now; the elements it offered before failing are still
          // delivered, before the failure. Its task is ending: it is not awaited.
          running!.inners.remove(at: index)
          return .end(end(failure, drain: inner.channel))
        }
        running!.inners.values[index].task = nil
        // Its elements wait: the consumer is behind it until it takes the last one (its offer
        // counted it already; `take` of `switchToLatestFlow` may have left some behind).
        if tracksBehind && !inner.isBehind {
          running!.inners.values[index].isBehind = true
          running!.behindCount += 1
        }
        // `exhaustFlow`: its turn ends with its work, so the next outer element starts an inner even
        // while the consumer has not taken these elements (they are still taken first).
        let holdsTurn = policy != .exhaust
        running!.inners.values[index].stage = .draining(holdsTurn: holdsTurn)
        if !holdsTurn {
          running!.activeCount -= 1
          running!.currentByKey.removeValue(forKey: inner.key)
          running!.drainingAfterTurn += 1
        }
        guard needsListing else { return .none }
        running!.ready.append((id, inner.channel))
        return running!.consumer.take().map { .resume($0) } ?? .none
      case (.running, .stale), (.unclaimed, _), (.draining, _):
        preconditionFailure(
          "Internal inconsistency: state running with inner \(id) \(inner.stage), event innerEnded \(channelEnd)")
      }
    }
    updateStopping("innerEnded") { stopping, _ in _ = stopping.innerTasks.removeValue(forKey: id) }
    return .none
  }

  // MARK: Helpers

  /// The state, moved out (``updateStopping(_:_:)``); `modifying` is left in its place.
  @inlinable @inline(__always) mutating func takeState() -> State {
    var taken = State.modifying
    swap(&taken, &state)
    return taken
  }

  /// Runs `body` on the payload of the `ending` or `finished` state (whose failure is `nil`),
  /// moved out of the state (``takeState()``); `event` names the event in any other state.
  @inlinable mutating func updateStopping<R>(_ event: String, _ body: (inout Stopping, inout Failure?) -> R) -> R {
    switch takeState() {
    case .ending(var failure, var stopping):
      defer { state = .ending(failure: failure, stopping) }
      return body(&stopping, &failure)
    case .finished(var stopping):
      var failure: Failure?
      defer { state = .finished(stopping) }
      return body(&stopping, &failure)
    case let other:
      preconditionFailure("Internal inconsistency: state \(other), event \(event)")
    }
  }

  /// An ended inner whose elements have all been taken leaves: it ends the operator if it failed,
  /// lets a waiting outer pump go on (merge), or may finish the operator.
  @inlinable mutating func retire(_ inner: Inner, failure: Failure?) -> InnerEndedAction {
    running!.activeCount -= 1
    if !isMerge { running!.currentByKey.removeValue(forKey: inner.key) }
    if let failure { return .end(end(failure)) }
    // A waiting pump holds an element: the operator cannot finish before it ran.
    if let outer = running!.outerWaiting.take() { return .resume(outer) }
    return finishIfDone().map { .end($0) } ?? .none
  }

  /// Supersedes inner `id`: returns its channel, to drop under the lock, and its task, to cancel.
  @inlinable mutating func supersede(_ id: Int) -> (channel: Channel, task: Handle?)? {
    guard let index = running!.inners.index(forKey: id) else { return nil }
    let inner = running!.inners.values[index]
    // What it offered is dropped: the consumer is no longer behind it.
    if inner.isBehind { running!.behindCount -= 1 }
    running!.activeCount -= 1
    running!.currentByKey.removeValue(forKey: inner.key)
    if case .draining = inner.stage {
      // It has no task left to report back: it leaves now.
      running!.inners.remove(at: index)
      return (inner.channel, nil)
    }
    running!.inners.values[index].stage = .superseded
    running!.inners.values[index].isBehind = false
    return (inner.channel, inner.task)
  }

  @inlinable mutating func finishIfDone() -> Ending? {
    guard running!.outerHasEnded, running!.activeCount == 0, running!.held == nil, running!.drainingAfterTurn == 0 else {
      return nil
    }
    return end(nil)
  }

  /// Ends the operator: every inner is dropped and every task cancelled; the consumer ends with
  /// `failure` once they have all ended. The outer elements still in the machine leave with the
  /// action, released after the lock. (An unclaimed inner's task ends at its claim.) The running
  /// data is reset: of what is left in it, the channels and handles are held by the action or the
  /// tasks too, and only the keys go under the lock.
  @inlinable mutating func end(_ failure: Failure?, drain: Channel? = nil) -> Ending {
    let running = self.running.take()!
    var ending = Ending()
    var stopping = Stopping(outerTask: running.outerTask)
    stopping.drain = drain
    for (id, inner) in running.inners {
      switch inner.stage {
      case .draining:
        ending.drop.append(inner.channel)
        continue  // it has no task
      case .unclaimed(let element):
        ending.release.append(element)
        ending.drop.append(inner.channel)
      case .running:
        ending.drop.append(inner.channel)
      case .superseded:
        break  // dropped already
      }
      // Its task will report back (claim or innerEnded).
      stopping.innerTasks[id] = inner.task
      if let task = inner.task { ending.cancel.append(task) }
    }
    if let held = running.held { ending.release.append(held.element) }
    ending.outer = running.outerWaiting
    if let outerTask = running.outerTask { ending.cancel.append(outerTask) }
    ending.consumer = running.consumer
    state = .ending(failure: failure, stopping)
    return ending
  }

  @inlinable mutating func makeInner(_ element: OuterElement, key: Key, channel: (Int) -> Channel) -> Int {
    let id = running!.nextID
    running!.nextID += 1
    var inner = Inner(key: key, channel: channel(id), element: element)
    if tracksBehind {
      inner.isBehind = true
      running!.behindCount += 1
    }
    running!.inners[id] = inner
    running!.activeCount += 1
    if !isMerge { running!.currentByKey[key] = id }
    return id
  }

  /// Whether a new inner may start now. `mergeFlow` (and `concatFlow`) starts one only while a
  /// slot is free and the consumer is behind fewer than ``behindLimit`` inners, its undelivered
  /// batch included (`exhaustFlow` drops new elements then instead, see
  /// ``outerElement(_:key:channel:)``): a stalled consumer stops the outer,
  /// so the inners started behind it, and the elements they hold, are bounded. Counting the
  /// inners that have not delivered yet is what bounds short inners: each offers and ends before
  /// the outer's task starts the next, so counting only inners holding elements let the outer's
  /// task start every one (issue 24: 20,000 of 20,000).
  @inlinable var outerWanted: Bool {
    switch policy {
    case .merge(let maxConcurrent):
      return running!.activeCount < maxConcurrent && running!.behindCount + running!.batchInners < behindLimit
    case .latest, .exhaust:
      return true
    }
  }

  /// Whether the machine counts the inners the consumer is behind. `switchToLatestFlow` does not:
  /// it runs one inner at a time, and the keyed one runs an inner for every key at once by
  /// design (a list loads every row it shows), so its bound is per key.
  @inlinable var tracksBehind: Bool { policy != .latest }

  /// How many inners the consumer may be behind (``Inner/isBehind``, and the inners of its
  /// undelivered batch) before the outer stops (`exhaustFlow`: before new outer elements are
  /// dropped): with the inner buffer, 16 × 64 = 1,024 elements waiting. An explicit
  /// `maxConcurrent` above 16 raises it to `maxConcurrent`, so that as many inners that have not
  /// delivered yet (long-lived, quiet ones) run as the caller asked for.
  @inlinable var behindLimit: Int {
    if case .merge(let maxConcurrent) = policy, maxConcurrent != .max {
      return Swift.max(Self.behindInnersLimit, maxConcurrent)
    }
    return Self.behindInnersLimit
  }

  /// ``behindLimit`` by default: 16, as Kotlin's `flatMapMerge` runs 16 inners by default.
  @inlinable static var behindInnersLimit: Int { 16 }

  /// How many entries the ready queue holds (for tests: it must stay bounded).
  var readyQueueLength: Int {
    running?.ready.count ?? 0
  }
}

// Synthesized here (synthesis needs the declaring file), so that the grid tests compare actions
// as plain values.
extension FlattenStateMachine.Ending: Equatable
where OuterElement: Equatable, Channel: Equatable, Waiter: Equatable, Handle: Equatable {}
extension FlattenStateMachine.TakenAction: Equatable
where OuterElement: Equatable, Channel: Equatable, Waiter: Equatable, Handle: Equatable {}
extension FlattenStateMachine.InnerEndedAction: Equatable
where OuterElement: Equatable, Channel: Equatable, Waiter: Equatable, Handle: Equatable {}
extension FlattenStateMachine.OuterElementAction: Equatable
where OuterElement: Equatable, Channel: Equatable, Handle: Equatable {}
