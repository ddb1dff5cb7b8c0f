import AsyncFlow
import AsyncFlowTesting
import Testing

@Suite("Time operators on marbles", .hangGuard)
struct TimeOperatorTests {
  let marbles = Marbles(tick: .seconds(1))
  var clock: TestClock { marbles.clock }

  // MARK: debounceFlow

  @Test func debounceDeliversAfterAQuietIntervalAndFlushesAtFinish() async {
    let output = await marbles.record(
      marbles.input("a-b----c|").debounceFlow(for: .seconds(2), clock: clock), ticks: 12)
    #expect(output == "----b---[c|]")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func debounceDeliversThePendingElementBeforeTheFailure() async {
    let output = await marbles.record(marbles.input("a--b#").debounceFlow(for: .seconds(2), clock: clock), ticks: 8)
    #expect(output == "--a-[b#]")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func debounceCancelledLeavesNothingBehind() async {
    // The input never ends: the recording cancels it after 5 ticks.
    let output = await marbles.record(
      marbles.input("a-b-c-d-e-f-g").debounceFlow(for: .seconds(3), clock: clock), ticks: 5)
    #expect(output == "")
    #expect(clock.pendingSleepers == 0)
  }

  // MARK: throttleFlow

  @Test func throttleLatestDeliversTheNewestOfEachWindowEvenWhenQuiet() async {
    let output = await marbles.record(
      marbles.input("abc-d-----e|").throttleFlow(for: .seconds(3), clock: clock, latest: true), ticks: 14)
    #expect(output == "a--c--d---e|")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func throttleFirstDeliversTheFirstOfEachWindow() async {
    let output = await marbles.record(
      marbles.input("abc-d-----e|").throttleFlow(for: .seconds(3), clock: clock, latest: false), ticks: 14)
    #expect(output == "a--b--d---e|")
  }

