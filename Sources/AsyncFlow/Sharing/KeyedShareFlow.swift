/// A share per key: one upstream for each key that has subscribers, made from the key, with
/// ``_Concurrency/AsyncSequence/shareFlow(replay:replayScope:bufferingPolicy:gracePeriod:clock:owner:)``'s replay, buffering and
/// grace-period rules. A live quote per symbol over one socket connection per symbol, a presence
/// feed per room, a profile's updates per user: the first subscriber of a key starts its upstream,
/// later ones join it, and when the key's last subscriber has left (and its grace period ran out)
/// the upstream stops and the key is forgotten.
///
/// Unlike a single share, a key whose upstream ended by itself (it finished or failed) is forgotten
/// too: its subscribers get the end, and the key's next subscriber starts a new upstream. So the
/// keys held are only those with an upstream running or subscribers iterating (``keyCount``).
///
/// ```swift
/// let quotes = KeyedShareFlow(replay: 1, gracePeriod: .seconds(5)) { (symbol: String) in
///   Flow.sequence([symbol.count])  // socket.quotes(for: symbol) in an app
/// }
/// for await quote in quotes["AAPL"] { print(quote) }  // one upstream for every "AAPL" subscriber
/// ```
///
/// A key's upstream runs in the context of the subscriber that started it, as a share's does; with
/// an `owner`, in the owner's (see ``FlowOwner``).
public final class KeyedShareFlow<Key: Hashable & Sendable, Element: Sendable, Failure: Error>: Sendable {
  typealias Machine = KeyedShareStateMachine<Key, AsyncShareFlowSequence<Element, Failure>>

  private let state = LockedState(Machine())
  private let makeShare: @Sendable (KeyedShareFlow, Key, _ generation: Int) -> AsyncShareFlowSequence<Element, Failure>

  /// Makes the keyed share; `upstream` is called for a key when its upstream starts (once per run).
  ///
  /// ```swift
  /// let rooms = KeyedShareFlow(bufferingPolicy: .bufferingNewest(16)) { (room: Int) in
  ///   Flow.sequence(["\(room) joined"])
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - replay: How many of a key's last elements a new subscriber of it gets first; 0 or greater.
  ///   - replayScope: Whether a key's replay outlives a stop of its upstream while the key is held.
  ///   - bufferingPolicy: What each subscriber keeps while it is slower than its key's upstream.
  ///   - gracePeriod: How long a key's upstream runs on after its last subscriber left; `.zero` or
  ///     greater.
  ///   - clock: The clock of the grace period (a `TestClock` in tests).
  ///   - owner: The ``FlowOwner`` that ends every key's share when it closes (a later subscriber
  ///     finishes at once), and whose shutdown waits until every key's upstream, grace timer and
  ///     `sink` delivery has ended. `nil` (the default): the keys live as long as they are used.
  ///   - upstream: Makes the upstream of a key.
  public init<Upstream: AsyncSequence & Sendable>(
    replay: Int = 0, replayScope: FlowReplayScope = .whileRunning, bufferingPolicy: FlowBufferingPolicy = .unbounded,
    gracePeriod: Duration = .zero, clock: some Clock<Duration> = ContinuousClock(), owner: FlowOwner? = nil,
    upstream: @escaping @Sendable (Key) -> Upstream
  ) where Upstream.Element == Element, Upstream.Failure == Failure {
    precondition(replay >= 0, "KeyedShareFlow(replay:): replay must be 0 or greater, got \(replay)")
    precondition(
      gracePeriod >= .zero, "KeyedShareFlow(gracePeriod:): gracePeriod must be .zero or greater, got \(gracePeriod)")
    let clock = gracePeriod > .zero ? AnyFlowClock(clock) : nil
    let flowOwner = owner
    makeShare = { keyed, key, generation in
      AsyncShareFlowSequence(
        base: KeyedUpstream(owner: keyed, key: key, generation: generation, make: upstream), replay: replay,
        replayScope: replayScope, bufferingPolicy: bufferingPolicy, gracePeriod: gracePeriod, clock: clock,
        owner: flowOwner)
    }
  }

  /// The subscribers' sequence of `key`: each of its iterators subscribes to the key's share.
  ///
  /// ```swift
  /// let apple: AsyncKeyedShareFlowSequence<String, Int, Never> = quotes["AAPL"]
  /// ```
  public subscript(key: Key) -> AsyncKeyedShareFlowSequence<Key, Element, Failure> {
    AsyncKeyedShareFlowSequence(owner: self, key: key)
  }

  /// How many keys are held: those with an upstream running (or in its grace period) or with
  /// iterators alive.
  ///
  /// ```swift
  /// #expect(quotes.keyCount == 0)  // every screen left, every grace period ran out
  /// ```
  public var keyCount: Int {
    state.withLock { $0.entries.count }
  }

