import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// A cold source that always fails; it logs the instant of every attempt.
private func failing(clock: TestClock, attempts: EventLog<Duration>) -> Flow<Int, TestError> {
  Flow { _ throws(TestError) in
    attempts.append(clock.now.offset)
    throw TestError(id: attempts.all.count)
  }
}

/// Durations near their limits saturate instead of trapping, and every precondition names its
/// argument and its rule.
@Suite("Time operators at their limits", .hangGuard)
struct TimeLimitsTests {
  @Test(arguments: [1e30, .infinity])
  func retryWithAHugeMultiplierWaitsMaxDelay(multiplier: Double) async {
    let clock = TestClock()
    let attempts = EventLog<Duration>()
    let retried = failing(clock: clock, attempts: attempts)
      .retryWithBackoff(
        maxRetries: 3, initialDelay: .seconds(1), multiplier: multiplier, maxDelay: .seconds(10), clock: clock)
    let result = clock.task { await collect(retried).failure }
    await clock.run()
    #expect(await bounded(result, "result") == TestError(id: 4))
    #expect(attempts.all == [.zero, .seconds(1), .seconds(11), .seconds(21)])
  }

  @Test func retryGrowingPastAHugeMaxDelayStopsThere() async {
    let clock = TestClock()
    let attempts = EventLog<Duration>()
    let retried = failing(clock: clock, attempts: attempts)
      .retryWithBackoff(
        maxRetries: 12, initialDelay: .seconds(1), multiplier: 100, maxDelay: .seconds(Int64.max), clock: clock)
    let result = clock.task { await collect(retried).failure }
    await clock.run()
    #expect(await bounded(result, "result") == TestError(id: 13))
    // Waits of 1, 100, ..., 1e18 seconds, then Int64.max seconds twice.
    let waits: [Duration] = zip(attempts.all.dropFirst(), attempts.all).map { later, earlier in later - earlier }
    for (retry, wait) in waits.prefix(10).enumerated() {
      // A Duration times a Double is rounded to the Double's precision.
      #expect(abs(wait / .seconds(Int64(pow10(2 * retry))) - 1) < 1e-12)
    }
    #expect(Array(waits.dropFirst(10)) == [.seconds(Int64.max), .seconds(Int64.max)])
  }

  @Test func retryWithAZeroDelayAndAnInfiniteMultiplierDoesNotWait() async {
    let clock = TestClock()
    let attempts = EventLog<Duration>()
    let retried = failing(clock: clock, attempts: attempts)
      .retryWithBackoff(maxRetries: 2, initialDelay: .zero, multiplier: .infinity, clock: clock)
    let result = clock.task { await collect(retried).failure }
    await clock.run()
    #expect(await bounded(result, "result") == TestError(id: 3))
    #expect(attempts.all == [.zero, .zero, .zero])
  }

  /// Each operator computes `now + interval` with an interval near `Duration`'s limit, on a
  /// clock that is itself far on: the interval is capped at `Int64.max` seconds.
  @Test func intervalsNearDurationsLimitAreCapped() async {
    let clock = TestClock()
    await clock.advance(to: .init(offset: .seconds(Int64.max) * 10))
    let huge = Duration.seconds(Int64.max) * 10
    let source = Flow<Int, Never>.sequence([1, 2])
    let firsts = clock.task {
      var debounced = source.debounceFlow(for: huge, clock: clock).makeAsyncIterator()
      var throttled = source.throttleFlow(for: huge, clock: clock).makeAsyncIterator()
      var timedOut = source.timeoutFlow(after: huge, clock: clock).makeAsyncIterator()
      return [await debounced.next(), await throttled.next(), (try? await timedOut.next()) ?? nil]
    }
    await clock.runCurrent()
    #expect(await bounded(firsts, "firsts") == [2, 1, 1])
    let delayed = clock.task { await collect(source.delayFlow(for: huge, clock: clock).prefix(1)).elements }
    await clock.runCurrent()
    #expect(clock.pendingSleepers == 1)  // the delay's timer, until now + Int64.max seconds
    await clock.run()
    #expect(await bounded(delayed, "delayed") == [1])
    #expect(clock.now.offset == .seconds(Int64.max) * 11)
  }