  /// At the upstream's end the pending element keeps its window: it comes when the window ends,
  /// the end right after it, so two elements never come closer than the interval.
  @Test func throttleDeliversThePendingElementAtItsWindowsEndThenTheEnd() async {
    #expect(
      await marbles.record(marbles.input("ab|").throttleFlow(for: .seconds(3), clock: clock), ticks: 6) == "a--[b|]")
    #expect(
      await marbles.record(marbles.input("ab#").throttleFlow(for: .seconds(3), clock: clock), ticks: 6) == "a--[b#]")
    #expect(
      await marbles.record(
        marbles.input("abc|").throttleFlow(for: .seconds(5), clock: clock, latest: false), ticks: 8) == "a----[b|]")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func throttleWithoutAPendingElementEndsAtOnce() async {
    #expect(await marbles.record(marbles.input("a-|").throttleFlow(for: .seconds(5), clock: clock), ticks: 6) == "a-|")
    #expect(
      await marbles.record(marbles.input("abc-|").throttleFlow(for: .seconds(3), clock: clock), ticks: 8) == "a--c|")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func throttleCancelledLeavesNothingBehind() async {
    let output = await marbles.record(
      marbles.input("a-b-c-d-e-f-g").throttleFlow(for: .seconds(3), clock: clock), ticks: 4)
    #expect(output == "a--b")
    #expect(clock.pendingSleepers == 0)
  }

  // MARK: delayFlow

  @Test func delayShiftsElementsAndTheEnd() async {
    #expect(await marbles.record(marbles.input("a-b|").delayFlow(for: .seconds(2), clock: clock), ticks: 8) == "--a-b|")
    #expect(await marbles.record(marbles.input("ab#").delayFlow(for: .seconds(1), clock: clock), ticks: 8) == "-ab#")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func delayCancelledLeavesNothingBehind() async {
    #expect(
      await marbles.record(marbles.input("a-b-c-d").delayFlow(for: .seconds(3), clock: clock), ticks: 4) == "---a")
    #expect(clock.pendingSleepers == 0)
  }

  // MARK: timeoutFlow

  @Test func timeoutFailsWhenTheUpstreamIsTooSlow() async {
    let output = await marbles.record(
      marbles.input("a-b-----c|").timeoutFlow(after: .seconds(3), clock: clock), ticks: 12)
    #expect(output == "a-b--#")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func timeoutFinishingVariantFinishes() async {
    let output = await marbles.record(
      marbles.input("a-b-----c|").timeoutFlow(finishingAfter: .seconds(3), clock: clock), ticks: 12)
    #expect(output == "a-b--|")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func timeoutCancelledLeavesNothingBehind() async {
    let output = await marbles.record(
      marbles.input("a-b-c-d-e-f").timeoutFlow(after: .seconds(3), clock: clock), ticks: 3)
    #expect(output == "a-b")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func timeoutPassesASequenceThatKeepsUp() async {
    let output = await marbles.record(marbles.input("a-b-c|").timeoutFlow(after: .seconds(3), clock: clock), ticks: 12)
    #expect(output == "a-b-c|")
  }

  @Test func timeoutOnANeverFailingSequenceFailsWithFlowTimeoutError() async {
    let never = Gate()
    let silent = Flow<Int, Never> { _ in await never.wait() }  // parked until cancelled
    let timed = silent.timeoutFlow(after: .seconds(1), clock: clock)
    let result = clock.task { await collect(timed) }
    await clock.advance(by: .seconds(1))
    guard case let (elements, failure)? = await bounded(result, "result") else { return }
    #expect(elements.isEmpty)
    #expect(failure == FlowTimeoutError())
  }

  @Test func timeoutOnATypedSequenceKeepsItsFailureAndAddsTheTimeout() async {
    let never = Gate()
    let silent = Flow<Int, TestError> { _ in await never.wait() }  // parked until cancelled
    let timedOut = clock.task { await collect(silent.timeoutFlow(after: .seconds(1), clock: self.clock)) }
    await clock.advance(by: .seconds(1))
    #expect(await bounded(timedOut, "timedOut")?.failure == .timedOut)

    let failing = Flow<Int, TestError>.fail(TestError(id: 7)).timeoutFlow(after: .seconds(1), clock: clock)
    let failed = clock.task { await collect(failing) }
    await clock.run()
    let failure: FlowTimeoutFailure<TestError>?? = await bounded(failed, "failed")?.failure
    #expect(failure == .upstream(TestError(id: 7)))
    #expect(failure??.upstreamFailure == TestError(id: 7))
  }

  @Test func aTypedTimeoutIsCaughtByItsCases() async {
    let never = Gate()
    let silent = Flow<Int, TestError> { _ in await never.wait() }
    let caught = clock.task { () -> String in
      var iterator = silent.timeoutFlow(after: .seconds(1), clock: self.clock).makeAsyncIterator()
      do throws(FlowTimeoutFailure<TestError>) {
        _ = try await iterator.next()
        return "no failure"
      } catch {
        switch error {
        case .timedOut: return "timed out"
        case .upstream(let failure): return "upstream \(failure.id)"
        }
      }
    }
    await clock.advance(by: .seconds(1))
    #expect(await bounded(caught, "caught") == "timed out")
  }

  // MARK: Flow.timer

  @Test func timerTicksEveryInterval() async {
    let ticks = clock.task { await collect(Flow.timer(every: .seconds(2), clock: self.clock).prefix(3)).elements }
    await clock.advance(by: .seconds(6))
    #expect(await bounded(ticks, "ticks")?.map(\.offset) == [.seconds(2), .seconds(4), .seconds(6)])
    #expect(clock.pendingSleepers == 0)
  }

  @Test func timerOnMarbles() async {
    let output = await marbles.record(Flow.timer(every: .seconds(2), clock: clock), ticks: 7, symbol: { _ in "t" })
    #expect(output == "--t-t-t")
    #expect(clock.pendingSleepers == 0)
  }
}

/// The time operators' concrete types: they can be stored, and their iterators' `next()` is typed.
private struct StoredPipelines: Sendable {
  let debounced: AsyncDebounceFlowSequence<Flow<Int, Never>, TestClock>
  let throttled: AsyncThrottleFlowSequence<Flow<Int, Never>, TestClock>
  let delayed: AsyncDelayFlowSequence<Flow<Int, Never>, TestClock>
  let timedOut: AsyncTimeoutFlowSequence<Flow<Int, Never>, TestClock, FlowTimeoutError>
  let timedOutOrFailed: AsyncTimeoutFlowSequence<Flow<Int, TestError>, TestClock, FlowTimeoutFailure<TestError>>
  let finishing: AsyncTimeoutFlowSequence<Flow<Int, Never>, TestClock, Never>

