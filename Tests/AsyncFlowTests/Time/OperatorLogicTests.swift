import AsyncFlowTesting
import Testing

@testable import AsyncFlow

private typealias Instant = TestClock.Instant

/// Each timed logic as a plain value: a table of events and what follows each, no continuations.
@Suite("Operator logics")
struct OperatorLogicTests {
  // MARK: debounceFlow (interval 2)

  @Test func debounce_deliversTheNewestOnceTheIntervalPassesWithoutANewerOne() {
    checkLogic(
      DebounceLogic<Int, TestError, Instant>(interval: .seconds(2)),
      [
        (.start(at: 0), "started pull"),
        (.input(1, at: 0), "kept @2 pull"),
        (.input(2, at: 1), "kept, displaced 1 @3 pull"),
        (.timer(at: 2), "fired @3 pull"),  // the deadline moved: too early
        (.timer(at: 3), "fired pull output"),
        (.input(3, at: 4), "kept @6 pull output"),
        // The end delivers the pending element at once, then the finish.
        (.end(failure: nil, at: 5), "ended output ending"),
        (.next(at: 5), "2 output ending"),
        (.next(at: 5), "3 output ending"),
        (.next(at: 5), "finish ending"),
        (.next(at: 5), "nothing ending"),
      ])
  }

  @Test func debounce_conflatesForASlowConsumerAndKeepsTheFailure() {
    checkLogic(
      DebounceLogic<Int, TestError, Instant>(interval: .seconds(2)),
      [
        (.input(1, at: 0), "kept @2 pull"),
        (.timer(at: 2), "fired pull output"),
        (.input(2, at: 2), "kept @4 pull output"),
        (.timer(at: 4), "fired, displaced 1 pull output"),
        (.end(failure: 7, at: 5), "ended output ending"),
        (.next(at: 5), "2 output ending"),
        (.next(at: 5), "fail 7 ending"),
      ])
  }

  // MARK: throttleFlow (interval 2)

  @Test func throttle_latest_passesTheFirstThenTheNewestOfEachWindow() {
    checkLogic(
      ThrottleLogic<Int, TestError, Instant>(interval: .seconds(2), latest: true),
      [
        (.input(1, at: 0), "kept @2 pull output"),
        (.input(2, at: 1), "kept @2 pull output"),
        (.input(3, at: 1), "kept, displaced 2 @2 pull output"),
        (.next(at: 1), "1 @2 pull"),
        (.timer(at: 2), "fired @4 pull output"),
        (.timer(at: 4), "fired pull output"),  // a quiet window closes
        (.next(at: 4), "3 pull"),
        (.input(4, at: 5), "kept @7 pull output"),
        (.next(at: 5), "4 @7 pull"),
        (.input(5, at: 6), "kept @7 pull"),
        // The end waits behind the pending element's window.
        (.end(failure: nil, at: 6), "ended @7"),
        (.timer(at: 7), "fired output ending"),
        (.next(at: 7), "5 output ending"),
        (.next(at: 7), "finish ending"),
      ])
  }

  @Test func throttle_first_refusesTheLaterElementsOfAWindow() {
    checkLogic(
      ThrottleLogic<Int, TestError, Instant>(interval: .seconds(2), latest: false),
      [
        (.input(1, at: 0), "kept @2 pull output"),
        (.input(2, at: 1), "kept @2 pull output"),
        (.input(3, at: 1), "refused 3 @2 pull output"),
        (.timer(at: 2), "fired, displaced 1 @4 pull output"),  // a slow consumer sees the newest
        (.next(at: 2), "2 @4 pull"),
        (.end(failure: 7, at: 3), "ended output ending"),
        (.next(at: 3), "fail 7 ending"),
      ])
  }

  // MARK: delayFlow (interval 2)

