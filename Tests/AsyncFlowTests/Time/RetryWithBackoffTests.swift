import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// A cold source whose first `failures` attempts fail; it logs the instant of every attempt.
private func flakySource(failures: Int, clock: TestClock, attempts: LockedState<[Duration]>) -> Flow<String, TestError>
{
  Flow { emitter throws(TestError) in
    let attempt = attempts.withLock { attempts in
      attempts.append(clock.now.offset)
      return attempts.count
    }
    if attempt <= failures { throw TestError(id: attempt) }
    await emitter.emit("x")
  }
}

@Suite("retryWithBackoff", .hangGuard)
struct RetryWithBackoffTests {
  @Test func retriesAtOneAndThreeSecondsThenSucceeds() async {
    let marbles = Marbles(tick: .seconds(1))
    let attempts = LockedState<[Duration]>([])
    let source = flakySource(failures: 2, clock: marbles.clock, attempts: attempts)
    let output = await marbles.record(
      source.retryWithBackoff(maxRetries: 3, initialDelay: .seconds(1), clock: marbles.clock), ticks: 10)
    #expect(attempts.withLock { $0 } == [.zero, .seconds(1), .seconds(3)])
    #expect(output == "---[x|]")
    #expect(marbles.clock.pendingSleepers == 0)
  }

  @Test func throwsTheLastFailureAfterMaxRetries() async {
    let clock = TestClock()
    let attempts = LockedState<[Duration]>([])
    let source = flakySource(failures: 10, clock: clock, attempts: attempts)
    let result = clock.task {
      await collect(source.retryWithBackoff(maxRetries: 2, initialDelay: .seconds(1), clock: clock))
    }
    await clock.run()
    #expect(await bounded(result, "result")?.failure == TestError(id: 3))
    #expect(attempts.withLock { $0 } == [.zero, .seconds(1), .seconds(3)])
  }

  @Test func zeroRetriesMeansNone() async {
    let clock = TestClock()
    let attempts = LockedState<[Duration]>([])
    let source = flakySource(failures: 1, clock: clock, attempts: attempts)
    let result = await collect(source.retryWithBackoff(maxRetries: 0, initialDelay: .seconds(1), clock: clock))
    #expect(result.failure == TestError(id: 1))
    #expect(attempts.withLock { $0.count } == 1)
  }

  @Test func delaysAreCappedAndFilteredByShouldRetry() async {
    let clock = TestClock()
    let attempts = LockedState<[Duration]>([])
    let source = flakySource(failures: 10, clock: clock, attempts: attempts)
    let capped = clock.task {
      await collect(
        source.retryWithBackoff(
          maxRetries: 4, initialDelay: .seconds(1), multiplier: 3, maxDelay: .seconds(5), clock: clock))
    }
    await clock.run()
    await bounded(capped, "capped")
    // Waits of 1, 3, 5 (9 capped), 5 (27 capped) seconds.
    #expect(attempts.withLock { $0 } == [.zero, .seconds(1), .seconds(4), .seconds(9), .seconds(14)])

    let filtered = LockedState<[Duration]>([])
    let noRetry = flakySource(failures: 10, clock: clock, attempts: filtered)
      .retryWithBackoff(maxRetries: 4, initialDelay: .seconds(1), clock: clock) { $0.id != 1 }
    #expect(await collect(noRetry).failure == TestError(id: 1))
  }

  @Test func keepsElementsDeliveredBeforeAFailure() async {
    let clock = TestClock()
    let attempts = LockedState<Int>(0)
    let source = Flow<String, TestError> { emitter throws(TestError) in
      let attempt = attempts.withLock { count in
        count += 1
        return count
      }
      await emitter.emit("a\(attempt)")
      if attempt == 1 { throw TestError() }
    }
    let result = clock.task {
      await collect(source.retryWithBackoff(maxRetries: 1, initialDelay: .seconds(1), clock: clock))
    }
    await clock.run()
    #expect(await bounded(result, "result")?.elements == ["a1", "a2"])
  }