  init(clock: TestClock) {
    let source = Flow<Int, Never>.just(1)
    debounced = source.debounceFlow(for: .seconds(1), clock: clock)
    throttled = source.throttleFlow(for: .seconds(1), clock: clock)
    delayed = source.delayFlow(for: .seconds(1), clock: clock)
    timedOut = source.timeoutFlow(after: .seconds(1), clock: clock)
    timedOutOrFailed = Flow<Int, TestError>.fail(TestError()).timeoutFlow(after: .seconds(1), clock: clock)
    finishing = source.timeoutFlow(finishingAfter: .seconds(1), clock: clock)
  }
}

@Suite("Time operators' types", .hangGuard)
struct TimeOperatorTypeTests {
  @Test func storedSequencesIterateWithoutTryWhenTheyCannotFail() async throws {
    let clock = TestClock()
    let pipelines = StoredPipelines(clock: clock)
    let firsts = clock.task {
      var debounced = pipelines.debounced.makeAsyncIterator()
      let a = await debounced.next()
      var throttled = pipelines.throttled.makeAsyncIterator()
      let b = await throttled.next(isolation: #isolation)
      var delayed = pipelines.delayed.makeAsyncIterator()
      let c = await delayed.next()
      var finishing = pipelines.finishing.makeAsyncIterator()
      let d = await finishing.next()
      return [a, b, c, d]
    }
    await clock.run()
    #expect(await bounded(firsts, "firsts") == [1, 1, 1, 1])

    let typed = clock.task { () -> Result<Int?, FlowTimeoutError> in
      var iterator = pipelines.timedOut.makeAsyncIterator()
      do throws(FlowTimeoutError) { return .success(try await iterator.next()) } catch { return .failure(error) }
    }
    await clock.run()
    #expect(try await bounded(typed, "typed")?.get() == 1)
  }
}

@Suite("Time operators' cancellation", .hangGuard)
struct TimeOperatorCancellationTests {
  enum Timeout: String, CaseIterable, Sendable {
    case failing, finishing
  }

  /// The consumer takes 1 and parks while 2 waits in the operator (the upstream's body is parked
  /// after it); it is then cancelled: its `next()` returns `nil` only once the body has ended.
  @Test(arguments: Timeout.allCases)
  func timeoutCancelledWhileAnElementWaitsEndsOnceTheUpstreamsBodyHasEnded(variant: Timeout) async {
    let clock = TestClock()
    let log = EventLog<String>()
    let never = Gate()
    let cleanUp = Signal()
    let upstream = Flow<Int, Never> { emitter in
      for element in 1...2 { await emitter.emit(element) }
      await never.wait()  // leaves when the body is cancelled
      await cleanUp.wait()  // not cancellable: the body's clean-up takes a while
      log.append("body ended")
    }
    let parked = Gate()
    let consumer = clock.task {
      switch variant {
      case .failing: await Self.takeOneThenCancel(upstream.timeoutFlow(after: .seconds(10), clock: clock), parked, log)
      case .finishing:
        await Self.takeOneThenCancel(upstream.timeoutFlow(finishingAfter: .seconds(10), clock: clock), parked, log)
      }
    }
    await parked.entered()
    await clock.runCurrent()
    consumer.cancel()
    await clock.runCurrent()
    #expect(log.all == ["got Optional(1)"])
    cleanUp.fire()
    await bounded(consumer, "consumer")
    #expect(log.all == ["got Optional(1)", "body ended", "next nil"])
    #expect(clock.pendingSleepers == 0)
  }

  private static func takeOneThenCancel<S: AsyncSequence>(
    _ sequence: S, _ parked: Gate, _ log: EventLog<String>
  ) async where S.Element == Int {
    var iterator = sequence.makeAsyncIterator()
    log.append("got \(String(describing: (try? await iterator.next()) ?? nil))")
    await parked.wait()  // leaves when the task is cancelled
    let next = (try? await iterator.next()) ?? nil
    log.append("next \(next.map(String.init) ?? "nil")")
  }
}

/// An endless upstream that produces 1, 2, 3, ... one every 100 ms, counting how many were pulled.
private struct Counting: AsyncSequence, Sendable {
  let clock: TestClock
  let pulled: LockedState<Int>

