import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `shareFlow(gracePeriod:clock:)` when the last subscriber leaves from outside the clock's
/// schedule: the test's body (not on the clock, as this suite is not `.onTestClock`) cancels the
/// consumer task, whose cancellation handler unsubscribes right there, or cancels a sink. The
/// grace timer must still run where the upstream runs, on the clock's executor: otherwise
/// `advance` wakes it off the schedule (the clock records an issue) and does not wait for it to
/// stop the upstream.
///
/// The upstream delivers its elements, if any, then parks until the share cancels it; `lifetimes`
/// counts it running.
@Suite("shareFlow's grace period, left from off the clock", .hangGuard)
struct ShareGracePeriodLeavingOffTheClockTests {
  let clock = TestClock()
  let lifetimes = Lifetimes()
  let never = Gate()

  func share(_ elements: [Int] = []) -> AsyncShareFlowSequence<Int, Never> {
    Flow { [lifetimes, never] emitter in
      lifetimes.start()
      defer { lifetimes.end() }
      for element in elements { await emitter.emit(element) }
      await never.wait()
    }.shareFlow(replay: 1, gracePeriod: .seconds(2), clock: clock)
  }

  /// The upstream runs on for the 2 s of the grace period, then stops, with no sleeper left.
  func expectStopsAfterTheGracePeriod(_ share: AsyncShareFlowSequence<Int, Never>) async {
    await clock.runCurrent()
    #expect(share.subscriberCount == 0)
    #expect(lifetimes.live == 1, "the grace period keeps the upstream")
    #expect(clock.pendingSleepers == 1, "the grace timer sleeps on the clock")
    await clock.advance(by: .milliseconds(1999))
    #expect(lifetimes.live == 1)
    await clock.advance(by: .milliseconds(1))
    #expect(lifetimes.live == 0, "the upstream still runs past the grace period")
    #expect(clock.pendingSleepers == 0)
    #expect(lifetimes.started == 1)
  }

  @Test func anIteratorCancelledWhileWaitingForAFirstElementStopsTheUpstreamAfterTheGracePeriod() async {
    let share = share()
    let consumer = clock.task { await collect(share) }
    await clock.runCurrent()
    #expect(lifetimes.live == 1)
    consumer.cancel()
    await expectStopsAfterTheGracePeriod(share)
    let result = await clock.value(of: consumer)
    #expect(result?.elements == [])
  }

  @Test func anIteratorCancelledWhileWaitingForASecondElementStopsTheUpstreamAfterTheGracePeriod() async {
    let share = share([7])
    let consumer = clock.task { await collect(share) }
    await clock.runCurrent()
    consumer.cancel()
    await expectStopsAfterTheGracePeriod(share)
    let result = await clock.value(of: consumer)
    #expect(result?.elements == [7])
  }

  /// A sink subscribed on the clock (its upstream starts there), cancelled, or released, from the
  /// test's body before anything arrived.
  @Test(arguments: [false, true])
  func aSinkLeavingBeforeAFirstElementStopsTheUpstreamAfterTheGracePeriod(releasing: Bool) async {
    let share = share()
    let log = EventLog<Int>()
    var subscription: FlowSubscription? = await clock.onSchedule { share.sink { log.append($0) } }
    await clock.runCurrent()
    #expect(lifetimes.live == 1)
    if releasing { subscription = nil } else { subscription?.cancel() }
    await expectStopsAfterTheGracePeriod(share)
    #expect(log.all.isEmpty)
    _ = subscription
  }

  @Test func severalSubscribersLeavingTogetherStopTheUpstreamOnceAfterTheGracePeriod() async {
    let share = share([1])
    let consumers = (0..<2).map { _ in clock.task { await collect(share) } }
    let log = EventLog<Int>()
    let subscription = await clock.onSchedule { share.sink { log.append($0) } }
    await clock.runCurrent()
    #expect(share.subscriberCount == 3)
    for consumer in consumers { consumer.cancel() }
    subscription.cancel()
    await expectStopsAfterTheGracePeriod(share)
    for consumer in consumers { #expect(await clock.value(of: consumer)?.elements == [1]) }
  }

  /// Cancelling the parent cancels every child at once, each child's handler running in the
  /// canceller's context, off the clock.
  @Test func aTaskGroupOfSubscribersCancelledAtOnceStopsTheUpstreamAfterTheGracePeriod() async {
    let share = share()
    let parent = clock.task {
      await withTaskGroup(of: Int.self) { group in
        for _ in 0..<3 { group.addTask { await collect(share).elements.count } }
        return await group.reduce(0, +)
      }
    }
    await clock.runCurrent()
    #expect(share.subscriberCount == 3)
    parent.cancel()
    await expectStopsAfterTheGracePeriod(share)
    #expect(await clock.value(of: parent) == 0)
  }

  /// After the grace period ran out off the clock, a new subscriber starts a new run there.
  @Test func aSubscriberAfterTheGracePeriodStartsANewRunOnTheClock() async {
    let share = share([5])
    let first = clock.task { await collect(share) }
    await clock.runCurrent()
    first.cancel()
    await expectStopsAfterTheGracePeriod(share)
    let second = clock.task { await collect(share) }
    await clock.runCurrent()
    #expect(lifetimes.started == 2)
    second.cancel()
    await clock.advance(by: .seconds(2))
    #expect(lifetimes.live == 0)
    #expect(clock.pendingSleepers == 0)
    #expect(await clock.value(of: second)?.elements == [5])
  }
}