  func subscribe(_ key: Key) -> (share: AsyncShareFlowSequence<Element, Failure>, generation: Int) {
    state.withLock { machine in machine.subscribe(key) { makeShare(self, key, $0) } }
  }

  func iteratorReleased(_ key: Key, generation: Int) {
    let removed = state.withLock { $0.iteratorReleased(key, generation: generation) }
    withExtendedLifetime(removed) {}
  }

  func upstreamStarted(_ key: Key, generation: Int) {
    state.withLock { $0.upstreamStarted(key, generation: generation) }
  }

  func upstreamEnded(_ key: Key, generation: Int, stopped: Bool) {
    let removed = state.withLock { $0.upstreamEnded(key, generation: generation, stopped: stopped) }
    withExtendedLifetime(removed) {}
  }
}

/// The elements of one key of a ``KeyedShareFlow``, for as long as each iterator lives: its
/// subscript's sequence.
///
/// ```swift
/// for await quote in quotes["AAPL"] { print(quote) }
/// ```
public struct AsyncKeyedShareFlowSequence<Key: Hashable & Sendable, Element: Sendable, Failure: Error>: AsyncSequence,
  Sendable
{
  let owner: KeyedShareFlow<Key, Element, Failure>
  let key: Key

  /// Subscribes to the key's share, starting a new one if the key is not held.
  ///
  /// ```swift
  /// var iterator = quotes["AAPL"].makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    let (share, generation) = owner.subscribe(key)
    // The share's own iterator, made from its storage: naming the share's `makeAsyncIterator()` here
    // makes Swift 6.3 lose the share's conformance while it infers this sequence's.
    let base = HotFlowIterator<Element, Failure>(subscriber: SubjectSubscriber(share.storage))
    return Iterator(base: base, lease: KeyLease(owner: owner, key: key, generation: generation))
  }

  /// One subscriber of a key: a share's iterator, and the lease that keeps the key while it lives.
  ///
  /// ```swift
  /// let quote = await iterator.next()
  /// ```
  public struct Iterator: _FlowIterator {
    var base: HotFlowIterator<Element, Failure>
    let lease: KeyLease<Key, Element, Failure>

    /// The key's next element; see ``HotFlowIterator/next(isolation:)``.
    ///
    /// ```swift
    /// let quote = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await base.next(isolation: actor)
    }

    /// How many of this subscriber's elements its key's buffering policy dropped; see
    /// ``HotFlowIterator/droppedCount``.
    ///
    /// ```swift
    /// print(iterator.droppedCount)
    /// ```
    public var droppedCount: Int {
      base.droppedCount
    }
  }
}

@available(*, unavailable)
extension AsyncKeyedShareFlowSequence.Iterator: Sendable {}

/// Keeps a key of a ``KeyedShareFlow`` while an iterator of it lives.
final class KeyLease<Key: Hashable & Sendable, Element: Sendable, Failure: Error>: Sendable {
  let owner: KeyedShareFlow<Key, Element, Failure>
  let key: Key
  let generation: Int

  init(owner: KeyedShareFlow<Key, Element, Failure>, key: Key, generation: Int) {
    (self.owner, self.key, self.generation) = (owner, key, generation)
  }

  deinit { owner.iteratorReleased(key, generation: generation) }
}

/// A key's upstream, as its share iterates it: it tells the owner when a run starts and how it
/// ended, so that the owner knows when the key can go.
struct KeyedUpstream<Key: Hashable & Sendable, Base: AsyncSequence & Sendable>: AsyncSequence, Sendable
where Base.Element: Sendable {
  let owner: KeyedShareFlow<Key, Base.Element, Base.Failure>
  let key: Key
  let generation: Int
  let make: @Sendable (Key) -> Base

  func makeAsyncIterator() -> Iterator {
    owner.upstreamStarted(key, generation: generation)
    return Iterator(base: make(key).makeAsyncIterator(), run: Run(owner: owner, key: key, generation: generation))
  }

  struct Iterator: AsyncIteratorProtocol {
    var base: Base.AsyncIterator
    let run: Run

    mutating func next(isolation actor: isolated (any Actor)?) async throws(Base.Failure) -> Base.Element? {
      do {
        guard let element = try await base.next(isolation: actor) else {
          run.endedByItself = !Task.isCancelled
          return nil
        }
        return element
      } catch {
        run.endedByItself = !Task.isCancelled
        throw error
      }
    }
  }

  /// One run of the upstream: reports its end when the share lets go of the iterator.
  final class Run {
    let owner: KeyedShareFlow<Key, Base.Element, Base.Failure>
    let key: Key
    let generation: Int
    var endedByItself = false

    init(owner: KeyedShareFlow<Key, Base.Element, Base.Failure>, key: Key, generation: Int) {
      (self.owner, self.key, self.generation) = (owner, key, generation)
    }

    deinit { owner.upstreamEnded(key, generation: generation, stopped: !endedByItself) }
  }
}