  @Test func delay_shiftsEveryElementAndTheEnd() {
    checkLogic(
      DelayLogic<Int, TestError, Instant>(interval: .seconds(2)),
      [
        (.input(1, at: 0), "kept @2 pull"),
        (.input(2, at: 1), "kept @2 pull"),
        (.end(failure: nil, at: 1), "ended @2"),
        (.timer(at: 2), "fired @3 output"),
        (.next(at: 2), "1 @3"),
        (.timer(at: 3), "fired output ending"),
        (.next(at: 3), "2 output ending"),
        (.next(at: 3), "finish ending"),
      ])
  }

  @Test func delay_stopsPullingBehindAStalledConsumer() {
    checkLogic(
      DelayLogic<Int, TestError, Instant>(interval: .seconds(2)),
      [
        (.input(1, at: 0), "kept @2 pull"),
        (.input(2, at: 0), "kept @2 pull"),
        (.timer(at: 2), "fired output"),  // two due, none in flight
        (.next(at: 2), "1 output"),  // still more due than in flight
        (.next(at: 2), "2 pull"),
      ])
  }

  // MARK: timeoutFlow (interval 2)

  @Test func timeout_countsFromTheStartAndFromEachHandOver() {
    checkLogic(
      TimeoutLogic<Int, TestError, TestError, Instant>(
        interval: .seconds(2), timeoutEnd: TestError(id: 99), mapFailure: { $0 }),
      [
        (.start(at: 0), "started @2 pull"),
        (.input(1, at: 1), "kept output"),  // paused while the element waits for the consumer
        (.next(at: 1), "1 @3 pull"),
        (.timer(at: 2), "fired @3 pull"),
        (.timer(at: 3), "fired output ending"),
        (.next(at: 3), "fail 99 ending"),
      ])
  }

  @Test func timeout_finishingAfter_andTheUpstreamsOwnEnd() {
    checkLogic(
      TimeoutLogic<Int, TestError, TestError, Instant>(interval: .seconds(2), timeoutEnd: nil, mapFailure: { $0 }),
      [
        (.start(at: 0), "started @2 pull"),
        (.timer(at: 2), "fired output ending"),
        (.next(at: 2), "finish ending"),
      ])
    checkLogic(
      TimeoutLogic<Int, TestError, TestError, Instant>(interval: .seconds(2), timeoutEnd: nil, mapFailure: { $0 }),
      [
        (.start(at: 0), "started @2 pull"),
        (.end(failure: 7, at: 1), "ended output ending"),
        (.timer(at: 2), "fired output ending"),  // the first end wins
        (.next(at: 2), "fail 7 ending"),
      ])
  }

  // MARK: sampleFlow (interval 2)

  @Test func sample_deliversTheNewestOfEachIntervalAtItsEnd() {
    checkLogic(
      SampleLogic<Int, TestError, Instant>(interval: .seconds(2)),
      [
        (.start(at: 0), "started pull"),
        (.input(1, at: 1), "kept @2 pull"),
        (.input(2, at: 1), "kept, displaced 1 @2 pull"),
        (.timer(at: 2), "fired pull output"),
        (.input(3, at: 2), "kept @4 pull output"),  // at the tick: the next interval
        (.next(at: 2), "2 @4 pull"),
        (.end(failure: nil, at: 3), "ended @4"),  // the end waits behind the element's turn
        (.timer(at: 4), "fired output ending"),
        (.next(at: 4), "3 output ending"),
        (.next(at: 4), "finish ending"),
      ])
  }

  @Test func sample_theTickComesFirstWhateverReachesTheLockFirst() {
    checkLogic(
      SampleLogic<Int, TestError, Instant>(interval: .seconds(2)),
      [
        (.start(at: 0), "started pull"),
        (.input(1, at: 1), "kept @2 pull"),
        (.input(2, at: 2), "kept @4 pull output"),  // the timer has not reported: 1 is sampled first
        (.timer(at: 2), "fired @4 pull output"),
        (.next(at: 2), "1 @4 pull"),
      ])
  }

  // MARK: collectFlow(every:) and collectFlow(count:orEvery:) (interval 2)

