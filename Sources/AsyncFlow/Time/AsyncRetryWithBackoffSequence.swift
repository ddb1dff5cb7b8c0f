extension AsyncSequence where Self: Sendable {
  /// Iterates this sequence again after a failure, waiting longer before each new attempt.
  ///
  /// After the `k`-th failure (if `k <= maxRetries` and `shouldRetry(error)`), it waits
  /// `initialDelay * multiplier^(k-1)`, capped at `maxDelay` and scaled by a random factor in
  /// `[1 - jitter, 1]` drawn from `generator`, then makes a new iterator of this sequence. Retries are counted over the
  /// whole iteration, unless `resetAfterElement` is `true`: then an element delivered after a
  /// retry starts the count and the delay over, so the next failure waits `initialDelay` again and
  /// `maxRetries` counts from zero, as a reconnect loop wants after a connection that worked.
  /// Elements already delivered are not taken back, so a cold sequence (a
  /// ``Flow``, a request) runs again from its start, while a hot one (a subject) is subscribed
  /// to again and does not replay what it sent in between. After `maxRetries` retries the last
  /// failure is thrown; `maxRetries: 0` retries nothing; `maxRetries: .max` retries for as long as
  /// the consumer iterates, as a live connection wants (behind a `shareFlow`, the failure after a
  /// limit would end the shared feed for every later subscriber too). Only failures are retried: a
  /// connection whose server close finishes the base ends here too, so make the close a failure.
  /// Cancelling the consumer during a wait ends the sequence at once, without another attempt.
  ///
  /// The decision, `shouldRetry`, is asked after each failure that has retries left, before the
  /// wait. It may `await`: a recovery that must come before the next attempt (a token refresh,
  /// joined by every caller through a ``SingleFlight``) runs inside it, and the wait starts once it
  /// has answered. It may throw a `Failure` to stop: the sequence then ends with that failure,
  /// without another attempt (a refresh that failed). A consumer cancelled while the decision runs
  /// gets `nil`, whatever it answers or throws. Without it, every failure is retried. It runs
  /// in the consumer's task, off the consumer's actor unless it is isolated to one.
  /// A zero delay (`initialDelay: .zero`, or `maxDelay: .zero`) retries at once, without sleeping
  /// on the clock: the attempts run at one instant, each once the one before has ended (`a#` with
  /// two retries gives `aaa#`).
  ///
  /// Each iteration draws its jitter from its own copy of `generator`: the system's by default;
  /// pass a seeded one in tests to make the waits reproducible (not in production, where every
  /// client would then wait alike, which jitter is there to prevent). Without jitter, no random
  /// number is drawn.
  ///
  /// ```swift
  /// private extension SearchError { var isTransient: Bool { if case .network = self { true } else { false } } }
  /// struct Seeded: RandomNumberGenerator, Sendable {  // a test's generator: the same waits on every run
  ///   var state: UInt64
  ///   mutating func next() -> UInt64 { state = state &* 6_364_136_223_846_793_005 &+ 1; return state }
  /// }
  /// let term = "swift"
  /// let quotes = PassthroughFlow<Double, APIError>()  // a live price feed that can drop
  /// let results = api.search(term)
  ///   .retryWithBackoff(maxRetries: 3, initialDelay: .seconds(1), clock: clock) { $0.isTransient }
  /// let reproducible = api.search(term)
  ///   .retryWithBackoff(maxRetries: 3, initialDelay: .seconds(1), jitter: 0.5, using: Seeded(state: 42), clock: clock)
  /// let reconnecting = quotes  // for as long as someone watches
  ///   .retryWithBackoff(maxRetries: .max, initialDelay: .seconds(1), resetAfterElement: true, clock: clock)
  /// @Sendable func refreshToken() async throws(APIError) -> String { "fresh" }  // the auth call, storing it
  /// let refreshes = SingleFlight<String, String, APIError>()
  /// let authorized = api.rows()  // a 401 refreshes the token, once for every caller, then goes again
  ///   .retryWithBackoff(maxRetries: 1, initialDelay: .zero, clock: clock) { failure throws(APIError) in
  ///     guard failure == .server(status: 401) else { return false }
  ///     return try await refreshes.run("token", operation: refreshToken) != nil
  ///   }
  /// ```
  ///
  /// - Warning: With `resetAfterElement: true`, a source that delivers one element and then fails
  ///   is retried forever (every attempt starts the count over), after `initialDelay` each time.
  ///   Bound it elsewhere if that can happen: the `while:` predicate, or a `timeoutFlow` around it.
  public func retryWithBackoff<C: Clock>(
    maxRetries: Int, initialDelay: Duration, multiplier: Double = 2, maxDelay: Duration = .seconds(60),
    jitter: Double = 0, using generator: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
    resetAfterElement: Bool = false, clock: C,
    while shouldRetry: (@Sendable (Failure) async throws(Failure) -> Bool)? = nil
  ) -> AsyncRetryWithBackoffSequence<Self, C> where C.Duration == Duration {
    // `shouldRetry` is optional rather than defaulting to `{ _ in true }`: Swift 6.3.1 crashes in
    // SILGen (a reabstraction thunk of the default) on an async typed-throws default closure whose
    // failure is `Never`.
    precondition(maxRetries >= 0, "retryWithBackoff: maxRetries must be 0 or greater, got \(maxRetries)")
    precondition(initialDelay >= .zero, "retryWithBackoff: initialDelay must be 0 or greater, got \(initialDelay)")
    precondition(maxDelay >= .zero, "retryWithBackoff: maxDelay must be 0 or greater, got \(maxDelay)")
    precondition(multiplier >= 1, "retryWithBackoff: multiplier must be 1 or greater, got \(multiplier)")
    precondition((0...1).contains(jitter), "retryWithBackoff: jitter must be within 0...1, got \(jitter)")
    return AsyncRetryWithBackoffSequence(
      base: self,
      policy: .init(
        maxRetries: maxRetries, initialDelay: initialDelay, multiplier: multiplier, maxDelay: maxDelay, jitter: jitter,
        generator: generator, resetAfterElement: resetAfterElement),
      clock: clock, shouldRetry: shouldRetry)
  }

  /// ``retryWithBackoff(maxRetries:initialDelay:multiplier:maxDelay:jitter:using:resetAfterElement:clock:while:)``
  /// on the `ContinuousClock`.
  ///
  /// ```swift
  /// let results = api.search(term).retryWithBackoff(maxRetries: 3, initialDelay: .milliseconds(500), jitter: 0.2)
  /// ```
  public func retryWithBackoff(
    maxRetries: Int, initialDelay: Duration, multiplier: Double = 2, maxDelay: Duration = .seconds(60),
    jitter: Double = 0, using generator: some RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
    resetAfterElement: Bool = false, while shouldRetry: (@Sendable (Failure) async throws(Failure) -> Bool)? = nil
  ) -> AsyncRetryWithBackoffSequence<Self, ContinuousClock> {
    retryWithBackoff(
      maxRetries: maxRetries, initialDelay: initialDelay, multiplier: multiplier, maxDelay: maxDelay, jitter: jitter,
      using: generator, resetAfterElement: resetAfterElement, clock: ContinuousClock(), while: shouldRetry)
  }
}

