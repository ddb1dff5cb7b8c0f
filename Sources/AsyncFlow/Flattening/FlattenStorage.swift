/// Runs a ``FlattenStateMachine``: one task pulls the outer sequence, one task per inner pulls that
/// inner on demand into its ``FlattenInnerChannel``, and the consumer takes what the inners offer.
///
/// The storage is the only place that locks. Lock order: the shared lock (the machine's), then an
/// inner channel's lock, never the reverse; the shared lock is held while a channel's lock is taken
/// only to take from that channel (the consumer) and to end it (its task). An inner offering an
/// element with room left takes only its own channel's lock. Continuations are resumed, channels
/// dropped and tasks cancelled only after the shared lock is released.
@usableFromInline
final class FlattenStorage<
  Outer: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Key: Hashable & Sendable, Failure: Error
>:
  Sendable
where Outer.Element: Sendable, Inner.Element: Sendable {
  @usableFromInline
  typealias Channel = FlattenInnerChannel<Inner.Element, Failure>
  @usableFromInline
  typealias Machine = FlattenStateMachine<
    Outer.Element, Key, Channel, UnsafeContinuation<Bool, Never>, Task<Void, Never>, Failure
  >

  @usableFromInline let state: LockedState<Machine>
  /// The operator: its outer sequence, policy, key, transform and failure mappings.
  @usableFromInline let operation: FlattenSequence<Outer, Inner, Key, Failure>

  @inlinable init(_ operation: FlattenSequence<Outer, Inner, Key, Failure>) {
    self.state = LockedState(Machine(policy: operation.policy))
    self.operation = operation
  }

  /// Runs `event` under the shared lock and drops the channels it names before releasing it. What
  /// leaves the operator (the discarded elements of dropped channels, the outer elements the
  /// event let go of) is released only after the lock, when `discarded` and the effects are: an
  /// element's `deinit` may call back into this operator (cancel its consumer, release its
  /// iterator), which would deadlock on the lock.
  @inlinable func withMachine(_ event: (inout Machine) -> Machine.Effects) -> Machine.Effects {
    var discarded: RingBuffer<Inner.Element>?
    let effects = state.withLock { machine in
      var effects = event(&machine)
      dropChannels(&effects, discarding: &discarded)
      return effects
    }
    withExtendedLifetime(discarded) {}  // released here, after the lock
    return effects
  }

  /// Called under the shared lock (then each channel's: the lock order). The channels' elements go
  /// to `discarded`, for the caller to release after the lock.
  @inlinable func dropChannels(
    _ effects: inout Machine.Effects, discarding discarded: inout RingBuffer<Inner.Element>?
  ) {
    guard !effects.drop.isEmpty else { return }
    for channel in effects.drop {
      let dropped = channel.state.withLock { $0.drop() }
      if let producer = dropped.producer { effects.resume.append((producer, false)) }
      guard !dropped.discarded.isEmpty else { continue }
      if discarded == nil {
        // Moved, not copied: dropping one channel (the common case, a superseded inner) costs no
        // allocation. Optional, so that an event that drops nothing costs nothing here.
        discarded = dropped.discarded
      } else {
        for element in dropped.discarded { discarded!.append(element) }
      }
    }
    effects.drop = []
  }

  /// Carries out what an event decided, after the shared lock is released.
  @inlinable func perform(_ effects: Machine.Effects) {
    guard !effects.isEmpty else { return }
    for task in effects.cancel { task.cancel() }
    for (continuation, value) in effects.resume { continuation.resume(returning: value) }
    effects.resumeConsumer?.resume(returning: true)
  }

  // MARK: Consumer

  @usableFromInline
  enum ConsumerStep {
    case deliver([Inner.Element])
    /// Taking ended the operator: ask again, for the end.
    case again
    case next(Machine.NextAction)
  }

  /// The next elements for the consumer, in order: at least one, or `nil` at the end.
  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> [Inner.Element]? {
    while true {
      // Released after the lock (see ``withMachine(_:)``).
      var discarded: RingBuffer<Inner.Element>?
      let (step, effects) = state.withLock { machine -> (ConsumerStep, Machine.Effects) in
        var elements: [Inner.Element] = []
        // Asking again means the last batch reached the consumer's code.
        var effects = machine.batchDelivered()
        while true {
          let action = machine.next()
          if case .drain(let channel) = action {
            _ = channel.state.withLock { $0.take(all: true, into: &elements) }
            return (elements.isEmpty ? .again : .deliver(elements), effects)
          }
          guard case .take(let id, let channel, let all) = action else {
            // `.suspend` with elements taken: deliver them instead.
            return (elements.isEmpty ? .next(action) : .deliver(elements), effects)
          }
          let taken = channel.state.withLock { $0.take(all: all, into: &elements) }
          let result = machine.taken(id, channel: channel, taken)
          effects.merge(result.effects)
          dropChannels(&effects, discarding: &discarded)
          // A superseding policy takes one element at a time; an ending operator delivers what
          // was taken before its end.
          if !result.mayTakeMore || (!all && !elements.isEmpty) {
            return (elements.isEmpty ? .again : .deliver(elements), effects)
          }
        }
      }
      withExtendedLifetime(discarded) {}
      perform(effects)
      switch step {
      case .deliver(let elements):
        return elements
      case .again:
        continue
      case .next(.start):
        startOuter()
      case .next(.take), .next(.drain):
        preconditionFailure("Internal inconsistency: a take left untaken")
      case .next(.suspend):
        await withTaskCancellationHandler {
          _ = await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Bool, Never>) in
            state.withLock { $0.suspendConsumer(continuation) }?.resume(returning: true)
          }
        } onCancel: {
          self.cancel()
        }
      case .next(.end(let failure, let outerTask)):
        // Every task the operator started has ended before the consumer sees the end. Only the
        // outer task starts inner tasks, so once it has ended the list of inners is complete.
        await outerTask?.value
        for task in state.withLock({ $0.remainingInnerTasks() }) { await task.value }
        if let failure { throw failure }
        return nil
      }
    }
  }

  @inlinable func cancel() {
    perform(withMachine { $0.cancel() })
  }

  // MARK: Outer

  @inlinable func startOuter() {
    let task = FlowScheduling.startTask { await self.pumpOuter() }
    state.withLock { $0.outerStarted(task) }?.cancel()
  }

  @inlinable func pumpOuter() async {
    var iterator = operation.outer.makeAsyncIterator()
    var iteratorEnded = false
    pumping: while true {
      // Most of the time the answer is known at once: asked here, not in an async call. An async
      // call per outer element (a frame allocation and two executor checks) made the superseding
      // path of `W3.switchToLatest` ~15 % slower.
      var step = state.withLock { $0.pumpStep(channel: { Channel(id: $0) }) }
      if case .wait = step { step = await waitForPumpStep() }
      switch step {
      case .pull:
        do throws(Outer.Failure) {
          guard let element = try await iterator.next(isolation: nil) else {
            iteratorEnded = true
            perform(withMachine { $0.outerEnded(nil) })
            continue
          }
          let key = operation.key(element)
          let effects = withMachine { $0.outerElement(element, key: key, channel: { Channel(id: $0) }) }
          perform(effects)
          if let id = effects.startInner { startInner(id) }
        } catch {
          iteratorEnded = true
          let failure = operation.outerFailure(error)
          perform(withMachine { $0.outerEnded(failure) })
        }
      case .startInner(let id):
        startInner(id)
      case .wait:
        preconditionFailure("Internal inconsistency: pumpStep returned wait")
      case .stop:
        break pumping
      }
    }
    guard !iteratorEnded else { return }
    // Told to stop (the consumer left, or an inner failed) while the outer may still run. Whoever
    // ended the operator cancels this task only after releasing the lock, so it may not be
    // cancelled yet: `stopPulling` cancels it here and lets the outer end its own work first.
    await iterator.stopPulling()
  }

  /// The pump's next step once the machine said `.wait`: waits while an element is held and every
  /// slot is busy, then asks again.
  @inlinable func waitForPumpStep() async -> Machine.PumpAction {
    while true {
      _ = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
        if !state.withLock({ $0.pumpWait(continuation) }) { continuation.resume(returning: true) }
      }
      let action = state.withLock { $0.pumpStep(channel: { Channel(id: $0) }) }
      guard case .wait = action else { return action }
    }
  }

  // MARK: Inners

  @inlinable func startInner(_ id: Int) {
    let task = FlowScheduling.startTask { await self.runInner(id) }
    state.withLock { $0.innerStarted(id, task: task) }?.cancel()
  }

  @inlinable func runInner(_ id: Int) async {
    guard case (let channel, var iterator)? = await claimInner(id) else { return }
    let failure = await forward(&iterator, to: channel)
    innerEnded(channel, failure: failure)
  }

  /// Claims inner `id`'s outer element and makes its iterator; `nil` if the operator is ending.
  /// The element is claimed only now: one superseded while this task was on its way never runs.
  ///
  /// A function of its own so that the outer element and the inner sequence go when it returns:
  /// as locals of ``runInner(_:)`` they lived (in a debug build) as long as the inner ran, so an
  /// outer element the transform was done with stayed alive behind a long-lived inner (its
  /// `deinit`, say a subscription's clean-up, ran only when the inner ended).
  @inlinable func claimInner(_ id: Int) async -> (Channel, Inner.AsyncIterator)? {
    guard let (channel, element) = state.withLock({ $0.claim(id) }) else { return nil }
    let inner = await operation.transform(element)
    return (channel, inner.makeAsyncIterator())
  }

  /// The inner's loop: pulls `iterator` and hands each element over until it ends, fails (the
  /// failure, mapped) or is dropped (`nil`).
  ///
  /// Kept small, with the hand-off (``tryOffer(_:to:)``) and the rare paths out of line: the
  /// optimiser credits inlining a call in a loop less the longer the loop's body, and with the
  /// channel's lock, machine and append inlined here it left the iterator's `next` out of line
  /// (a `Flow`'s `next` costs about as much as that credit). An async call per element then cost
  /// a task allocation and two executor checks (`swift_task_switch`): `W4.merge` ran 25 % slower.
  /// A plain call to ``tryOffer(_:to:)`` per element costs far less.
  @inlinable func forward(_ iterator: inout Inner.AsyncIterator, to channel: Channel) async -> Failure? {
    do throws(Inner.Failure) {
      while let element = try await iterator.next(isolation: nil) {
        // The common case, room in the channel, costs no suspension point and no shared lock.
        if tryOffer(element, to: channel) { continue }
        guard await offer(element, to: channel) else {
          await stopDropped(&iterator)
          return nil
        }
      }
      return nil
    } catch {
      return operation.innerFailure(error)
    }
  }

  /// Dropped (superseded, or the operator is ending). Whoever dropped it cancels this task only
  /// after releasing the lock, so it may not be cancelled yet: `stopPulling` cancels it here and
  /// lets the inner end its own work before this task ends.
  ///
  /// Out of line so that ``forward(_:to:)`` stays small (see there).
  @inlinable @inline(never) func stopDropped(_ iterator: inout Inner.AsyncIterator) async {
    await iterator.stopPulling()
  }

  /// The inner's task reports its end: the channel's answer, asked under the shared lock, decides.
  @inlinable func innerEnded(_ channel: Channel, failure: Failure?) {
    let effects = withMachine { machine in
      machine.innerEnded(channel.id, channel.state.withLock { $0.end() }, failure: failure)
    }
    perform(effects)
  }

  /// Only the first element since the consumer last emptied a channel touches the shared state.
  @inlinable func listReady(_ channel: Channel) {
    state.withLock { $0.listReady(channel.id, channel: channel) }?.resume(returning: true)
  }

  /// Hands `element` over if the inner has room; `false` if it must wait or was dropped.
  ///
  /// Out of line so that ``forward(_:to:)`` stays small (see there). The margin is thin: inlined
  /// there, even with its lock's closure left out of line, it made the optimiser leave the
  /// iterator's `next` out of line again (checked in the disassembly of `W4.merge`).
  @inlinable @inline(never) func tryOffer(_ element: Inner.Element, to channel: Channel) -> Bool {
    guard case .accepted(let needsListing) = channel.state.withLock({ $0.offer(element) }) else { return false }
    if needsListing { listReady(channel) }
    return true
  }

  /// Hands `element` to the consumer, waiting while the inner already holds as many as it may;
  /// `false` once the inner was dropped.
  @inlinable func offer(_ element: Inner.Element, to channel: Channel) async -> Bool {
    while true {
      switch channel.state.withLock({ $0.offer(element) }) {
      case .accepted(let needsListing):
        if needsListing { listReady(channel) }
        return true
      case .dropped:
        return false
      case .full:
        let offerAgain = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
          if let answer = channel.state.withLock({ $0.waitForRoom(continuation) }) {
            continuation.resume(returning: answer)
          }
        }
        if !offerAgain { return false }
      }
    }
  }
}

