/// Owns the lock around a ``SubjectStateMachine`` and carries out its actions after the lock.
@usableFromInline
final class SubjectStorage<Element: Sendable, Failure: Error>: Sendable {
  @usableFromInline typealias Machine = SubjectStateMachine<
    Element, Failure, UnsafeContinuation<Void, Never>, Task<Void, Never>, SubjectMailbox<Element, Failure>
  >
  @usableFromInline let state: LockedState<Machine>
  /// For `shareFlow`: makes an iteration of the upstream where it is started (so that a hot
  /// upstream has the share as subscriber from then on), and returns the body of its task, feeding
  /// this storage as the generation it is run with (`iterateUpstream`).
  let upstream: (@Sendable () -> ErasedPull<SubjectStorage>)?
  /// For `shareFlow(gracePeriod:)`: the clock the grace timer sleeps on, and for how long.
  let grace: (clock: AnyFlowClock, period: Duration)?
  /// The buffering policy's drop handler, called after the lock (`FlowBufferingPolicy.onDrop`).
  @usableFromInline let onDrop: (@Sendable (Int) -> Void)?
  /// The owner that ends this source when it closes and awaits its tasks (see ``FlowOwner``).
  @usableFromInline let owner: FlowOwner?

  init(
    _ machine: Machine, grace: (clock: AnyFlowClock, period: Duration)? = nil, owner: FlowOwner? = nil,
    upstream: (@Sendable () -> ErasedPull<SubjectStorage>)? = nil
  ) {
    self.onDrop = machine.policy.dropHandler
    self.state = LockedState(machine)
    self.upstream = upstream
    self.grace = grace
    self.owner = owner
    owner?.adopt(self)
  }

  deinit {
    owner?.forget(self)
  }

  var subscriberCount: Int { state.withLock { $0.subscriberCount } }

  /// The watchers sit in the machine's table, so that `subscribe` resumes them.
  func subscribers(count: Int) async {
    await state.waitUntil(count: count, of: \.subscriberCount, watchers: \.subscribers.watchers)
  }

  @inlinable
  func send(_ element: Element) {
    if let owner { return send(element, owner: owner) }
    perform(state.withLock { $0.send(element) })
  }

  /// `send` under a ticket of the owner's, so that the delivery it starts is awaited by a shutdown
  /// racing it; refused, the owner is closed and the subject ends: the element is dropped, as
  /// after `finish()`.
  @usableFromInline
  func send(_ element: Element, owner: FlowOwner) {
    guard owner.admit(.call) else { return }
    perform(state.withLock { $0.send(element) })
    owner.release(.call)
  }

  func end(failure: Failure?) {
    withTicket { perform(state.withLock { $0.end(failure: failure) }) }
  }

  /// Runs `body`, which may start deliveries, under a ticket of the owner's if it has one (see
  /// `FlowOwnerStateMachine`). Refused (the owner closed), `body` runs anyway: the source is
  /// ended by then, or is about to be, and what it starts is a newcomer's end.
  func withTicket(_ body: () -> Void) {
    let ticket = owner?.admit(.call) ?? false
    body()
    if ticket { owner?.release(.call) }
  }

  /// Carries out `action` after the lock; its released elements go with it, here.
  @inlinable
  func perform(_ action: Machine.SendAction) {
    for consumer in action.resume { consumer.resume() }
    for drain in action.startDrains { startDrain(drain.mailbox, id: drain.id) }
    action.cancelGraceTimer?.cancel()
    if action.dropped != 0, let onDrop { onDrop(action.dropped) }
  }

  /// What the buffering policy has dropped of iterator `id`'s elements so far.
  func dropped(_ id: Int) -> Int {
    state.withLock { $0.dropped(id) }
  }

  /// What the buffering policy has dropped of `mailbox`'s elements so far.
  func dropped(_ mailbox: SubjectMailbox<Element, Failure>) -> Int {
    state.withLock { $0.dropped(mailbox) }
  }