  @Test func cancellingDuringTheWaitEndsAtOnceWithoutAnotherAttempt() async {
    let clock = TestClock()
    let attempts = LockedState<[Duration]>([])
    let source = flakySource(failures: 10, clock: clock, attempts: attempts)
    let result = clock.task {
      await collect(source.retryWithBackoff(maxRetries: 5, initialDelay: .seconds(1), clock: clock))
    }
    await clock.sleepers(count: 1)
    result.cancel()
    guard case let (elements, failure)? = await bounded(result, "result") else { return }
    #expect(elements.isEmpty && failure == nil)
    #expect(clock.pendingSleepers == 0)
    await clock.advance(by: .seconds(10))
    #expect(attempts.withLock { $0.count } == 1)
  }

  /// The consumer takes 1 and parks; it is then cancelled: its `next()` returns `nil` only once the
  /// attempt's body has ended, as a bare `Flow`'s would.
  @Test func cancelledBetweenElementsEndsOnceTheAttemptsBodyHasEnded() async {
    let clock = TestClock()
    let log = EventLog<String>()
    let never = Gate()
    let cleanUp = Signal()
    let source = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      await never.wait()  // leaves when the body is cancelled
      await cleanUp.wait()  // not cancellable: the body's clean-up takes a while
      log.append("body ended")
    }
    let parked = Gate()
    let consumer = clock.task {
      var iterator = source.retryWithBackoff(maxRetries: 3, initialDelay: .seconds(1), clock: clock).makeAsyncIterator()
      log.append("got \(String(describing: (try? await iterator.next()) ?? nil))")
      await parked.wait()  // leaves when the task is cancelled
      let next = (try? await iterator.next()) ?? nil
      log.append("next \(next.map(String.init) ?? "nil")")
    }
    await parked.entered()
    await never.entered()
    consumer.cancel()
    await clock.runCurrent()
    #expect(log.all == ["got Optional(1)"])
    cleanUp.fire()
    await bounded(consumer, "consumer")
    #expect(log.all == ["got Optional(1)", "body ended", "next nil"])
  }

  /// The decision awaits (a recovery, such as a token refresh): the wait and the next attempt come
  /// only once it has answered.
  @Test func aDecisionThatAwaitsComesBeforeTheWaitAndTheNextAttempt() async {
    let clock = TestClock()
    let attempts = LockedState<[Duration]>([])
    let recovered = Gate()
    let source = flakySource(failures: 1, clock: clock, attempts: attempts)
      .retryWithBackoff(maxRetries: 3, initialDelay: .seconds(1), clock: clock) { _ in
        await recovered.wait()
        return true
      }
    let result = clock.task { await collect(source) }
    await recovered.entered()
    await clock.advance(by: .seconds(5))  // no wait has started: the decision is still out
    #expect(attempts.withLock { $0 } == [.zero])
    recovered.release()
    await clock.run()
    guard case let (elements, failure)? = await bounded(result, "result") else { return }
    #expect(elements == ["x"] && failure == nil)
    #expect(attempts.withLock { $0 } == [.zero, .seconds(6)])  // 1 s after the answer, at 5 s
  }

  /// A decision that throws ends the sequence with its own failure, without another attempt.
  @Test func aDecisionThatThrowsEndsWithItsFailureAndNoRetry() async {
    let clock = TestClock()
    let attempts = LockedState<[Duration]>([])
    let source = flakySource(failures: 10, clock: clock, attempts: attempts)
      .retryWithBackoff(maxRetries: 3, initialDelay: .seconds(1), clock: clock) { failure throws(TestError) in
        throw TestError(id: 100 + failure.id)
      }
    let result = clock.task { await collect(source) }
    await clock.run()
    #expect(await bounded(result, "result")?.failure == TestError(id: 101))
    #expect(attempts.withLock { $0.count } == 1)
  }

  /// Cancelled while the decision awaits: the consumer gets `nil`, neither the failure nor the
  /// decision's answer, and no attempt follows.
  @Test func cancelledDuringTheDecisionEndsWithoutAFailureOrAnotherAttempt() async {
    let clock = TestClock()
    let attempts = LockedState<[Duration]>([])
    let deciding = Gate()
    let source = flakySource(failures: 10, clock: clock, attempts: attempts)
      .retryWithBackoff(maxRetries: 3, initialDelay: .zero, clock: clock) { failure throws(TestError) in
        await deciding.wait()  // leaves when the consumer is cancelled
        throw failure
      }
    let result = clock.task { await collect(source) }
    await deciding.entered()
    result.cancel()
    guard case let (elements, failure)? = await bounded(result, "result") else { return }
    #expect(elements.isEmpty && failure == nil)
    await clock.run()
    #expect(attempts.withLock { $0.count } == 1)
  }

  /// A synchronous predicate, as a closure or as a stored function value, is still accepted.
  @Test func aSynchronousPredicateStillDecides() async {
    let clock = TestClock()
    let isFirst: @Sendable (TestError) -> Bool = { $0.id == 1 }
    let attempts = LockedState<[Duration]>([])
    let source = flakySource(failures: 10, clock: clock, attempts: attempts)
      .retryWithBackoff(maxRetries: 3, initialDelay: .zero, clock: clock, while: isFirst)
    #expect(await collect(source).failure == TestError(id: 2))
    #expect(attempts.withLock { $0.count } == 2)
  }
}