/// The consumer's end of a flattening operator: releasing it (leaving the loop) cancels the outer
/// and every inner.
@usableFromInline
final class FlattenConsumer<
  Outer: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Key: Hashable & Sendable, Failure: Error
>
where Outer.Element: Sendable, Inner.Element: Sendable {
  @usableFromInline let storage: FlattenStorage<Outer, Inner, Key, Failure>
  /// Elements already taken from the storage in one batch, delivered from here without the lock.
  /// Emptied once used up, before the consumer waits for the next batch (``next(isolation:)``).
  @usableFromInline var taken: [Inner.Element] = []
  @usableFromInline var takenStart = 0

  @inlinable init(_ storage: FlattenStorage<Outer, Inner, Key, Failure>) {
    self.storage = storage
  }

  deinit {
    storage.cancel()
  }

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Inner.Element? {
    if takenStart < taken.count, !Task.isCancelled {
      defer { takenStart += 1 }
      return taken[takenStart]
    }
    // Used up (or the consumer is cancelled): the batch goes now, not when the next one arrives.
    // Kept while the consumer waits, it held the elements the consumer was done with for as long
    // as the inners were quiet: a `deinit` meant to run once the consumer let go of its element (a
    // subscription's clean-up, one that cancels the consumer) ran late, or never.
    releaseTaken()
    // After the release: an element's `deinit` may have cancelled this task just now.
    if Task.isCancelled { storage.cancel() }
    guard let batch = try await storage.next(isolation: actor) else { return nil }
    taken = batch
    takenStart = 1
    return batch[0]
  }

  /// Lets go of the batch, outside every lock and outside the access to ``taken``: an element's
  /// `deinit` may call back in (cancel this task, read the operator).
  @inlinable func releaseTaken() {
    guard !taken.isEmpty else { return }
    var used: [Inner.Element] = []
    swap(&used, &taken)
    takenStart = 0
    withExtendedLifetime(used) {}  // released here
  }
}

