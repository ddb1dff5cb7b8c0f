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
/// out the returned ``Effects`` after releasing the locks.
///
/// Generic over the channel, continuation (`Waiter`) and task (`Handle`) types so that it can be
/// tested with plain tokens.
@usableFromInline
struct FlattenStateMachine<OuterElement, Key: Hashable, Channel, Waiter, Handle, Failure: Error> {
  @usableFromInline
  enum State {
    /// Nobody has asked for an element yet: nothing runs.
    case idle
    case running(Running)
    /// Decided: the consumer ends with `failure` once every task has ended.
    case ending(failure: Failure?, Stopping)
    /// The consumer has seen the end (or left before the start).
    case finished(Stopping)
    // No `modifying` placeholder: the running payload is a class (see ``Running``), mutated in
    // place, so no event moves it out of the state.
  }

  /// The running payload is a class: Swift copies an enum's payload to look at it (a `switch`, even
  /// an `if case`, over `state` copied it in this machine's specialised code), and copying a struct
  /// of collections costs a retain and a release of each, then a copy on write of the collection
  /// mutated while the copy lives (measured: `W3.switchToLatest` three times slower than with loose
  /// properties). Through a reference the payload is mutated in place, as loose properties would
  /// be. The price: a copy of the machine would share it, so a machine is never copied (its storage
  /// holds the only one; tests build their own). Its accesses are not checked for exclusivity at
  /// run time (a measured cost per access): it is only touched under the storage's lock.
  @usableFromInline
  final class Running {
    @usableFromInline @exclusivity(unchecked) var inners: [Int: Inner] = [:]
    /// The current inner of each key, for `latest` and `exhaust`.
    @usableFromInline @exclusivity(unchecked) var currentByKey: [Key: Int] = [:]
    /// Inners that are current: not superseded, not retired.
    @usableFromInline @exclusivity(unchecked) var activeCount = 0
    /// Inners with something for the consumer (elements, or their end), in the order they got it.
    /// One may linger after its inner left: its channel is dropped then, and taking from it takes
    /// nothing. (Channels rather than ids: no lookup per hand-off.) A ``RingBuffer``: a busy
    /// inner goes to the back after each take, so the queue may never empty.
    @usableFromInline @exclusivity(unchecked) var ready = RingBuffer<(id: Int, channel: Channel)>()
    @usableFromInline @exclusivity(unchecked) var nextID = 0
    /// Inners whose turn has ended (`exhaustFlow`) while their elements wait for the consumer: the
    /// operator does not finish before they are taken.
    @usableFromInline @exclusivity(unchecked) var drainingAfterTurn = 0
    /// Inners the consumer is behind (``Inner/isBehind``): with ``batchInners``, what bounds the
    /// inners that start while the consumer does not take (``behindLimit``).
    @usableFromInline @exclusivity(unchecked) var behindCount = 0
    /// Inners whose elements the consumer took into the batch it has not delivered yet: they are
    /// still behind the consumer's code, so they count toward ``behindLimit`` until it asks again.
    @usableFromInline @exclusivity(unchecked) var batchInners = 0
    @usableFromInline @exclusivity(unchecked) var outerHasEnded = false
    @usableFromInline @exclusivity(unchecked) var outerTask: Handle?
    /// An outer element pulled while every slot of `mergeFlow` was busy: it starts when one frees.
    /// The outer is pulled one element ahead, so that its failure or end is seen while the inners
    /// run, and no further: at most one element waits here.
    @usableFromInline @exclusivity(unchecked) var held: (element: OuterElement, key: Key)?
    /// The outer pump, waiting for a slot while an element is held (resumed to ask again).
    @usableFromInline @exclusivity(unchecked) var outerWaiting: Waiter?
    @usableFromInline @exclusivity(unchecked) var consumer: Waiter?

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

  @usableFromInline let policy: FlattenPolicy
  @usableFromInline var state = State.idle

  /// The state without its payload: events switch over this, and bind a payload only where they use it.
  @usableFromInline
  enum Phase {
    case idle, running, ending, finished
  }

  @inlinable var phase: Phase {
    switch state {
    case .idle: .idle
    case .running: .running
    case .ending: .ending
    case .finished: .finished
    }
  }

  @inlinable init(policy: FlattenPolicy) {
    self.policy = policy
  }

