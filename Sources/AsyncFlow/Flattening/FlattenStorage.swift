/// Runs a ``FlattenStateMachine`` with its ``FlattenLogic``: one task pulls the outer sequence,
/// one task per inner pulls that inner on demand into its ``FlattenInnerChannel``, and the consumer
/// takes what the inners offer.
///
/// The storage is the only place that locks, and it never holds two locks at once: the shared lock
/// (the machine's) and each inner channel's lock are taken one after the other. An inner offering
/// an element with room left takes only its own channel's lock. Channels are dropped, continuations
/// resumed, tasks cancelled and elements released only after the shared lock is released.
@usableFromInline
final class FlattenStorage<
  Outer: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Logic: FlattenLogic, Failure: Error
>:
  BatchSource, Sendable
where Outer.Element: Sendable, Inner.Element: Sendable {
  @usableFromInline
  typealias Key = Logic.Key
  @usableFromInline
  typealias Channel = FlattenInnerChannel<Inner.Element, Failure>
  @usableFromInline
  typealias Machine = FlattenStateMachine<
    Logic, Outer.Element, Channel, UnsafeContinuation<Bool, Never>, Task<Void, Never>, Failure
  >

  @usableFromInline let state: LockedState<Machine>
  /// The operator: its outer sequence, policy, key, transform and failure mappings.
  @usableFromInline let operation: FlattenOperation<Outer, Inner, Key, Failure>
  /// The outer's iterator, made with this iteration (so a hot outer has its subscriber from then
  /// on), taken by the outer task.
  @usableFromInline let outer: IteratorHandOff<Outer.AsyncIterator>

  @inlinable init(_ operation: FlattenOperation<Outer, Inner, Key, Failure>, logic: Logic) {
    self.state = LockedState(Machine(logic: logic))
    self.operation = operation
    self.outer = IteratorHandOff(operation.outer.makeAsyncIterator())
  }

  @usableFromInline
  typealias Producer = UnsafeContinuation<Bool, Never>

  /// Drops `channel`, after the shared lock (the consumer discards what it took from it meanwhile:
  /// ``FlattenStateMachine/taken(_:isDrained:retires:)``): its waiting task stops, and what it held
  /// is released after its lock too, since an element's `deinit` may call back into this operator.
  @inlinable func drop(_ channel: Channel) {
    let dropped = channel.state.withLock { $0.drop() }
    dropped.producer?.resume(returning: false)
  }

  /// Carries out what the operator's end asks, after the shared lock is released.
  @inlinable func carryOut(_ ending: Machine.Ending?) {
    guard let ending else { return }
    for channel in ending.drop { drop(channel) }
    for task in ending.cancel { task.cancel() }
    ending.outer?.resume(returning: false)
    ending.consumer?.resume(returning: true)
    withExtendedLifetime(ending) {}  // and the outer elements it took out of the machine
  }

  /// Runs an event that may end the operator (``FlattenStateMachine/Ending``) and carries out its end.
  @inlinable func end(_ event: (inout Machine) -> Machine.Ending?) {
    carryOut(state.withLock(event))
  }

  // MARK: Consumer

  /// The next elements for the consumer, in order: at least one, or `nil` at the end.
  ///
  /// A take is two events of the machine with the channel's own lock between them: `next()` names
  /// the channel, the consumer takes from it, and `taken` (in the lock of the following `next()`)
  /// says whether what it took is delivered. A batching policy (``FlattenLogic/takesBatches``)
  /// takes everything an inner holds, which `next()` counts as caught up, and never supersedes:
  /// what it takes may go stale only with the end, which the consumer sees after it. So it takes from every
  /// ready inner at once, reports only the takes that retire their inner, and delivers the others
  /// at once: a request costs it one shared lock, as when the takes were made under that lock. (A
  /// report after every take cost `W4.merge` about 25 %, a request per inner `W4.mergeFlow.inputs`
  /// about 10 % with 64 and 512 inputs.)
  @inlinable func nextBatch(isolation actor: isolated (any Actor)?) async throws(Failure) -> [Inner.Element]? {
    var elements: [Inner.Element] = []
    // A superseding policy's take to report: the inner, what its channel answered, and where its
    // elements begin.
    var report: (id: Int, isDrained: Bool, retires: Bool, from: Int)?
    // A batching policy's takes that retired their inner.
    var retired: [Int] = []
    // Asking again means the last batch reached the consumer's code.
    var isNewRequest = true
    while true {
      var outer: Producer?
      var ending: Machine.Ending?
      // What was taken from an inner superseded meanwhile (or after the end): released after the lock.
      var stale: [Inner.Element] = []
      // A batching policy's takes after the first.
      var more: [(id: Int, channel: Channel)] = []
      let action = state.withLock { machine -> Machine.NextAction? in
        for id in retired {
          // Delivered whatever the answer: `discard` comes only with the end, which comes after it.
          switch machine.taken(id, isDrained: true, retires: true) {
          case .none, .discard:
            break
          case .resume(let waiter):
            outer = waiter
          case .end(let end):
            ending = end
            return nil
          }
        }
        if let report {
          switch machine.taken(report.id, isDrained: report.isDrained, retires: report.retires) {
          case .none:
            break
          case .resume(let waiter):
            outer = waiter
          case .discard:
            stale.append(contentsOf: elements[report.from...])
            elements.removeSubrange(report.from...)
          case .end(let end):
            // What was taken is delivered before the end.
            ending = end
            return nil
          }
        }
        if isNewRequest, let waiter = machine.batchDelivered() { outer = waiter }
        // A superseding policy takes one element at a time; an ending one delivers what it has first.
        guard elements.isEmpty || (Logic.takesBatches && machine.isRunning) else { return nil }
        let action = machine.next()
        if case .suspend = action, !elements.isEmpty { return nil }
        if Logic.takesBatches, case .take = action {
          while case .take(let id, let channel) = machine.next() { more.append((id, channel)) }
        }
        return action
      }
      isNewRequest = false
      report = nil
      retired.removeAll(keepingCapacity: true)
      outer?.resume(returning: true)
      withExtendedLifetime(stale) {}
      carryOut(ending)
      switch action {
      case nil:
        if !elements.isEmpty { return elements }
      case .take(let id, let channel):
        let from = elements.count
        let taken = take(from: channel, into: &elements)
        guard Logic.takesBatches else {
          report = (id, taken.isDrained, taken.retires, from)
          continue
        }
        if taken.retires { retired.append(id) }
        for entry in more where take(from: entry.channel, into: &elements).retires { retired.append(entry.id) }
        if retired.isEmpty && !elements.isEmpty { return elements }
      case .drain(let channel):
        _ = channel.state.withLock { $0.take(all: true, into: &elements) }
        if !elements.isEmpty { return elements }
      case .start:
        startOuter()
      case .suspend:
        await withTaskCancellationHandler {
          _ = await withOrderedContinuation(isolation: actor) { (continuation: Producer) in
            state.withLock { $0.suspendConsumer(continuation) }?.resume(returning: true)
          }
        } onCancel: {
          self.cancel()
        }
      case .end(let failure, let outerTask):
        // Every task the operator started has ended before the consumer sees the end. Only the
        // outer task starts inner tasks, so once it has ended the list of inners is complete.
        await outerTask?.value
        for task in state.withLock({ $0.remainingInnerTasks() }) { await task.value }
        if let failure { throw failure }
        return nil
      }
    }
  }

  /// Takes what `channel` holds (everything, for a batching policy), and wakes its task if it
  /// waited for the room this freed.
  @inlinable func take(from channel: Channel, into elements: inout [Inner.Element]) -> Channel.Machine.Taken {
    let taken = channel.state.withLock { $0.take(all: Logic.takesBatches, into: &elements) }
    taken.producer?.resume(returning: true)
    return taken
  }

  @inlinable func cancel() {
    end { $0.cancel() }
  }

  // MARK: Outer

  @inlinable func startOuter() {
    let task = FlowScheduling.startTask { await self.pumpOuter() }
    state.withLock { $0.outerStarted(task) }?.cancel()
  }

  @inlinable func pumpOuter() async {
    var iterator = outer.take()
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
            end { $0.outerEnded(nil) }
            continue
          }
          outerElement(element)
        } catch {
          iteratorEnded = true
          let failure = operation.outerFailure(error)
          end { $0.outerEnded(failure) }
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

  /// Hands an outer element to the machine: the channel it supersedes is dropped after the lock,
  /// and the element it replaced is released with `action`.
  @inlinable func outerElement(_ element: Outer.Element) {
    let key = operation.key(element)
    let action = state.withLock { $0.outerElement(element, key: key, channel: { Channel(id: $0) }) }
    guard case .startInner(let id, let superseded, let task) = action else { return }
    if let superseded { drop(superseded) }
    task?.cancel()
    startInner(id)
  }

  /// The pump's next step once the machine said `.wait`: waits while an element is held and every
  /// slot is busy, then asks again.
  @inlinable func waitForPumpStep() async -> Machine.PumpAction {
    while true {
      _ = await withOrderedContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
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

  /// The inner's task reports its end: its channel's answer, asked just before, decides.
  @inlinable func innerEnded(_ channel: Channel, failure: Failure?) {
    let channelEnd = channel.state.withLock { $0.end() }
    switch state.withLock({ $0.innerEnded(channel.id, channelEnd, failure: failure) }) {
    case .none, .discard: break
    case .resume(let waiter): waiter.resume(returning: true)
    case .end(let ending): carryOut(ending)
    }
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
        let offerAgain = await withOrderedContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
          if let answer = channel.state.withLock({ $0.waitForRoom(continuation) }) {
            continuation.resume(returning: answer)
          }
        }
        if !offerAgain { return false }
      }
    }
  }
}