  /// The subscription of `mailbox` is released: its drop count is no longer read.
  func forgetDrops(_ mailbox: SubjectMailbox<Element, Failure>) {
    // The mailbox the table let go of is released here, after the lock.
    _ = state.withLock { $0.forgetDrops(mailbox) }
  }

  func perform(_ action: Machine.SubscribeAction) {
    action.cancelGraceTimer?.cancel()
    for watcher in action.resumeWatchers { watcher.resume() }
    if let generation = action.startUpstream { startUpstream(generation: generation) }
    if let drain = action.startDrain { startDrain(drain.mailbox, id: drain.id) }
  }

  func perform(_ action: Machine.UnsubscribeAction) {
    action.resumeConsumer?.resume()
    action.cancelUpstream?.cancel()
    action.cancelDrain?.cancel()
    if let timer = action.startGraceTimer { requestGraceTimer(timer) }
  }

  // MARK: Push subscribers (sink, assignFlow)

  /// Registers `mailbox`: from now on every element is buffered for it, and drained on its
  /// receiver's isolation.
  @usableFromInline
  func subscribe(_ mailbox: SubjectMailbox<Element, Failure>) {
    withTicket { perform(state.withLock { $0.subscribe(mailbox) }) }
  }

  @usableFromInline
  func unsubscribe(_ mailbox: SubjectMailbox<Element, Failure>) {
    perform(state.withLock { $0.unsubscribe(mailbox) })
  }

  /// The one drain job of a mailbox that has something to take: it ends when the machine finds
  /// the mailbox empty, so an idle subscriber holds no task. Its task is reported to the machine
  /// (`drainStarted`), so that the subscriber leaving cancels it.
  ///
  /// Inlinable, so that the drain `send` starts (`send` is inlinable) is specialized for the
  /// element type where `send` is. Unspecialized, each `take` ran generic code under the lock
  /// (metadata lookups, the mailbox table's hashing through witness tables) while `send` waited on
  /// it, spinning, then sleeping on the futex and woken by the drain's unlock: perf on `W2.sink1`
  /// on a quiet machine showed a quarter of the time in futex waits and wake-ups, and the row took
  /// 1.5 times `W2.passthrough1`.
  @inlinable
  func startDrain(_ mailbox: SubjectMailbox<Element, Failure>, id: Int) {
    guard let owner else {
      let task = FlowScheduling.startTask { await mailbox.drain() }
      state.withLock { $0.drainStarted(mailbox, id: id, task: task) }?.cancel()
      return
    }
    // Under the ticket of the call or task that decided it, never refused: a drain delivers an
    // end too. A shutdown returns once the drain has come to its last step.
    owner.retain(.delivery)
    let task = FlowScheduling.startTask {
      await mailbox.drain()
      owner.release(.delivery)
    }
    state.withLock { $0.drainStarted(mailbox, id: id, task: task) }?.cancel()
  }

  /// The drain of `mailbox` has delivered the end: leaving no longer cancels it.
  @usableFromInline
  func endDelivered(_ mailbox: SubjectMailbox<Element, Failure>) {
    // The mailbox the machine let go of is released here, after the lock.
    _ = state.withLock { $0.endDelivered(mailbox) }
  }

  /// `batch` must be empty: the drain has taken (and so released) each element it delivered.
  @inlinable
  func take(
    _ mailbox: SubjectMailbox<Element, Failure>, swapping batch: inout RingBuffer<Element>
  ) -> Machine.DrainAction {
    state.withLock { $0.take(mailbox, swapping: &batch) }
  }

  // Inlinable, so specialized in the subscriber's refill: synchronous, they add nothing to the
  // frame a parked subscriber holds (nothing of theirs lives across its suspension).

  @inlinable
  func take(_ id: Int, swapping batch: inout RingBuffer<Element>) -> Machine.NextAction {
    state.withLock { $0.next(id, swapping: &batch) }
  }