  /// A 1 ns timer whose consumer stalls for an hour skips the 3.6 trillion missed ticks at once.
  @Test func timerSkipsTheTicksASlowConsumerMissedWithoutCountingThem() async {
    let clock = TestClock()
    let stalled = Gate()
    let ticks = clock.task {
      var iterator = Flow.timer(every: .nanoseconds(1), clock: clock).makeAsyncIterator()
      var offsets: [Duration] = []
      offsets.append(await iterator.next()!.offset)
      await stalled.wait()
      offsets.append(await iterator.next()!.offset)
      offsets.append(await iterator.next()!.offset)
      return offsets
    }
    await clock.advance(by: .nanoseconds(1))
    await stalled.entered()
    await clock.advance(by: .seconds(3600))
    stalled.release()
    await clock.advance(by: .nanoseconds(1))
    // The tick due while the consumer stalled comes late; the next is the first after now.
    #expect(await bounded(ticks, "ticks") == [.nanoseconds(1), .nanoseconds(2), .seconds(3600) + .nanoseconds(2)])
  }

  // MARK: Preconditions

  enum BadArgument: String, Codable, Sendable, CaseIterable {
    case debounceInterval, throttleInterval, delayInterval, timeoutInterval, timeoutNeverInterval
    case timeoutFinishingInterval, timerInterval
    case retryMaxRetries, retryInitialDelay, retryMaxDelay, retryMultiplier, retryNaNMultiplier, retryJitter

    var message: String {
      switch self {
      case .debounceInterval: "debounceFlow(for:clock:): interval must be 0 or greater, got -1.0 seconds"
      case .throttleInterval: "throttleFlow(for:clock:latest:): interval must be 0 or greater, got -1.0 seconds"
      case .delayInterval: "delayFlow(for:clock:): interval must be 0 or greater, got -1.0 seconds"
      case .timeoutInterval, .timeoutNeverInterval:
        "timeoutFlow(after:clock:): interval must be 0 or greater, got -1.0 seconds"
      case .timeoutFinishingInterval:
        "timeoutFlow(finishingAfter:clock:): interval must be 0 or greater, got -1.0 seconds"
      case .timerInterval: "Flow.timer(every:clock:): interval must be greater than 0, got 0.0 seconds"
      case .retryMaxRetries: "retryWithBackoff: maxRetries must be 0 or greater, got -1"
      case .retryInitialDelay: "retryWithBackoff: initialDelay must be 0 or greater, got -1.0 seconds"
      case .retryMaxDelay: "retryWithBackoff: maxDelay must be 0 or greater, got -1.0 seconds"
      case .retryMultiplier: "retryWithBackoff: multiplier must be 1 or greater, got 0.5"
      case .retryNaNMultiplier: "retryWithBackoff: multiplier must be 1 or greater, got nan"
      case .retryJitter: "retryWithBackoff: jitter must be within 0...1, got 1.5"
      }
    }

    func run() {
      let never = Flow<Int, Never>.just(1)
      let failing = Flow<Int, TestError>.fail(TestError())
      switch self {
      case .debounceInterval: _ = never.debounceFlow(for: .seconds(-1))
      case .throttleInterval: _ = never.throttleFlow(for: .seconds(-1))
      case .delayInterval: _ = never.delayFlow(for: .seconds(-1))
      case .timeoutInterval: _ = failing.timeoutFlow(after: .seconds(-1))
      case .timeoutNeverInterval: _ = never.timeoutFlow(after: .seconds(-1))
      case .timeoutFinishingInterval: _ = never.timeoutFlow(finishingAfter: .seconds(-1))
      case .timerInterval: _ = Flow.timer(every: .zero)
      case .retryMaxRetries: _ = never.retryWithBackoff(maxRetries: -1, initialDelay: .seconds(1))
      case .retryInitialDelay: _ = never.retryWithBackoff(maxRetries: 1, initialDelay: .seconds(-1))
      case .retryMaxDelay: _ = never.retryWithBackoff(maxRetries: 1, initialDelay: .seconds(1), maxDelay: .seconds(-1))
      case .retryMultiplier: _ = never.retryWithBackoff(maxRetries: 1, initialDelay: .seconds(1), multiplier: 0.5)
      case .retryNaNMultiplier: _ = never.retryWithBackoff(maxRetries: 1, initialDelay: .seconds(1), multiplier: .nan)
      case .retryJitter: _ = never.retryWithBackoff(maxRetries: 1, initialDelay: .seconds(1), jitter: 1.5)
      }
    }
  }

  @Test(arguments: BadArgument.allCases)
  func invalidArgumentsStopTheProcessNamingTheArgumentAndTheRule(argument: BadArgument) async {
    let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) { [argument] in
      argument.run()
    }
    let standardError = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
    #expect(standardError.contains(argument.message), "stderr: \(standardError)")
  }
}

private func pow10(_ exponent: Int) -> Double {
  (0..<exponent).reduce(1) { product, _ in product * 10 }
}
