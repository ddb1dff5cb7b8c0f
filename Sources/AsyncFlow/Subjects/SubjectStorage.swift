/// Owns the lock around a ``SubjectStateMachine``; continuations are resumed after it is released.
@usableFromInline
final class SubjectStorage<Element: Sendable, Failure: Error>: Sendable {
  @usableFromInline let state: LockedState<SubjectStateMachine<Element, Failure>>
  /// Told about demand and departures, for sources that start an upstream (`shareFlow`).
  let upstream: (any SubjectUpstream)?

  init(_ machine: SubjectStateMachine<Element, Failure>, upstream: (any SubjectUpstream)? = nil) {
    self.state = LockedState(machine)
    self.upstream = upstream
  }

  var subscriberCount: Int { state.withLock { $0.subscriberCount } }

  @inlinable
  func send(_ element: Element) {
    for consumer in state.withLock({ $0.send(element) }) { consumer.resume() }
  }

  func end(failure: Failure?) {
    for consumer in state.withLock({ $0.end(failure: failure) }) { consumer.resume() }
  }

  // Out of line (unspecialized) but synchronous: they keep the subscriber's inlinable refill,
  // whose frame a parked subscriber holds, small and specialized.

  @usableFromInline
  func demanded() {
    upstream?.demanded()
  }

  @usableFromInline
  func take(_ id: Int, swapping batch: inout [Element]) -> SubjectStateMachine<Element, Failure>.NextAction {
    state.withLock { $0.next(id, swapping: &batch) }
  }

  @usableFromInline
  func suspend(_ id: Int, _ continuation: UnsafeContinuation<Void, Never>) {
    state.withLock { $0.suspend(id, continuation) }?.resume()
  }

  @usableFromInline
  func unsubscribe(_ id: Int) {
    let (consumer, remaining) = state.withLock { state in (state.unsubscribe(id), state.subscriberCount) }
    consumer?.resume()
    upstream?.subscribersLeft(remaining: remaining)
  }
}

/// An upstream that a subject starts on demand and stops when nobody listens.
protocol SubjectUpstream: Sendable {
  func demanded()
  func subscribersLeft(remaining: Int)
}

/// One subscriber's end of a hot source: it is registered when made, serves its batch without
/// locking, and unsubscribes when released.
@usableFromInline
final class SubjectSubscriber<Element: Sendable, Failure: Error> {
  @usableFromInline let storage: SubjectStorage<Element, Failure>
  @usableFromInline let id: Int
  @usableFromInline var batch: [Element] = []
  @usableFromInline var position = 0
  @usableFromInline var isSubscribed = true

  init(_ storage: SubjectStorage<Element, Failure>) {
    self.storage = storage
    self.id = storage.state.withLock { $0.subscribe() }
  }

  deinit {
    if isSubscribed { storage.unsubscribe(id) }
  }

  /// Serves the current batch inline in the consumer (specialized there); refills out of line.
  @inlinable
  func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    if position < batch.count, isSubscribed, !Task.isCancelled {
      defer { position += 1 }
      return batch[position]
    }
    return try await refill(isolation: actor)
  }

  @inlinable
  func refill(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    guard isSubscribed else { return nil }
    if Task.isCancelled { return leave() }
    storage.demanded()
    while true {
      let storage = self.storage
      let id = self.id
      switch storage.take(id, swapping: &batch) {
      case .deliver:
        position = 1
        return batch[0]
      case .suspend:
        await withTaskCancellationHandler {
          await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
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
    batch = []
    storage.unsubscribe(id)
    return nil
  }
}
