/// Which ``FlattenLogic`` a flattening operator runs: what its entry point chose.
@usableFromInline
enum FlattenPolicy: Sendable, Equatable {
  /// ``FlattenSwitchLogic``.
  case latest
  /// ``FlattenMergeLogic``.
  case merge(maxConcurrent: Int)
  /// ``FlattenExhaustLogic``.
  case exhaust

  /// `merge`, with the argument checked as the public API promises.
  @inlinable static func merge(checking maxConcurrent: Int) -> FlattenPolicy {
    precondition(
      maxConcurrent >= 1, "mergeFlow(maxConcurrent:_:): maxConcurrent must be 1 or greater, got \(maxConcurrent)")
    return .merge(maxConcurrent: maxConcurrent)
  }
}

/// What every flattening operator shares, whatever its ``FlattenLogic``: the inners and their
/// stages, the ready queue, the outer pump, the consumer and the end.
///
/// Each inner runs in a task of its own and hands its elements over through a channel with a lock
/// and a ``FlattenInnerStateMachine`` of its own (so that the inners do not contend with each other
/// per element); this machine knows the inners by id and lists the ones with something for the
/// consumer. It is pure: it never locks, resumes, cancels or starts anything. ``FlattenStorage``
/// holds it under the operator's lock and never takes a channel's lock while holding it: the
/// consumer takes from a channel between two events (``next()`` names the channel,
/// ``taken(_:isDrained:retires:)`` says whether what it took is delivered; a batching policy reports
/// only a take that retires its inner), a channel the machine drops is dropped after the lock, and
/// an inner's end is its channel's answer, asked before the event.
///
/// Generic over the channel, continuation (`Waiter`) and task (`Handle`) types so that its grid is
/// tested with plain values.
@usableFromInline
struct FlattenStateMachine<Logic: FlattenLogic, OuterElement, Channel, Waiter, Handle, Failure: Error> {
  @usableFromInline typealias Key = Logic.Key

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
    @usableFromInline var logic: Logic
    @usableFromInline var inners: [Int: Inner] = [:]
    /// Inners with something for the consumer (elements, or their end), in the order they got it.
    /// One may linger after its inner left: taking from its dropped channel takes nothing. (Channels
    /// rather than ids: no lookup per hand-off.) A ``RingBuffer``: a busy inner goes to the back
    /// after each take, so the queue may never empty.
    @usableFromInline var ready = RingBuffer<(id: Int, channel: Channel)>()
    @usableFromInline var nextID = 0
    /// Inners whose turn ended with their work (``FlattenLogic/workEnded(_:key:)``) while their
    /// elements wait for the consumer: the operator does not finish before they are taken.
    @usableFromInline var drainingAfterTurn = 0
    @usableFromInline var outerHasEnded = false
    @usableFromInline var outerTask: Handle?
    /// An outer element the logic held (every slot busy): it starts when the logic wants the outer.
    /// The outer is pulled one element ahead, so that its failure or end is seen while the inners
    /// run, and no further: at most one element waits here.
    @usableFromInline var held: (element: OuterElement, key: Key)?
    /// The outer pump, waiting while an element is held (resumed to ask again). Only while an
    /// element is held, so the operator cannot finish while it waits.
    @usableFromInline var outerWaiting: Waiter?
    @usableFromInline var consumer: Waiter?
    /// The inner a superseding policy's consumer is taking from, between ``next()`` and its
    /// ``taken(_:isDrained:retires:)``: if that inner's task ends meanwhile and finds its channel
    /// empty, what the consumer took was its last element, so it drains rather than retires at once
    /// (retired, it would be unknown to the report, and its last element discarded as stale).
    @usableFromInline var taking: Int?