  /// What the storage must do after an event, outside the locks.
  @usableFromInline
  struct Effects {
    /// Inner tasks and the outer pump waiting on a continuation, with the answer to resume them with.
    @usableFromInline var resume: [(Waiter, Bool)] = []
    @usableFromInline var resumeConsumer: Waiter?
    /// Channels to drop (under their own lock) BEFORE the shared lock is released: their elements
    /// are discarded and a waiting task stops, and the consumer (which takes under the shared lock)
    /// can never take from a superseded inner once its successor is registered.
    @usableFromInline var drop: [Channel] = []
    @usableFromInline var cancel: [Handle] = []
    /// Start a task for this inner; it begins by claiming its element (``claim(_:)``).
    @usableFromInline var startInner: Int?
    /// Outer elements that left the machine without being transformed (held, or not begun, when
    /// the operator ended): released with the effects, after the lock, since a `deinit` may call
    /// back into the operator.
    /// Optional, so that the common case (none) costs a word and no retain in every event's effects.
    @usableFromInline var release: [OuterElement]?
    /// The same for the one element `switchToLatestFlow` replaces in an inner that has not begun:
    /// on its own, so that the common path of a fast outer allocates no array per element
    /// (measured: `W3.switchToLatest` 30 % slower with an array).
    @usableFromInline var replaced: OuterElement?

    @inlinable init() {}

    @inlinable var isEmpty: Bool {
      resume.isEmpty && resumeConsumer == nil && drop.isEmpty && cancel.isEmpty && startInner == nil
        && release == nil && replaced == nil
    }

    @inlinable mutating func merge(_ other: Effects) {
      // Most events have nothing to do: merging nothing must cost nothing (the consumer merges
      // once per inner it takes from).
      guard !other.isEmpty else { return }
      resume += other.resume
      precondition(
        resumeConsumer == nil || other.resumeConsumer == nil, "Internal inconsistency: the consumer resumed twice")
      resumeConsumer = resumeConsumer ?? other.resumeConsumer
      drop += other.drop
      cancel += other.cancel
      if let otherRelease = other.release { release = (release ?? []) + otherRelease }
      if let otherReplaced = other.replaced {
        if replaced == nil { replaced = otherReplaced } else { release = (release ?? []) + [otherReplaced] }
      }
      precondition(startInner == nil || other.startInner == nil, "Internal inconsistency: two inners to start")
      startInner = startInner ?? other.startInner
    }
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
    /// Take from this inner's channel (everything, if `all`), then report ``taken(_:_:)``.
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
    case .idle:
      state = .running(Running())
      return .start
    case .running(let running):
      if let entry = running.ready.popFirst() {
        return .take(id: entry.id, channel: entry.channel, all: takesBatches)
      }
      return .suspend
    case .ending:
      guard case .ending(let failure, var stopping) = state else { preconditionFailure("unreachable") }
      if let drain = stopping.drain {
        stopping.drain = nil
        state = .ending(failure: failure, stopping)
        return .drain(drain)
      }
      state = .finished(stopping)
      return .end(failure: failure, outerTask: stopping.outerTask)
    case .finished:
      return .end(failure: nil, outerTask: nil)
    }
  }

  @usableFromInline
  struct TakenAction {
    @usableFromInline var effects: Effects
    /// Whether the consumer may go on taking from other inners (``next()``): false once the
    /// operator is ending, so that what was taken is delivered before the end.
    @usableFromInline var mayTakeMore: Bool

    @inlinable init(effects: Effects = Effects(), mayTakeMore: Bool) {
      self.effects = effects
      self.mayTakeMore = mayTakeMore
    }
  }

  /// The storage took from inner `id`'s channel as ``next()`` asked, still under the shared lock.
  @inlinable mutating func taken(
    _ id: Int, channel: Channel, _ taken: FlattenInnerStateMachine<some Any, Waiter>.Taken
  ) -> TakenAction {
    switch state {
    case .running(let running):
      var effects = Effects()
      if let producer = taken.producer { effects.resume.append((producer, true)) }
      // One that still has elements goes to the back, behind the others: a busy inner cannot
      // starve the other keys of a keyed `switchToLatestFlow`.
      if !taken.isDrained {
        running.ready.append((id, channel))
      } else if tracksBehind, let index = running.inners.index(forKey: id), running.inners.values[index].isBehind {
        // Caught up with (a superseded inner is not behind: it gave nothing). What was taken is
        // in the consumer's batch until it asks again (``batchDelivered()``).
        running.inners.values[index].isBehind = false
        running.behindCount -= 1
        if takesBatches { running.batchInners += 1 }
      }
      // The consumer took one off the ready queue: the outer may go on (mergeFlow).
      if running.outerWaiting != nil, !taken.retires, outerWanted(running), let outer = running.outerWaiting.take() {
        effects.resume.append((outer, true))
      }
      guard taken.retires else {
        return TakenAction(effects: effects, mayTakeMore: true)
      }
      guard let inner = running.inners.removeValue(forKey: id), case .draining(let holdsTurn) = inner.stage else {
        preconditionFailure(
          "Internal inconsistency: state running, event taken retiring inner \(id) that is not draining")
      }
      if holdsTurn {
        effects.merge(retire(inner, failure: nil, from: running))
      } else {
        running.drainingAfterTurn -= 1
        effects.merge(finishIfDone(running))
      }
      return TakenAction(effects: effects, mayTakeMore: isRunning)
    case .idle, .ending, .finished:
      preconditionFailure("Internal inconsistency: state \(state), event taken")
    }
  }