  @Test func collectByTime_deliversWhatArrivedInEachInterval() {
    checkLogic(
      CollectByTimeLogic<Int, TestError, Instant>(count: nil, interval: .seconds(2)),
      [
        (.start(at: 0), "started pull"),
        (.input(1, at: 1), "kept @2 pull"),
        (.input(2, at: 1), "kept @2 pull"),
        (.timer(at: 2), "fired output"),  // one array waiting holds up the input
        (.next(at: 2), "[1, 2] pull"),
        (.input(3, at: 3), "kept @4 pull"),
        (.end(failure: nil, at: 3), "ended output ending"),
        (.next(at: 3), "[3] output ending"),
        (.next(at: 3), "finish ending"),
      ])
  }

  @Test func collectByTime_deliversAFullArrayAtOnce() {
    checkLogic(
      CollectByTimeLogic<Int, TestError, Instant>(count: 2, interval: .seconds(2)),
      [
        (.start(at: 0), "started pull"),
        (.input(1, at: 0), "kept @2 pull"),
        (.input(2, at: 0), "kept output"),
        (.next(at: 0), "[1, 2] pull"),
        (.end(failure: 7, at: 1), "ended output ending"),
        (.next(at: 1), "fail 7 ending"),
      ])
  }

  // MARK: bufferFlow and Flow.callbacks

  @Test func buffer_newest_dropsTheOldestAndDeliversTheEndBehindTheBuffer() {
    checkLogic(
      BufferLogic<Int, TestError>(policy: .bufferingNewest(2), isPulled: true),
      [
        (.input(1, at: 0), "kept pull output"),
        (.input(2, at: 0), "kept pull output"),
        (.input(3, at: 0), "kept, displaced 1 pull output"),
        (.next(at: 0), "2 pull output"),
        (.end(failure: nil, at: 0), "ended output ending"),
        (.next(at: 0), "3 output ending"),
        (.next(at: 0), "finish ending"),
        (.next(at: 0), "nothing ending"),
      ])
  }

  @Test func buffer_oldest_refusesTheNewElementWhenFull() {
    checkLogic(
      BufferLogic<Int, TestError>(policy: .bufferingOldest(1), isPulled: true),
      [
        (.input(1, at: 0), "kept pull output"),
        (.input(2, at: 0), "refused 2 pull output"),
        (.end(failure: 7, at: 0), "ended output ending"),
        (.next(at: 0), "1 output ending"),
        (.next(at: 0), "fail 7 ending"),
      ])
  }

  @Test func buffer_callbacks_pushesWithoutPullingAndABoundOfZeroKeepsNothing() {
    checkLogic(
      BufferLogic<Int, TestError>(policy: .unbounded, isPulled: false),
      [
        (.input(1, at: 0), "kept output"),
        (.next(at: 0), "1"),
        (.end(failure: nil, at: 0), "ended output ending"),
        (.next(at: 0), "finish ending"),
      ])
    checkLogic(
      BufferLogic<Int, TestError>(policy: .bufferingNewest(0), isPulled: false), [(.input(1, at: 0), "refused 1")])
  }

  /// The buffer's storage stays where it is: an input that copied the buffer (as one under a
  /// guarded `case ... where` pattern does) would make every `send` cost the whole backlog.
  @Test func lifecycleInput_appendsInPlaceWithoutCopyingTheBuffer() {
    typealias Lifecycle = OperatorLifecycle<BufferLogic<Int, TestError>, Int, Int, Int, Int>
    var machine = Lifecycle(logic: BufferLogic(policy: .unbounded, isPulled: false))
    _ = machine.next(at: TimelessClock.Instant())
    for element in 1...3 { _ = machine.input(element, at: TimelessClock.Instant()) }
    let address = machine.logic?.buffer.storageAddress
    #expect(machine.logic?.buffer.capacity == 4)  // room for one more: no growth below
    #expect(machine.input(4, at: TimelessClock.Instant()).accepted)
    #expect(machine.logic?.buffer.storageAddress == address)
  }
}
