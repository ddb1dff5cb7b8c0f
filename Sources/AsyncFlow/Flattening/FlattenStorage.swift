/// Runs a ``FlattenStateMachine``: one task pulls the outer sequence, one task per inner pulls that
/// inner on demand, and the consumer takes what the inners offer. Continuations are resumed and
/// tasks cancelled only after the lock is released.
@usableFromInline
final class FlattenStorage<
  Outer: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Key: Hashable & Sendable, Failure: Error
>:
  Sendable
where Outer.Element: Sendable, Inner.Element: Sendable {
  @usableFromInline
  typealias Machine = FlattenStateMachine<Outer.Element, Key, Inner.Element, Failure>

  @usableFromInline let state: LockedState<Machine>
  /// The operator: its outer sequence, policy, key, transform and failure mappings.
  @usableFromInline let operation: FlattenSequence<Outer, Inner, Key, Failure>

  @inlinable init(_ operation: FlattenSequence<Outer, Inner, Key, Failure>) {
    self.state = LockedState(Machine(policy: operation.policy))
    self.operation = operation
  }

  // MARK: Consumer

  /// The next elements for the consumer, in order: at least one, or `nil` at the end.
  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> [Inner.Element]? {
    while true {
      switch state.withLock({ $0.next() }) {
      case .deliver(let elements, let effects):
        effects.perform()
        if !elements.isEmpty { return elements }
      case .start:
        startOuter()
      case .suspend:
        await withTaskCancellationHandler {
          await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
            state.withLock { $0.suspendConsumer(continuation) }?.resume()
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

  @inlinable func cancel() {
    state.withLock { $0.cancel() }.perform()
  }

  // MARK: Outer

  @inlinable func startOuter() {
    let task = FlowScheduling.startTask { await self.pumpOuter() }
    state.withLock { $0.outerStarted(task) }?.cancel()
  }

  @inlinable func pumpOuter() async {
    var iterator = operation.outer.makeAsyncIterator()
    while await outerMayPull() {
      do throws(Outer.Failure) {
        guard let element = try await iterator.next(isolation: nil) else {
          state.withLock { $0.outerEnded(nil) }.perform()
          return
        }
        let key = operation.key(element)
        let effects = state.withLock { $0.outerElement(element, key: key) }
        effects.perform()
        if let id = effects.startInner { startInner(id) }
      } catch {
        let failure = operation.outerFailure(error)
        state.withLock { $0.outerEnded(failure) }.perform()
        return
      }
    }
  }

  @inlinable func outerMayPull() async -> Bool {
    if Task.isCancelled { return false }
    // Most of the time the answer is known at once: suspending only to resume at once would cost
    // a trip through the executor per outer element.
    if let answer = state.withLock({ $0.outerMayPull(nil) }) { return answer }
    return await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
      if let answer = state.withLock({ $0.outerMayPull(continuation) }) { continuation.resume(returning: answer) }
    }
  }

  // MARK: Inners

  @inlinable func startInner(_ id: Int) {
    let task = FlowScheduling.startTask { await self.runInner(id) }
    state.withLock { $0.innerStarted(id, task: task) }?.cancel()
  }

  @inlinable func runInner(_ id: Int) async {
    // The element is claimed only now: one superseded while this task was on its way never runs.
    guard let (channel, element) = state.withLock({ $0.claim(id) }) else { return }
    let inner = await operation.transform(element)
    var iterator = inner.makeAsyncIterator()
    var failure: Failure?
    do throws(Inner.Failure) {
      while let element = try await iterator.next(isolation: nil) {
        // The common case, room in the channel, costs no suspension point.
        if case .accepted(let needsListing) = channel.offer(element) {
          if needsListing { listReady(channel) }
          continue
        }
        guard await offer(element, to: channel) else {
          // Dropped (superseded, or the operator is ending). Whoever dropped it cancels this task
          // only after releasing the lock, so it may not be cancelled yet: cancel it here. Asking
          // the iterator once more then lets a cooperative one see the cancellation and end its
          // own work (a Flow waits for its body) before this task ends; dropping the iterator
          // alone could not wait for anything.
          withUnsafeCurrentTask { $0?.cancel() }
          _ = try? await iterator.next(isolation: nil)
          break
        }
      }
    } catch {
      failure = operation.innerFailure(error)
    }
    state.withLock { $0.innerEnded(channel, failure: failure) }.perform()
  }

  /// Only the first element since the consumer last emptied a channel touches the shared state.
  @inlinable func listReady(_ channel: Machine.Channel) {
    state.withLock { $0.listReady(channel) }?.resume()
  }

  /// Hands `element` to the consumer, waiting while the inner already holds as many as it may;
  /// `false` once the inner was dropped.
  @inlinable func offer(_ element: Inner.Element, to channel: Machine.Channel) async -> Bool {
    while true {
      switch channel.offer(element) {
      case .accepted(let needsListing):
        if needsListing { listReady(channel) }
        return true
      case .dropped:
        return false
      case .full:
        let offerAgain = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
          if let answer = channel.waitForRoom(continuation) { continuation.resume(returning: answer) }
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
  @usableFromInline var taken: [Inner.Element] = []
  @usableFromInline var takenStart = 0

  @inlinable init(_ storage: FlattenStorage<Outer, Inner, Key, Failure>) {
    self.storage = storage
  }

  deinit {
    storage.cancel()
  }

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Inner.Element? {
    if Task.isCancelled {
      taken = []
      takenStart = 0
      storage.cancel()
    }
    if takenStart < taken.count {
      defer { takenStart += 1 }
      return taken[takenStart]
    }
    guard let batch = try await storage.next(isolation: actor) else { return nil }
    taken = batch
    takenStart = 1
    return batch[0]
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