  /// The consumer asks again: the batch it took last has been delivered, so the inners it came
  /// from no longer count toward ``behindLimit``. Called before the ``next()`` of each request.
  @inlinable mutating func batchDelivered() -> Effects {
    // `switchToLatestFlow` counts no batch: nothing to look at (it asks once per element).
    guard tracksBehind, case .running(let running) = state, running.batchInners > 0 else { return Effects() }
    running.batchInners = 0
    var effects = Effects()
    if running.outerWaiting != nil, outerWanted(running), let outer = running.outerWaiting.take() {
      effects.resume.append((outer, true))
    }
    return effects
  }

  /// Registers the waiting consumer, or returns it to be resumed at once.
  @inlinable mutating func suspendConsumer(_ consumer: Waiter) -> Waiter? {
    switch state {
    case .running(let running):
      // Something may have been listed between `next()` and this registration.
      guard running.ready.isEmpty else { return consumer }
      precondition(running.consumer == nil, "Internal inconsistency: state running, event suspendConsumer twice")
      running.consumer = consumer
      return nil
    case .ending, .finished:
      return consumer
    case .idle:
      preconditionFailure("Internal inconsistency: state \(state), event suspendConsumer")
    }
  }

  /// The consumer's task was cancelled or its iterator released.
  @inlinable mutating func cancel() -> Effects {
    switch state {
    case .idle:
      state = .finished(Stopping())
      return Effects()
    case .running(let running):
      return end(nil, from: running)
    case .ending:
      // A cancelled consumer finishes without a failure, and takes no element afterwards.
      guard case .ending(_, var stopping) = state else { preconditionFailure("unreachable") }
      var effects = Effects()
      if let drain = stopping.drain.take() { effects.drop.append(drain) }
      state = .ending(failure: nil, stopping)
      return effects
    case .finished:
      return Effects()
    }
  }

  /// The inner tasks still running, once the outer task has ended (it starts no more of them).
  @inlinable func remainingInnerTasks() -> [Handle] {
    switch phase {
    case .finished:
      guard case .finished(let stopping) = state else { preconditionFailure("unreachable") }
      return stopping.innerTasks.values.compactMap { $0 }
    case .idle, .running, .ending:
      preconditionFailure("Internal inconsistency: state \(state), event remainingInnerTasks")
    }
  }

  // MARK: Outer

  /// The outer task exists; returns it if the operator is ending already, so that it is cancelled.
  @inlinable mutating func outerStarted(_ task: Handle) -> Handle? {
    switch state {
    case .running(let running):
      running.outerTask = task
      return nil
    case .ending:
      guard case .ending(let failure, var stopping) = state else { preconditionFailure("unreachable") }
      stopping.outerTask = task
      state = .ending(failure: failure, stopping)
      return task
    case .idle, .finished:
      // The consumer starts the outer task right after `next()` returned `.start`: it cannot
      // have seen the end in between.
      preconditionFailure("Internal inconsistency: state \(state), event outerStarted")
    }
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
    switch state {
    case .running(let running):
      if let held = running.held {
        guard outerWanted(running) else { return .wait }
        running.held = nil
        return .startInner(makeInner(held.element, key: held.key, channel: channel, in: running))
      }
      return running.outerHasEnded ? .stop : .pull
    case .ending, .finished:
      return .stop
    case .idle:
      preconditionFailure("Internal inconsistency: state \(state), event pumpStep")
    }
  }