/// A sequence that iterates its base again after a failure, with exponential backoff; made by
/// ``_Concurrency/AsyncSequence/retryWithBackoff(maxRetries:initialDelay:multiplier:maxDelay:jitter:using:resetAfterElement:clock:while:)``.
///
/// ```swift
/// let pages = Flow<[Item], any Error> { emitter in await emitter.emit(try await api.articles(page: 1)) }
/// let retrying: AsyncRetryWithBackoffSequence<Flow<[Item], any Error>, ContinuousClock> =
///   pages.retryWithBackoff(maxRetries: 2, initialDelay: .seconds(1))
/// ```
public struct AsyncRetryWithBackoffSequence<Base: AsyncSequence & Sendable, C: Clock>: AsyncSequence, Sendable
where C.Duration == Duration {
  /// The base's element.
  ///
  /// ```swift
  /// for try await page in retrying { print(page) }
  /// ```
  public typealias Element = Base.Element
  /// The base's failure: the last one is thrown once the retries are used up.
  ///
  /// ```swift
  /// do { for try await page in retrying { print(page) } } catch { print("Could not load: \(error)") }
  /// ```
  public typealias Failure = Base.Failure

  struct Policy: Sendable {
    var maxRetries: Int
    var initialDelay: Duration
    var multiplier: Double
    /// Capped at ``Swift/Duration/longestInterval``, so that a sleep's deadline never overflows.
    var maxDelay: Duration
    var jitter: Double
    /// Each iteration draws from its own copy.
    var generator: any RandomNumberGenerator & Sendable
    /// Whether an element delivered after a retry starts the count and the delay over.
    var resetAfterElement: Bool

    init(
      maxRetries: Int, initialDelay: Duration, multiplier: Double, maxDelay: Duration, jitter: Double,
      generator: any RandomNumberGenerator & Sendable, resetAfterElement: Bool
    ) {
      self.maxRetries = maxRetries
      self.initialDelay = initialDelay
      self.multiplier = multiplier
      self.maxDelay = maxDelay.cappedInterval
      self.jitter = jitter
      self.generator = generator
      self.resetAfterElement = resetAfterElement
    }

    /// `delay` scaled by a factor in `[1 - jitter, 1]`: the top 53 of 64 random bits make a
    /// fraction in `[0, 1)` (`1 - jitter * fraction` may round to `1 - jitter`). Without jitter, the delay is exact (a Duration times a Double is
    /// rounded) and no random number is drawn.
    func jittered(_ delay: Duration, using generator: inout any RandomNumberGenerator & Sendable) -> Duration {
      guard jitter > 0 else { return delay }
      let fraction = Double(generator.next() >> 11) * 0x1p-53
      return delay * (1 - jitter * fraction)
    }

    /// The delay after `delay`: `delay * multiplier`, capped at `maxDelay`. The cap is applied
    /// before the product is made, since the product may not fit in a `Duration` (a multiplier of
    /// 1e30 or infinity would trap).
    func grown(_ delay: Duration) -> Duration {
      guard delay > .zero, delay < maxDelay else { return Swift.min(delay, maxDelay) }
      guard delay.seconds * multiplier < maxDelay.seconds else { return maxDelay }
      return Swift.min(delay * multiplier, maxDelay)
    }
  }

  let base: Base
  let policy: Policy
  let clock: C
  /// `nil` retries every failure.
  let shouldRetry: (@Sendable (Base.Failure) async throws(Base.Failure) -> Bool)?

  /// Makes an iterator for the first attempt.
  ///
  /// ```swift
  /// var iterator = retrying.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(sequence: self)
  }

  /// The iterator of an ``AsyncRetryWithBackoffSequence``.
  ///
  /// ```swift
  /// var iterator = retrying.makeAsyncIterator()
  /// while let element = try await iterator.next(isolation: #isolation) { print(element) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncRetryWithBackoffSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncRetryWithBackoffSequence.Failure

    private let sequence: AsyncRetryWithBackoffSequence
    private var attempt: Base.AsyncIterator?
    private var retries = 0
    private var nextDelay: Duration
    private var generator: any RandomNumberGenerator & Sendable

    init(sequence: AsyncRetryWithBackoffSequence) {
      self.sequence = sequence
      self.generator = sequence.policy.generator
      self.attempt = sequence.base.makeAsyncIterator()
      self.nextDelay = Swift.min(sequence.policy.initialDelay, sequence.policy.maxDelay)
    }

    /// Returns the next element of the current attempt, starting new attempts after failures.
    ///
    /// ```swift
    /// let element = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      while true {
        if Task.isCancelled {
          // One more pull in the cancelled task lets the attempt end its own work (a `Flow` waits
          // for its body): no work outlives the iteration. What it returns is of no use.
          await attempt.end(isolation: actor)
          return nil
        }
        guard attempt != nil else { return nil }
        do throws(Base.Failure) {
          let element = try await attempt.nextOrRelease(isolation: actor)
          if element != nil, retries > 0, sequence.policy.resetAfterElement {
            // The attempt worked: its next failure is a first one again.
            retries = 0
            nextDelay = Swift.min(sequence.policy.initialDelay, sequence.policy.maxDelay)
          }
          return element
        } catch {
          if Task.isCancelled { return nil }
          guard retries < sequence.policy.maxRetries else { throw error }
          // The decision may await (a token refresh) and may throw to stop with a failure of its
          // own. A consumer cancelled meanwhile gets no failure and no new attempt.
          var retrying = true
          if let shouldRetry = sequence.shouldRetry {
            do throws(Base.Failure) {
              retrying = try await shouldRetry(error)
            } catch let refusal {
              if Task.isCancelled { return nil }
              throw refusal
            }
            if Task.isCancelled { return nil }
          }
          guard retrying else { throw error }
          retries += 1
          let policy = sequence.policy
          let delay = policy.jittered(nextDelay, using: &generator)
          nextDelay = policy.grown(nextDelay)
          do {
            try await sequence.clock.sleep(for: delay)
          } catch {
            return nil
          }
          attempt = sequence.base.makeAsyncIterator()
        }
      }
    }

    /// Ends the current attempt; every step returns `nil` after it.
    ///
    /// ```swift
    /// await iterator._end(isolation: #isolation)
    /// ```
    public mutating func _end(isolation actor: isolated (any Actor)?) async {
      await attempt.end(isolation: actor)
    }
  }
}

@available(*, unavailable)
extension AsyncRetryWithBackoffSequence.Iterator: Sendable {}

extension Duration {
  /// This duration in seconds, as a `Double` (rounded).
  fileprivate var seconds: Double {
    Double(components.seconds) + Double(components.attoseconds) * 1e-18
  }
}