/// A cold source whose attempt `k` (from 1) emits `script[k - 1].elements` at once, then fails
/// with `TestError(id: k)` or finishes; attempts past the script fail. Logs every attempt's instant.
private func scriptedSource(
  _ script: [(elements: [String], fails: Bool)], clock: TestClock, attempts: LockedState<[Duration]>
) -> Flow<String, TestError> {
  Flow { emitter throws(TestError) in
    let attempt = attempts.withLock { attempts in
      attempts.append(clock.now.offset)
      return attempts.count
    }
    guard attempt <= script.count else { throw TestError(id: attempt) }
    for element in script[attempt - 1].elements { await emitter.emit(element) }
    if script[attempt - 1].fails { throw TestError(id: attempt) }
  }
}

@Suite("retryWithBackoff(resetAfterElement:)", .hangGuard)
struct RetryResetAfterElementTests {
  /// Attempt 2 delivers an element, then fails: with the reset, attempt 3 waits `initialDelay`
  /// (1 s) again and attempt 4 waits 2 s; without it they wait 2 s and 4 s.
  @Test func anElementAfterARetryStartsTheDelayOver() async {
    let script: [(elements: [String], fails: Bool)] = [([], true), (["a"], true), ([], true), (["b"], false)]
    for reset in [true, false] {
      let marbles = Marbles(tick: .seconds(1))
      let attempts = LockedState<[Duration]>([])
      let source = scriptedSource(script, clock: marbles.clock, attempts: attempts)
      let retried = source.retryWithBackoff(
        maxRetries: 5, initialDelay: .seconds(1), resetAfterElement: reset, clock: marbles.clock)
      let output = await marbles.record(retried, ticks: 10)
      if reset {
        #expect(attempts.withLock { $0 } == [.zero, .seconds(1), .seconds(2), .seconds(4)])
        #expect(output == "-a--[b|]")
      } else {
        #expect(attempts.withLock { $0 } == [.zero, .seconds(1), .seconds(3), .seconds(7)])
        #expect(output == "-a-----[b|]")
      }
      #expect(marbles.clock.pendingSleepers == 0)
    }
  }

  /// `maxRetries: 1`, and every attempt delivers an element before it fails: with the reset each
  /// failure is a first one again; without it, the second failure is thrown.
  @Test func anElementAfterARetryStartsTheCountOver() async {
    let script: [(elements: [String], fails: Bool)] = [(["a"], true), (["b"], true), (["c"], false)]
    let marbles = Marbles(tick: .seconds(1))
    let attempts = LockedState<[Duration]>([])
    let source = scriptedSource(script, clock: marbles.clock, attempts: attempts)
    let reset = await marbles.record(
      source.retryWithBackoff(maxRetries: 1, initialDelay: .seconds(1), resetAfterElement: true, clock: marbles.clock),
      ticks: 5)
    #expect(reset == "ab[c|]")

    let counted = LockedState<[Duration]>([])
    let plain = scriptedSource(script, clock: marbles.clock, attempts: counted)
    // The default is `false`: today's count over the whole iteration.
    let output = await marbles.record(
      plain.retryWithBackoff(maxRetries: 1, initialDelay: .seconds(1), clock: marbles.clock), ticks: 5)
    #expect(output == "a[b#]")
  }