  /// The pump is about to wait; registers it, or returns false if it must ask again at once.
  @inlinable mutating func pumpWait(_ waiter: Waiter) -> Bool {
    switch state {
    case .running(let running):
      guard running.held != nil, !outerWanted(running) else { return false }
      precondition(running.outerWaiting == nil, "Internal inconsistency: state running, event pumpWait twice")
      running.outerWaiting = waiter
      return true
    case .ending, .finished:
      return false
    case .idle:
      preconditionFailure("Internal inconsistency: state \(state), event pumpWait")
    }
  }

  @inlinable func makeInner(
    _ element: OuterElement, key: Key, channel: (Int) -> Channel, in running: Running
  ) -> Int {
    let id = running.nextID
    running.nextID += 1
    var inner = Inner(key: key, channel: channel(id), element: element)
    if tracksBehind {
      inner.isBehind = true
      running.behindCount += 1
    }
    running.inners[id] = inner
    running.activeCount += 1
    if !isMerge { running.currentByKey[key] = id }
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
  @inlinable func outerWanted(_ running: Running) -> Bool {
    switch policy {
    case .merge(let maxConcurrent):
      return running.activeCount < maxConcurrent && running.behindCount + running.batchInners < behindLimit
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

  /// The outer handed over `element`. Its inner starts (``Effects/startInner``), replaces the
  /// element of an inner whose task has not begun (`latest`), or the element is dropped (`exhaust`
  /// while an inner runs, or the operator is ending).
  @inlinable mutating func outerElement(_ element: OuterElement, key: Key, channel: (Int) -> Channel) -> Effects {
    switch state {
    case .running(let running):
      var effects = Effects()
      if policy == .exhaust && running.behindCount + running.batchInners >= behindLimit {
        // Dropped as while an inner runs: the consumer is that many ended inners behind (or holds
        // their elements in its batch), which bounds what `exhaustFlow` holds however fast the outer.
        return effects
      }
      if !isMerge, let current = running.currentByKey[key] {
        switch policy {
        case .exhaust:
          return effects  // dropped: the current inner's work runs
        case .latest:
          // Its task has not begun: it begins with this element instead. The superseded element is
          // never transformed, and a fast outer costs no task per element.
          if let index = running.inners.index(forKey: current),
            let replaced = running.inners.values[index].replaceUnclaimed(element)
          {
            effects.replaced = replaced
            return effects
          }
          supersede(current, in: running, into: &effects)
        case .merge:
          break
        }
      }
      guard outerWanted(running) else {
        precondition(running.held == nil, "Internal inconsistency: state running, event outerElement with one held")
        running.held = (element, key)
        return effects
      }
      effects.startInner = makeInner(element, key: key, channel: channel, in: running)
      return effects
    case .ending, .finished:
      return Effects()
    case .idle:
      preconditionFailure("Internal inconsistency: state \(state), event outerElement")
    }
  }

  /// The outer finished (`failure == nil`) or threw.
  @inlinable mutating func outerEnded(_ failure: Failure?) -> Effects {
    switch state {
    case .running(let running):
      precondition(!running.outerHasEnded, "Internal inconsistency: state running, event outerEnded twice")
      if let failure { return end(failure, from: running) }
      running.outerHasEnded = true
      return finishIfDone(running)
    case .ending, .finished:
      return Effects()
    case .idle:
      preconditionFailure("Internal inconsistency: state \(state), event outerEnded")
    }
  }

  // MARK: Inners

  /// The outer task registers the task it started for inner `id`; returns it if that inner is no
  /// longer wanted, so that it is cancelled.
  @inlinable mutating func innerStarted(_ id: Int, task: Handle) -> Handle? {
    switch state {
    case .running(let running):
      // The task may have ended already (then its inner is gone).
      guard let index = running.inners.index(forKey: id) else { return nil }
      running.inners.values[index].task = task
      if case .superseded = running.inners.values[index].stage { return task }
      return nil
    case .ending:
      guard case .ending(let failure, var stopping) = state else { preconditionFailure("unreachable") }
      guard stopping.innerTasks[id] != nil else { return nil }
      stopping.innerTasks[id] = task
      state = .ending(failure: failure, stopping)
      return task
    case .finished:
      guard case .finished(var stopping) = state else { preconditionFailure("unreachable") }
      guard stopping.innerTasks[id] != nil else { return nil }
      stopping.innerTasks[id] = task
      state = .finished(stopping)
      return task
    case .idle:
      preconditionFailure("Internal inconsistency: state \(state), event innerStarted")
    }
  }

  /// An inner's task begins: the element to transform and the channel to offer into, or `nil`
  /// if the operator is ending (the task then ends at once, without reporting its end).
  @inlinable mutating func claim(_ id: Int) -> (channel: Channel, element: OuterElement)? {
    switch state {
    case .running(let running):
      // An inner is superseded or retired only once its task claimed its element.
      guard let index = running.inners.index(forKey: id),
        case .unclaimed(let element) = running.inners.values[index].stage
      else {
        preconditionFailure("Internal inconsistency: state running, event claim of inner \(id) that is not unclaimed")
      }
      // Through the index: one hash lookup per event on the path every outer element may take.
      running.inners.values[index].stage = .running
      return (running.inners.values[index].channel, element)
    case .ending:
      guard case .ending(let failure, var stopping) = state else { preconditionFailure("unreachable") }
      stopping.innerTasks.removeValue(forKey: id)
      state = .ending(failure: failure, stopping)
      return nil
    case .finished:
      guard case .finished(var stopping) = state else { preconditionFailure("unreachable") }
      stopping.innerTasks.removeValue(forKey: id)
      state = .finished(stopping)
      return nil
    case .idle:
      preconditionFailure("Internal inconsistency: state \(state), event claim")
    }
  }

  /// Inner `id` got its first element since the consumer last emptied it: list it as ready, and
  /// return the consumer to resume if it waits. A superseded inner may list itself (it offered
  /// just before its channel was dropped): its channel is dropped, so nothing is taken from it.
  @inlinable mutating func listReady(_ id: Int, channel: Channel) -> Waiter? {
    switch state {
    case .running(let running):
      running.ready.append((id, channel))
      // A caught-up inner offers again: the consumer is behind it again. (A superseded one is
      // not counted: what it offered is dropped.)
      if tracksBehind, let index = running.inners.index(forKey: id), !running.inners.values[index].isBehind,
        case .running = running.inners.values[index].stage
      {
        running.inners.values[index].isBehind = true
        running.behindCount += 1
      }
      return running.consumer.take()
    case .ending, .finished:
      return nil
    case .idle:
      preconditionFailure("Internal inconsistency: state \(state), event listReady")
    }
  }

  /// Inner `id`'s task is ending, with `failure` if its sequence threw; `end` is what its channel
  /// answered (the storage asks it under this lock). A superseded inner's end, failure included,
  /// is stale. One with nothing left to take retires at once (so its failure ends the operator,
  /// and `exhaustFlow` and `mergeFlow` may start the next inner, whatever the consumer is doing);
  /// otherwise the consumer retires it after taking its last element.
  @inlinable mutating func innerEnded(
    _ id: Int, _ end: FlattenInnerStateMachine<some Any, Waiter>.EndAction, failure: Failure?
  ) -> Effects {
    switch state {
    case .running(let running):
      guard let index = running.inners.index(forKey: id) else {
        preconditionFailure("Internal inconsistency: state running, event innerEnded of unknown inner \(id)")
      }
      let inner = running.inners.values[index]
      switch (inner.stage, end) {
      case (.superseded, _):
        running.inners.remove(at: index)
        return Effects()
      case (.running, .retire):
        running.inners.remove(at: index)
        if inner.isBehind { running.behindCount -= 1 }
        return retire(inner, failure: failure, from: running)
      case (.running, .retireWhenDrained(let needsListing)):
        if let failure {
          // Its failure ends the operator now; the elements it offered before failing are still
          // delivered, before the failure. Its task is ending: it is not awaited.
          running.inners.removeValue(forKey: id)
          return self.end(failure, from: running, drain: inner.channel)
        }
        running.inners[id]?.task = nil
        // Its elements wait: the consumer is behind it until it takes the last one (its offer
        // counted it already; `take` of `switchToLatestFlow` may have left some behind).
        if tracksBehind && !inner.isBehind {
          running.inners[id]?.isBehind = true
          running.behindCount += 1
        }
        // `exhaustFlow`: its turn ends with its work, so the next outer element starts an inner even
        // while the consumer has not taken these elements (they are still taken first).
        let holdsTurn = policy != .exhaust
        running.inners[id]?.stage = .draining(holdsTurn: holdsTurn)
        if !holdsTurn {
          running.activeCount -= 1
          running.currentByKey.removeValue(forKey: inner.key)
          running.drainingAfterTurn += 1
        }
        var effects = Effects()
        if needsListing {
          running.ready.append((id, inner.channel))
          effects.resumeConsumer = running.consumer.take()
        }
        return effects
      case (.running, .stale), (.unclaimed, _), (.draining, _):
        preconditionFailure(
          "Internal inconsistency: state running with inner \(id) \(inner.stage), event innerEnded \(end)")
      }
    case .ending:
      guard case .ending(let failure, var stopping) = state else { preconditionFailure("unreachable") }
      stopping.innerTasks.removeValue(forKey: id)
      state = .ending(failure: failure, stopping)
      return Effects()
    case .finished:
      guard case .finished(var stopping) = state else { preconditionFailure("unreachable") }
      stopping.innerTasks.removeValue(forKey: id)
      state = .finished(stopping)
      return Effects()
    case .idle:
      preconditionFailure("Internal inconsistency: state \(state), event innerEnded")
    }
  }

  // MARK: Helpers

  @inlinable @inline(__always) func runningPayload() -> Running {
    guard case .running(let running) = state else {
      preconditionFailure("Internal inconsistency: state \(state) is not running")
    }
    return running
  }

  @inlinable var isRunning: Bool {
    if case .running = state { return true }
    return false
  }

  /// An ended inner whose elements have all been taken leaves: it ends the operator if it failed,
  /// lets the outer pull again (merge), and may finish the operator.
  @inlinable mutating func retire(_ inner: Inner, failure: Failure?, from running: Running) -> Effects {
    running.activeCount -= 1
    if !isMerge { running.currentByKey.removeValue(forKey: inner.key) }
    if let failure { return end(failure, from: running) }
    var effects = Effects()
    if let outer = running.outerWaiting.take() { effects.resume.append((outer, true)) }
    effects.merge(finishIfDone(running))
    return effects
  }

  @inlinable mutating func supersede(_ id: Int, in running: Running, into effects: inout Effects) {
    guard let index = running.inners.index(forKey: id) else { return }
    let inner = running.inners.values[index]
    effects.drop.append(inner.channel)
    // What it offered is dropped: the consumer is no longer behind it.
    if inner.isBehind { running.behindCount -= 1 }
    if case .draining = inner.stage {
      // It has no task left to report back: it leaves now.
      running.inners.remove(at: index)
    } else {
      running.inners.values[index].stage = .superseded
      running.inners.values[index].isBehind = false
      if let task = inner.task { effects.cancel.append(task) }
    }
    running.activeCount -= 1
    running.currentByKey.removeValue(forKey: inner.key)
  }

  @inlinable mutating func finishIfDone(_ running: Running) -> Effects {
    guard running.outerHasEnded, running.activeCount == 0, running.held == nil, running.drainingAfterTurn == 0 else {
      return Effects()
    }
    return end(nil, from: running)
  }

  /// Ends the operator: every inner is dropped and every task cancelled; the consumer ends with
  /// `failure` once they have all ended.
  @inlinable mutating func end(_ failure: Failure?, from running: Running, drain: Channel? = nil) -> Effects {
    var effects = Effects()
    var stopping = Stopping(outerTask: running.outerTask)
    stopping.drain = drain
    for (id, inner) in running.inners {
      if case .draining = inner.stage {
        effects.drop.append(inner.channel)
        continue
      }
      // Unclaimed, running or superseded: its task will report back (claim or innerEnded).
      if case .superseded = inner.stage {} else { effects.drop.append(inner.channel) }
      stopping.innerTasks[id] = inner.task
      if let task = inner.task { effects.cancel.append(task) }
    }
    // The outer elements still in the machine leave with the effects: released after the lock,
    // not with the running payload under it. (An unclaimed inner's task ends at its claim.)
    var release: [OuterElement] = []
    if let held = running.held.take() { release.append(held.element) }
    for index in running.inners.indices {
      if case .unclaimed(let element) = running.inners.values[index].stage {
        release.append(element)
        running.inners.values[index].stage = .running
      }
    }
    if !release.isEmpty { effects.release = release }
    if let outer = running.outerWaiting.take() { effects.resume.append((outer, false)) }
    if let outerTask = running.outerTask { effects.cancel.append(outerTask) }
    effects.resumeConsumer = running.consumer.take()
    state = .ending(failure: failure, stopping)
    return effects
  }

  /// How many entries the ready queue holds (for tests: it must stay bounded).
  var readyQueueLength: Int {
    guard case .running(let running) = state else { return 0 }
    return running.ready.count
  }
}
