extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Shares one iteration of this sequence among many consumers.
  ///
  /// The upstream is iterated once, started by the first subscriber's first `next()`, and
  /// cancelled when the last subscriber leaves (a later subscriber starts it again). Every
  /// subscriber gets the elements sent after it subscribed, each buffered by `bufferingPolicy`; a
  /// late subscriber first gets the last `replay` elements. The upstream's finish or failure
  /// reaches every subscriber; a subscriber that comes after it ends at once.
  ///
  /// ```swift
  /// let prices = api.priceUpdates().shareFlow(replay: 1)
  /// for await price in prices { chart.append(price) }     // in one place
  /// for await price in prices { label.text = "\(price)" } // and in another, one connection
  /// ```
  public func shareFlow(
    replay: Int = 0, bufferingPolicy: FlowBufferingPolicy = .unbounded
  ) -> some AsyncSequence<Element, Failure> & Sendable {
    precondition(replay >= 0, "shareFlow(replay:bufferingPolicy:): replay must be 0 or greater, got \(replay)")
    let upstream = ShareUpstream(base: self)
    let storage = SubjectStorage(
      SubjectStateMachine<Element, Failure>(policy: bufferingPolicy, replayLimit: replay), upstream: upstream)
    upstream.attach(storage)
    return ShareSequence(storage: storage)
  }
}

/// The sequence `shareFlow` returns: each iterator is one subscriber of the shared storage.
struct ShareSequence<Element: Sendable, Failure: Error>: AsyncSequence, Sendable {
  let storage: SubjectStorage<Element, Failure>

  func makeAsyncIterator() -> Iterator {
    Iterator(subscriber: SubjectSubscriber(storage))
  }

  struct Iterator: AsyncIteratorProtocol {
    let subscriber: SubjectSubscriber<Element, Failure>

    mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await subscriber.next(isolation: actor)
    }

    mutating func next() async throws(Failure) -> Element? {
      try await subscriber.next(isolation: nil)
    }
  }
}

/// Starts the shared upstream on demand and stops it when nobody listens.
///
/// Lock order: this upstream's lock, then the subject's. Deciding to stop, and sending an element,
/// each look at both in one step, so a subscriber arriving while the last one leaves cannot be
/// left waiting on a stopped upstream, and a stopped iteration cannot send a late element.
final class ShareUpstream<Base: AsyncSequence & Sendable>: SubjectUpstream where Base.Element: Sendable {
  private struct State {
    /// Weak: the storage owns this upstream.
    weak var storage: SubjectStorage<Base.Element, Base.Failure>?
    /// Tells the current iteration from one still winding down after it was stopped.
    var generation = 0
    /// An iteration is starting or running.
    var isRunning = false
    var task: Task<Void, Never>?
    var ended = false
  }

  private let base: Base
  private let state = LockedState(State())

  init(base: Base) {
    self.base = base
  }

  func attach(_ storage: SubjectStorage<Base.Element, Base.Failure>) {
    state.withLock { $0.storage = storage }
  }

  func demanded() {
    let start = state.withLock { state -> (Int, SubjectStorage<Base.Element, Base.Failure>)? in
      // `isRunning` is set here, in the same step, so that two first subscribers start one iteration.
      guard !state.isRunning, !state.ended, let storage = state.storage else { return nil }
      state.isRunning = true
      state.generation += 1
      return (state.generation, storage)
    }
    guard let (generation, storage) = start else { return }
    let task = FlowScheduling.startTask { await self.iterate(generation, into: storage) }
    let cancelNow = state.withLock { state -> Bool in
      guard state.generation == generation, state.isRunning else { return true }
      state.task = task
      return false
    }
    if cancelNow { task.cancel() }
  }

  func subscribersLeft(remaining: Int) {
    guard remaining == 0 else { return }
    state.withLock { state -> Task<Void, Never>? in
      // Someone may have subscribed since `remaining` was counted: then the upstream stays.
      guard state.isRunning, state.storage?.subscriberCount == 0 else { return nil }
      state.isRunning = false
      state.generation += 1
      return state.task.take()
    }?.cancel()
  }

  private func iterate(_ generation: Int, into storage: SubjectStorage<Base.Element, Base.Failure>) async {
    var iterator = base.makeAsyncIterator()
    do throws(Base.Failure) {
      while let element = try await iterator.next(isolation: nil) {
        let waking = state.withLock { state -> [UnsafeContinuation<Void, Never>]? in
          guard state.generation == generation else { return nil }
          return storage.state.withLock { $0.send(element) }
        }
        guard let waking else { return }
        for consumer in waking { consumer.resume() }
      }
      finish(generation, storage, failure: nil)
    } catch {
      finish(generation, storage, failure: error)
    }
  }

  private func finish(_ generation: Int, _ storage: SubjectStorage<Base.Element, Base.Failure>, failure: Base.Failure?)
  {
    let waking = state.withLock { state -> [UnsafeContinuation<Void, Never>] in
      guard state.generation == generation, !Task.isCancelled else { return [] }
      state.ended = true
      state.isRunning = false
      state.task = nil
      return storage.state.withLock { $0.end(failure: failure) }
    }
    for consumer in waking { consumer.resume() }
  }
}