/// A flattening operator as a sequence: each iteration runs the outer anew.
@usableFromInline
struct FlattenSequence<
  Outer: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Key: Hashable & Sendable, Failure: Error
>:
  AsyncSequence, Sendable
where Outer.Element: Sendable, Inner.Element: Sendable {
  @usableFromInline
  typealias Element = Inner.Element

  @usableFromInline let policy: FlattenPolicy
  @usableFromInline let outer: Outer
  @usableFromInline let key: @Sendable (Outer.Element) -> Key
  @usableFromInline let transform: @Sendable (Outer.Element) async -> Inner
  @usableFromInline let outerFailure: @Sendable (Outer.Failure) -> Failure
  @usableFromInline let innerFailure: @Sendable (Inner.Failure) -> Failure

  @inlinable init(
    policy: FlattenPolicy, outer: Outer, key: @escaping @Sendable (Outer.Element) -> Key,
    transform: @escaping @Sendable (Outer.Element) async -> Inner,
    outerFailure: @escaping @Sendable (Outer.Failure) -> Failure,
    innerFailure: @escaping @Sendable (Inner.Failure) -> Failure
  ) {
    self.policy = policy
    self.outer = outer
    self.key = key
    self.transform = transform
    self.outerFailure = outerFailure
    self.innerFailure = innerFailure
  }

  @inlinable func makeAsyncIterator() -> Iterator {
    Iterator(consumer: FlattenConsumer(FlattenStorage(self)))
  }

  @usableFromInline
  struct Iterator: AsyncIteratorProtocol {
    @usableFromInline let consumer: FlattenConsumer<Outer, Inner, Key, Failure>

    @inlinable init(consumer: FlattenConsumer<Outer, Inner, Key, Failure>) {
      self.consumer = consumer
    }

    @inlinable mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await consumer.next(isolation: actor)
    }

    @inlinable mutating func next() async throws(Failure) -> Element? {
      try await consumer.next(isolation: nil)
    }
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// What every flattening entry point builds; the public overloads differ only in the policy and
  /// in how they map the outer's and the inner's failures to the result's.
  @inlinable func flattened<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable, F: Error>(
    _ policy: FlattenPolicy, by key: @escaping @Sendable (Element) -> Key,
    _ transform: @escaping @Sendable (Element) async -> Inner,
    outerFailure: @escaping @Sendable (Failure) -> F, innerFailure: @escaping @Sendable (Inner.Failure) -> F
  ) -> FlattenSequence<Self, Inner, Key, F> where Inner.Element: Sendable {
    FlattenSequence(
      policy: policy, outer: self, key: key, transform: transform, outerFailure: outerFailure,
      innerFailure: innerFailure)
  }

  /// ``flattened(_:by:_:outerFailure:innerFailure:)`` with one key for every element.
  @inlinable func flattened<Inner: AsyncSequence & Sendable, F: Error>(
    _ policy: FlattenPolicy, _ transform: @escaping @Sendable (Element) async -> Inner,
    outerFailure: @escaping @Sendable (Failure) -> F, innerFailure: @escaping @Sendable (Inner.Failure) -> F
  ) -> FlattenSequence<Self, Inner, FlattenSingleKey, F> where Inner.Element: Sendable {
    flattened(
      policy, by: { _ in FlattenSingleKey() }, transform, outerFailure: outerFailure, innerFailure: innerFailure)
  }
}
