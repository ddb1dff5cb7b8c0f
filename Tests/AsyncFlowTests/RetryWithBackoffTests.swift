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

@Suite("retryWithBackoff", .timeLimit(.minutes(1)))
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
    #expect(await result.value.failure == TestError(id: 3))
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
    _ = await capped.value
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
    #expect(await result.value.elements == ["a1", "a2"])
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
    let (elements, failure) = await result.value
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
    await consumer.value
    #expect(log.all == ["got Optional(1)", "body ended", "next nil"])
  }
}