  struct AsyncIterator: AsyncIteratorProtocol {
    let clock: TestClock
    let pulled: LockedState<Int>

    mutating func next() async -> Int? {
      do { try await clock.sleep(for: .milliseconds(100)) } catch { return nil }
      return pulled.withLock { count in
        count += 1
        return count
      }
    }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(clock: clock, pulled: pulled) }
}

@Suite("delayFlow's bound", .hangGuard)
struct DelayBoundTests {
  /// 1 s of delay, an element every 100 ms: 10 arrive within one interval. Behind a consumer that
  /// stalls for 20 s, the upstream is pulled until more are due than in flight, then no more.
  @Test func aStalledConsumerStopsThePullingAtAboutTwiceWhatArrivesInOneInterval() async {
    let clock = TestClock()
    let pulled = LockedState(0)
    let stalled = Gate()
    let consumer = clock.task {
      var iterator = Counting(clock: clock, pulled: pulled).delayFlow(for: .seconds(1), clock: clock)
        .makeAsyncIterator()
      var received = [await iterator.next()]
      await stalled.wait()
      for _ in 1...30 { received.append(await iterator.next()) }
      return received
    }
    await clock.advance(by: .milliseconds(1100))
    await stalled.entered()
    await clock.advance(by: .seconds(20))
    let heldBack = pulled.withLock { $0 }
    #expect(heldBack <= 2 * 10 + 2, "pulled \(heldBack)")
    stalled.release()
    await clock.advance(by: .seconds(5))
    // Nothing is lost: the consumer gets every element, in order, and the pulling resumes.
    #expect(await bounded(consumer, "consumer") == (1...31).map { $0 })
    #expect(pulled.withLock { $0 } > heldBack)
  }
}

/// An upstream that ignores cancellation: its first `next()` waits for `release`, then fails.
private struct FailsWhenReleased: AsyncSequence, Sendable {
  let release: Signal
  let log: EventLog<String>

  struct AsyncIterator: AsyncIteratorProtocol {
    let release: Signal
    let log: EventLog<String>

    mutating func next() async throws(TestError) -> Int? {
      await release.wait()
      log.append("upstream failed")
      throw TestError(id: 1)
    }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(release: release, log: log) }
}

@Suite("timeoutFlow after its timeout", .hangGuard)
struct TimeoutAfterTheTimeoutTests {
  /// The timeout fires first; the upstream, cancelled, fails later: the sequence ends with the
  /// timeout (the first end wins), once the upstream has returned.
  @Test func anUpstreamFailingAfterTheTimeoutFiredStillEndsWithTheTimeout() async {
    let clock = TestClock()
    let release = Signal()
    let log = EventLog<String>()
    let timed = FailsWhenReleased(release: release, log: log).timeoutFlow(after: .seconds(1), clock: clock)
    let result = clock.task {
      let failure = await collect(timed).failure
      log.append("consumer got \(failure.map { "\($0 == .timedOut ? "timedOut" : "\($0)")" } ?? "nil")")
    }
    await clock.advance(by: .seconds(1))
    #expect(log.all.isEmpty)  // the consumer waits for the upstream, which ignores cancellation
    release.fire()
    await bounded(result, "result")
    #expect(log.all == ["upstream failed", "consumer got timedOut"])
  }

  @Test func anUpstreamFailingAfterTheFinishingTimeoutFiredStillFinishes() async {
    let clock = TestClock()
    let release = Signal()
    let log = EventLog<String>()
    let timed = FailsWhenReleased(release: release, log: log).timeoutFlow(finishingAfter: .seconds(1), clock: clock)
    let result = clock.task { await collect(timed) }
    await clock.advance(by: .seconds(1))
    release.fire()
    guard case let (elements, failure)? = await bounded(result, "result") else { return }
    #expect(elements.isEmpty && failure == nil)
    #expect(log.all == ["upstream failed"])
  }
}