  @inlinable
  func suspend(_ id: Int, _ continuation: UnsafeContinuation<Void, Never>) {
    state.withLock { $0.suspend(id, continuation) }?.resume()
  }

  @usableFromInline
  func unsubscribe(_ id: Int) {
    perform(state.withLock { $0.unsubscribe(id) })
  }

  /// The iterator `id` is released: it leaves if it has not, and its drop count goes.
  func release(_ id: Int) {
    perform(
      state.withLock {
        let action = $0.unsubscribe(id)
        $0.forgetDrops(id)
        return action
      })
  }
}

extension SubjectStorage: FlowOwnedMember {
  /// The source ends: a subject as by `finish()`; a share's upstream is cancelled and its
  /// subscribers get what was buffered, then the end. A later subscriber finishes at once.
  func ownerClosed() {
    let (action, upstream) = state.withLock { $0.close() }
    upstream?.cancel()
    perform(action)
  }

  /// Closed already: the deliveries of the end run on, and the owner awaits them.
  func ownerShutdown() {}
}

/// One subscriber's end of a hot source: it is registered when made, serves its batch without
/// locking, and unsubscribes when released.
///
/// Each element is moved out of the batch as it is returned, so a refill hands the machine an
/// empty batch and releases nothing under the lock (the consumer lets go of the element, wherever
/// its `deinit` may call).
@usableFromInline
final class SubjectSubscriber<Element: Sendable, Failure: Error> {
  @usableFromInline let storage: SubjectStorage<Element, Failure>
  @usableFromInline let id: Int
  // Only the subscriber's one consumer touches these, one call at a time (an iterator is not
  // shared), so their accesses are not checked at run time: checked, each access in `refill` kept
  // a 24-byte scratch in its frame, which a parked subscriber's task holds. With 8 bytes more in
  // the machine's subscriber entry (its drop count), the frames of a subscriber parked in a share
  // went past the task allocator's first slab, and each took 1,036 bytes more (`W9.feedSubscriber`
  // 1,610 to 2,645 bytes; unchecked, 1,617, and `refill`'s frame 224 bytes instead of 320).
  @exclusivity(unchecked) @usableFromInline var batch = RingBuffer<Element>()
  @exclusivity(unchecked) @usableFromInline var isSubscribed = true

  init(_ storage: SubjectStorage<Element, Failure>) {
    self.storage = storage
    let action = storage.state.withLock { $0.subscribe() }
    id = action.id
    storage.perform(action)
  }

  deinit {
    storage.release(id)
  }

  /// What the buffering policy has dropped of this subscriber's elements, after its end too.
  var droppedCount: Int { storage.dropped(id) }

  /// Serves the current batch inline in the consumer (specialized there); refills out of line.
  @inlinable
  func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    // `popFirst` last, and alone: one access to `batch` per element, not a read then a modify.
    if isSubscribed, !Task.isCancelled, let element = batch.popFirst() {
      return element
    }
    return try await refill(isolation: actor)
  }

  @inlinable
  func refill(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    guard isSubscribed else { return nil }
    if Task.isCancelled { return leave() }
    while true {
      let storage = self.storage
      let id = self.id
      switch storage.take(id, swapping: &batch) {
      case .deliver:
        return batch.popFirst()
      case .startUpstream(let generation):
        storage.startUpstream(generation: generation)
      case .suspend:
        await withTaskCancellationHandler {
          await withOrderedContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
            storage.suspend(id, continuation)
          }
        } onCancel: {
          storage.unsubscribe(id)
        }
        if Task.isCancelled { return leave() }
      case .end(let failure):
        isSubscribed = false
        if let failure { throw failure }
        return nil
      }
    }
  }

  @usableFromInline
  func leave() -> Element? {
    isSubscribed = false
    batch = RingBuffer()  // outside the lock
    storage.unsubscribe(id)
    return nil
  }
}