    @inlinable init(logic: Logic) {
      self.logic = logic
    }
  }

  @usableFromInline
  struct Inner {
    @usableFromInline let key: Key
    @usableFromInline let channel: Channel
    /// Unknown until the outer task registers it just after starting it.
    @usableFromInline var task: Handle?
    @usableFromInline var stage: Stage

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
    /// Its task has not begun: the outer element it begins with (a switch may replace it).
    case unclaimed(OuterElement)
    case running
    /// Superseded: its task may still run, but nothing it does counts any more.
    case superseded
    /// Its sequence ended while elements wait; it has no task. It leaves when the consumer took the
    /// last one. (One that failed with elements waiting ends the operator at once instead.) If
    /// `holdsTurn`, it keeps its turn (``FlattenLogic/workEnded(_:key:)``) until then.
    case draining(holdsTurn: Bool)
    /// Its channel closed and the consumer took its last element before its task reported the
    /// end: it leaves at that report.
    case drained
  }

  /// What is left to wait for once the operator is ending: the tasks that have not reported their end.
  @usableFromInline
  struct Stopping {
    @usableFromInline var outerTask: Handle?
    /// By inner id; `nil` until the outer task registers the handle.
    @usableFromInline var innerTasks: [Int: Handle?] = [:]
    /// The inner whose failure ends the operator, if elements it offered before failing wait: they
    /// precede its failure, so the consumer takes them first. Every other inner's are discarded.
    @usableFromInline var drain: (id: Int, channel: Channel)?

    @inlinable init(outerTask: Handle? = nil) {
      self.outerTask = outerTask
    }
  }

  /// What the storage does when the operator ends (the action of every event that may end it),
  /// after the lock.
  @usableFromInline
  struct Ending {
    /// Their elements are discarded and a waiting task stops. The consumer may still take from one
    /// until it is dropped: ``taken(_:isDrained:retires:)`` discards what it took.
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

  @usableFromInline var state = State.idle
  /// The logic before the start (``Running/logic`` once running).
  @usableFromInline let startLogic: Logic
  /// The running state's data: there exactly while `state` is `running`. Set only by ``next()``
  /// at the start and taken out only by ``end(_:drain:)``; a read in another state traps (`running!`),
  /// and every event in another state checks, in debug builds, that it is not there
  /// (``hasEnded``, ``updateStopping(_:_:)``).
  ///
  /// Outside `state`, so that events mutate it in place, as ``OperatorLifecycle``'s `logic` and
  /// `inputs`: as the payload of the generic `State`, it was copied and destroyed through value
  /// witnesses at every event (IRGen outlines them for these nested generic types), which made
  /// `W3.switchToLatest` 40–90 % slower. Here it needs neither a class nor unchecked exclusivity
  /// (measured against the class it replaced: the events alone 3–38 % faster, `W3` and `W4` within
  /// noise or better). Read through an accessor that checked the state (`_read`, or `get` with
  /// `_modify`), it was copied at every event again: `W3.switchToLatest` 3.8 × slower.
  @usableFromInline var running: Running?

  @inlinable var isRunning: Bool {
    if case .running = state { return true }
    return false
  }

  /// Whether the operator is ending or finished: the only states, besides running, in which the
  /// events of its tasks may come.
  @inlinable var hasEnded: Bool {
    assert(running == nil, "Internal inconsistency: running data in state \(state)")
    return switch state {
    case .ending, .finished: true
    case .idle, .running, .modifying: false
    }
  }

  @inlinable init(logic: Logic) {
    self.startLogic = logic
  }

  // MARK: Consumer

  @usableFromInline
  enum NextAction {
    /// Start the outer task, then ask again.
    case start
    /// Take from this inner's channel (everything, if the logic ``FlattenLogic/takesBatches``),
    /// then report ``taken(_:isDrained:retires:)``.
    case take(id: Int, channel: Channel)
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
      // A batching policy takes everything the inner offered: the consumer is no longer behind it.
      if Logic.takesBatches { running!.logic.caughtUp(entry.id) } else { running!.taking = entry.id }
      return .take(id: entry.id, channel: entry.channel)
    case .idle:
      state = .running
      running = Running(logic: startLogic)
      return .start
    case .ending(let failure, var stopping):
      if let drain = stopping.drain.take() {
        state = .ending(failure: failure, stopping)
        return .drain(drain.channel)
      }
      state = .finished(stopping)
      return .end(failure: failure, outerTask: stopping.outerTask)
    case .finished:
      return .end(failure: nil, outerTask: nil)
    case .modifying:
      preconditionFailure("Internal inconsistency: state \(state), event next")
    }
  }

  /// What an inner's event asks of the storage: ``taken(_:isDrained:retires:)`` and
  /// ``innerEnded(_:_:failure:)``.
  @usableFromInline
  enum InnerAction {
    /// Nothing more (the consumer delivers what it took, and goes on taking).
    case none
    /// Resume this waiter with `true`: the outer pump (it may go on) or the consumer (an inner's
    /// last elements are listed).
    case resume(Waiter)
    /// What the consumer took is stale (its inner was superseded, or the operator is ending):
    /// discarded, after the lock.
    case discard
    /// The operator ends (what the consumer took is delivered first).
    case end(Ending)
  }

  /// The consumer took from inner `id`'s channel, as ``next()`` asked, out of the lock:
  /// `isDrained`, nothing is left in it; `retires`, it had ended and its last element is taken.
  @inlinable mutating func taken(_ id: Int, isDrained: Bool, retires: Bool) -> InnerAction {
    guard case .running = state else {
      // The end came while the consumer took: only the failing inner's elements still count.
      return updateStopping("taken") { stopping, _ in
        guard let drain = stopping.drain, drain.id == id else { return .discard }
        if isDrained { stopping.drain = nil }
        return .none
      }
    }
    if running!.taking == id { running!.taking = nil }
    guard let index = running!.inners.index(forKey: id) else { return .discard }
    let inner = running!.inners.values[index]
    var retires = retires
    switch inner.stage {
    case .running: break
    // Ended while its last element was being taken (see `taking`): that take drains it.
    case .draining: retires = retires || isDrained
    case .superseded, .drained: return .discard
    case .unclaimed: preconditionFailure("Internal inconsistency: state running, event taken of unclaimed inner \(id)")
    }
    // One that still has elements goes to the back, behind the others: a busy inner cannot
    // starve the other keys of a keyed `switchToLatestFlow`.
    if !isDrained { running!.ready.append((id, inner.channel)) }
    guard retires else {
      // The consumer took one off the ready queue: the outer may go on (mergeFlow).
      return resumeOuterIfWanted().map { .resume($0) } ?? .none
    }
    guard case .draining(let holdsTurn) = inner.stage else {
      // Its task has not reported its end yet: it leaves then (``innerEnded(_:_:failure:)``).
      running!.inners.values[index].stage = .drained
      return .none
    }
    running!.inners.remove(at: index)
    guard holdsTurn else {
      running!.drainingAfterTurn -= 1
      return finishIfDone().map { .end($0) } ?? .none
    }
    return retire(id, inner, failure: nil)
  }

  /// The consumer asks again: the batch it took last has been delivered. Called before the
  /// ``next()`` of each request; returns the outer pump to resume with `true` if that freed it.
  @inlinable mutating func batchDelivered() -> Waiter? {
    guard case .running = state, running!.logic.batchDelivered() else { return nil }
    return resumeOuterIfWanted()
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
        return stopping.drain.take().map { Ending(drop: [$0.channel]) }
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
    /// An element is held and the logic does not want it yet: wait (``pumpWait(_:)``), then ask again.
    case wait
    /// The operator is ending or the outer has ended: stop pulling.
    case stop
  }

  /// What the outer pump does next. It pulls only while no element is held, so the outer runs at
  /// most one element ahead of the slots of `mergeFlow`, and its failure or end is seen then.
  @inlinable mutating func pumpStep(channel: (Int) -> Channel) -> PumpAction {
    if case .running = state {
      guard let held = running!.held else { return running!.outerHasEnded ? .stop : .pull }
      guard running!.logic.wantsOuter else { return .wait }
      running!.held = nil
      return .startInner(makeInner(held.element, key: held.key, channel: channel))
    }
    precondition(hasEnded, "Internal inconsistency: state \(state), event pumpStep")
    return .stop
  }

  /// The pump is about to wait; registers it, or returns false if it must ask again at once.
  @inlinable mutating func pumpWait(_ waiter: Waiter) -> Bool {
    if case .running = state {
      guard running!.held != nil, !running!.logic.wantsOuter else { return false }
      precondition(running!.outerWaiting == nil, "Internal inconsistency: state running, event pumpWait twice")
      running!.outerWaiting = waiter
      return true
    }
    precondition(hasEnded, "Internal inconsistency: state \(state), event pumpWait")
    return false
  }

  @usableFromInline
  enum OuterElementAction {
    /// Dropped or held by the logic, or the operator is ending: nothing to do.
    case none
    /// It replaced the element of an inner whose task has not begun (a switch): release the
    /// replaced one after the lock. The superseded element is never transformed, and a fast outer
    /// costs no task per element.
    case release(OuterElement)
    /// Start a task for inner `id`; it begins by claiming its element (``claim(_:)``). First drop
    /// the channel it supersedes, and cancel that inner's task.
    case startInner(Int, superseding: Channel?, cancelling: Handle?)
  }

  /// The outer handed over `element`.
  @inlinable mutating func outerElement(
    _ element: OuterElement, key: Key, channel: (Int) -> Channel
  ) -> OuterElementAction {
    if case .running = state {
      switch running!.logic.outerElement(key: key) {
      case .start:
        return .startInner(makeInner(element, key: key, channel: channel), superseding: nil, cancelling: nil)
      case .supersede(let current):
        if let index = running!.inners.index(forKey: current),
          let replaced = running!.inners.values[index].replaceUnclaimed(element)
        {
          return .release(replaced)
        }
        let superseded = supersede(current)
        let id = makeInner(element, key: key, channel: channel)
        return .startInner(id, superseding: superseded?.channel, cancelling: superseded?.task)
      case .hold:
        precondition(running!.held == nil, "Internal inconsistency: state running, event outerElement with one held")
        running!.held = (element, key)
        return .none
      case .drop:
        return .none
      }
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
  /// before its channel was dropped): what the consumer takes from it is discarded.
  @inlinable mutating func listReady(_ id: Int, channel: Channel) -> Waiter? {
    if case .running = state {
      running!.ready.append((id, channel))
      // A caught-up inner offers again: the consumer is behind it again.
      running!.logic.offered(id)
      return running!.consumer.take()
    }
    precondition(hasEnded, "Internal inconsistency: state \(state), event listReady")
    return nil
  }

  /// Inner `id`'s task is ending, with `failure` if its sequence threw; `channelEnd` is what its
  /// channel answered just before. A superseded inner's end, failure included, is stale. One
  /// with nothing left to take retires at once (so its failure ends the operator, and the logic
  /// may start the next inner, whatever the consumer is doing); otherwise the consumer retires it
  /// after taking its last element.
  @inlinable mutating func innerEnded(
    _ id: Int, _ channelEnd: FlattenInnerStateMachine<some Any, Waiter>.EndAction, failure: Failure?
  ) -> InnerAction {
    if case .running = state {
      guard let index = running!.inners.index(forKey: id) else {
        preconditionFailure("Internal inconsistency: state running, event innerEnded of unknown inner \(id)")
      }
      let inner = running!.inners.values[index]
      var channelEnd = channelEnd
      // Its last element is being taken: the consumer's report retires it (see `taking`).
      if case .retire = channelEnd, running!.taking == id { channelEnd = .retireWhenDrained(needsListing: false) }
      switch (inner.stage, channelEnd) {
      case (.superseded, _):
        running!.inners.remove(at: index)
        return .none
      case (.running, .retire), (.drained, .retireWhenDrained):
        running!.inners.remove(at: index)
        return retire(id, inner, failure: failure)
      case (.running, .retireWhenDrained(let needsListing)):
        if let failure {
          // Its failure ends the operator now; the elements it offered before failing are still
          // delivered, before the failure. Its task is ending: it is not awaited.
          running!.inners.remove(at: index)
          return .end(end(failure, drain: (id, inner.channel)))
        }
        running!.inners.values[index].task = nil
        // Its elements wait: the consumer is behind it until it takes the last one.
        running!.logic.offered(id)
        let holdsTurn = running!.logic.workEnded(id, key: inner.key)
        running!.inners.values[index].stage = .draining(holdsTurn: holdsTurn)
        if !holdsTurn { running!.drainingAfterTurn += 1 }
        guard needsListing else { return .none }
        running!.ready.append((id, inner.channel))
        return running!.consumer.take().map { .resume($0) } ?? .none
      case (.running, .stale), (.drained, _), (.unclaimed, _), (.draining, _):
        preconditionFailure(
          "Internal inconsistency: state running with inner \(id) \(inner.stage), event innerEnded \(channelEnd)")
      }
    }
    updateStopping("innerEnded") { stopping, _ in _ = stopping.innerTasks.removeValue(forKey: id) }
    return .none
  }

  // MARK: Helpers

  /// Runs `body` on the payload of the `ending` or `finished` state (whose failure is `nil`),
  /// moved out of the state (`modifying` is left in its place); `event` names the event in any
  /// other state.
  @inlinable mutating func updateStopping<R>(_ event: String, _ body: (inout Stopping, inout Failure?) -> R) -> R {
    assert(running == nil, "Internal inconsistency: running data in state \(state), event \(event)")
    var taken = State.modifying
    swap(&taken, &state)
    switch taken {
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

  /// The outer pump, to resume with `true`, if it waits and the logic now wants the outer.
  @inlinable mutating func resumeOuterIfWanted() -> Waiter? {
    guard running!.outerWaiting != nil, running!.logic.wantsOuter else { return nil }
    return running!.outerWaiting.take()
  }

  /// An ended inner whose elements have all been taken leaves: it ends the operator if it failed,
  /// lets a waiting outer pump go on, or may finish the operator.
  @inlinable mutating func retire(_ id: Int, _ inner: Inner, failure: Failure?) -> InnerAction {
    running!.logic.turnEnded(id, key: inner.key)
    if let failure { return .end(end(failure)) }
    // A waiting pump holds an element: the operator cannot finish before it ran.
    if let outer = running!.outerWaiting.take() { return .resume(outer) }
    return finishIfDone().map { .end($0) } ?? .none
  }

  /// Supersedes inner `id`: returns its channel, to drop after the lock, and its task, to cancel.
  @inlinable mutating func supersede(_ id: Int) -> (channel: Channel, task: Handle?)? {
    guard let index = running!.inners.index(forKey: id) else { return nil }
    let inner = running!.inners.values[index]
    running!.logic.turnEnded(id, key: inner.key)
    if case .draining = inner.stage {
      // It has no task left to report back: it leaves now.
      running!.inners.remove(at: index)
      return (inner.channel, nil)
    }
    running!.inners.values[index].stage = .superseded
    return (inner.channel, inner.task)
  }

  @inlinable mutating func finishIfDone() -> Ending? {
    guard running!.outerHasEnded, running!.logic.isIdle, running!.held == nil, running!.drainingAfterTurn == 0 else { return nil }
    return end(nil)
  }

  /// Ends the operator: every inner is dropped and every task cancelled; the consumer ends with
  /// `failure` once they have all ended. The outer elements still in the machine leave with the
  /// action, released after the lock. (An unclaimed inner's task ends at its claim.) The running
  /// data is reset: of what is left in it, the channels and handles are held by the action or the
  /// tasks too, and only the keys and the logic go under the lock.
  @inlinable mutating func end(_ failure: Failure?, drain: (id: Int, channel: Channel)? = nil) -> Ending {
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
      case .running, .drained:
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
    running!.inners[id] = Inner(key: key, channel: channel(id), element: element)
    running!.logic.innerStarted(id, key: key)
    return id
  }

  /// How many entries the ready queue holds (for tests: it must stay bounded).
  var readyQueueLength: Int {
    running?.ready.count ?? 0
  }
}

// Synthesized here (synthesis needs the declaring file), so that the grid tests compare actions
// as plain values.
extension FlattenStateMachine.Ending: Equatable
where OuterElement: Equatable, Channel: Equatable, Waiter: Equatable, Handle: Equatable {}
extension FlattenStateMachine.InnerAction: Equatable
where OuterElement: Equatable, Channel: Equatable, Waiter: Equatable, Handle: Equatable {}
extension FlattenStateMachine.OuterElementAction: Equatable
where OuterElement: Equatable, Channel: Equatable, Handle: Equatable {}