  /// The documented hazard: a source that delivers one element and then fails is retried
  /// forever, `initialDelay` apart, whatever `maxRetries` says.
  @Test func aSourceThatDeliversOneElementThenFailsIsRetriedForever() async {
    let marbles = Marbles(tick: .seconds(1))
    let attempts = LockedState<[Duration]>([])
    let script = Array(repeating: (elements: ["x"], fails: true), count: 100)
    let source = scriptedSource(script, clock: marbles.clock, attempts: attempts)
    let output = await marbles.record(
      source.retryWithBackoff(maxRetries: 2, initialDelay: .seconds(1), resetAfterElement: true, clock: marbles.clock),
      ticks: 8)
    // One attempt a second, up to and including the last tick's instant.
    #expect(output == "xxxxxxxxx")
    #expect(attempts.withLock { $0.count } == 9)
  }

  /// Elements delivered before any retry do not matter: the first failure waits `initialDelay`.
  @Test func anElementBeforeTheFirstRetryChangesNothing() async {
    let script: [(elements: [String], fails: Bool)] = [(["a", "b"], true), ([], true), (["c"], false)]
    let marbles = Marbles(tick: .seconds(1))
    let attempts = LockedState<[Duration]>([])
    let source = scriptedSource(script, clock: marbles.clock, attempts: attempts)
    let output = await marbles.record(
      source.retryWithBackoff(maxRetries: 2, initialDelay: .seconds(1), resetAfterElement: true, clock: marbles.clock),
      ticks: 5)
    #expect(attempts.withLock { $0 } == [.zero, .seconds(1), .seconds(3)])
    #expect(output == "[ab]--[c|]")
  }
}

/// A generator that always returns `value`.
private struct Constant: RandomNumberGenerator, Sendable {
  let value: UInt64
  mutating func next() -> UInt64 { value }
}

@Suite("retryWithBackoff's jitter", .hangGuard)
struct RetryJitterTests {
  /// The waits between the attempts of a source that always fails, retried `retries` times.
  private func waits(
    retries: Int, initialDelay: Duration = .seconds(4), multiplier: Double = 1, maxDelay: Duration = .seconds(60),
    jitter: Double,
    using generator: some RandomNumberGenerator & Sendable
  ) async -> [Duration] {
    let clock = TestClock()
    let attempts = LockedState<[Duration]>([])
    let source = flakySource(failures: .max, clock: clock, attempts: attempts)
    let result = clock.task {
      await collect(
        source.retryWithBackoff(
          maxRetries: retries, initialDelay: initialDelay, multiplier: multiplier, maxDelay: maxDelay, jitter: jitter,
          using: generator, clock: clock))
    }
    await clock.run()
    await bounded(result, "result")
    let offsets = attempts.withLock { $0 }
    return zip(offsets.dropFirst(), offsets).map { later, earlier in later - earlier }
  }

  @Test func theSmallestRandomNumberKeepsTheFullDelay() async {
    #expect(
      await waits(retries: 3, multiplier: 2, jitter: 0.5, using: Constant(value: 0)) == [
        .seconds(4), .seconds(8), .seconds(16),
      ])
  }

  @Test func theLargestRandomNumberScalesTheDelayDownTo1MinusJitter() async {
    for wait in await waits(retries: 3, jitter: 0.5, using: Constant(value: .max)) {
      #expect(wait >= .seconds(2) && wait < .seconds(2) + .nanoseconds(1), "\(wait)")
    }
    for wait in await waits(retries: 3, jitter: 1, using: Constant(value: .max)) {
      #expect(wait >= .zero && wait < .nanoseconds(1), "\(wait)")
    }
  }

  @Test func aSeededGeneratorGivesReproducibleWaitsWithinTheBounds() async {
    let first = await waits(retries: 100, jitter: 0.25, using: SplitMix64(state: 7))
    #expect(first.count == 100)
    #expect(first.allSatisfy { $0 >= .seconds(3) && $0 <= .seconds(4) })
    #expect(Set(first).count > 90)  // they vary
    #expect(await waits(retries: 100, jitter: 0.25, using: SplitMix64(state: 7)) == first)
  }

  @Test func withoutJitterTheDelayIsExactAndNothingIsDrawn() async {
    // A generator that would trap if drawn from.
    struct Forbidden: RandomNumberGenerator, Sendable {
      mutating func next() -> UInt64 { preconditionFailure("drew a random number without jitter") }
    }
    let longest = Duration.seconds(Int64.max)
    #expect(
      await waits(retries: 2, initialDelay: longest, maxDelay: longest, jitter: 0, using: Forbidden()) == [
        .seconds(Int64.max), .seconds(Int64.max),
      ])
  }
}
