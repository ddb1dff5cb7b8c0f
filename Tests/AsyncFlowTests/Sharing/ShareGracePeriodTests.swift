import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `shareFlow(gracePeriod:clock:)` on the test clock: the upstream is a connection that counts its
/// runs and forwards what its `source` sends.
@Suite("shareFlow's grace period", .hangGuard)
struct ShareGracePeriodTests {
  let clock = TestClock()
  let source = PassthroughFlow<Int, Never>()
  let runs = LockedState(0)

  func connection() -> Flow<Int, Never> {
    Flow { [source, runs] emitter in
      runs.withLock { $0 += 1 }
      for await value in source { await emitter.emit(value) }
    }
  }

  func share(gracePeriod: Duration = .seconds(5)) -> AsyncShareFlowSequence<Int, Never> {
    connection().shareFlow(replay: 1, gracePeriod: gracePeriod, clock: clock)
  }

  /// Subscribes a sink on the clock's schedule, and waits until the upstream listens.
  func subscribe(_ share: AsyncShareFlowSequence<Int, Never>, into log: EventLog<Int>) async -> FlowSubscription {
    let subscription = await clock.onSchedule { share.sink { log.append($0) } }
    await clock.runCurrent()
    await source.subscribers(count: 1)
    return subscription
  }

  func leave(_ subscription: FlowSubscription) async {
    await clock.onSchedule { subscription.cancel() }
    await clock.runCurrent()
  }

  func send(_ value: Int) async {
    source.send(value)
    await clock.runCurrent()
  }

  @Test func aSubscriberWithinTheGracePeriodJoinsTheRunningUpstreamWithTheReplay() async {
    let share = share()
    let first = EventLog<Int>()
    let screen = await subscribe(share, into: first)
    await send(1)
    await leave(screen)  // at 0 s
    await send(2)  // during the grace period: the replay only
    #expect(first.all == [1])
    await clock.advance(by: .milliseconds(4999))
    let second = EventLog<Int>()
    let next = await subscribe(share, into: second)
    #expect(clock.pendingSleepers == 0)  // the grace timer was cancelled
    await send(3)
    #expect(second.all == [2, 3])
    #expect(runs.withLock { $0 } == 1)
    await leave(next)
    await clock.run()
    #expect(source.subscriberCount == 0)
  }

  @Test func aSubscriberAfterTheGracePeriodStartsANewRun() async {
    let share = share()
    let first = EventLog<Int>()
    let screen = await subscribe(share, into: first)
    await send(1)
    await leave(screen)
    await clock.advance(by: .seconds(5))  // the timer fires: the upstream stops
    #expect(source.subscriberCount == 0)
    #expect(clock.pendingSleepers == 0)
    let second = EventLog<Int>()
    let next = await subscribe(share, into: second)
    await send(2)
    #expect(second.all == [2])  // `.whileRunning`: the old run's replay is gone
    #expect(runs.withLock { $0 } == 2)
    await leave(next)
    await clock.run()
  }

  @Test func anIteratorLeavingStartsTheGracePeriodToo() async {
    let share = share()
    let first = clock.task {
      var iterator = share.makeAsyncIterator()
      return await iterator.next()
    }
    await clock.runCurrent()
    await source.subscribers(count: 1)
    await send(1)
    #expect(await bounded(first, "first") == 1)  // its iterator is gone: the grace period runs
    await clock.runCurrent()
    #expect(share.subscriberCount == 0)
    #expect(clock.pendingSleepers == 1)
    await clock.advance(by: .milliseconds(4999))
    let second = clock.task {
      var iterator = share.makeAsyncIterator()
      return await iterator.next()
    }
    #expect(await bounded(second, "second") == 1)  // the replay of the same run
    #expect(runs.withLock { $0 } == 1)
    await clock.run()
    #expect(source.subscriberCount == 0)
  }

  @Test func theUpstreamEndingDuringTheGracePeriodEndsLaterSubscribersAtOnce() async {
    let share = Flow<Int, TestError> { [source] (emitter) throws(TestError) in
      for await value in source { await emitter.emit(value) }
      throw TestError(id: 3)
    }.shareFlow(replay: 1, gracePeriod: .seconds(5), clock: clock)
    let subscription = await clock.onSchedule { share.sink { _ in } }
    await clock.runCurrent()
    await source.subscribers(count: 1)
    await leave(subscription)
    source.finish()  // the upstream fails during the grace period
    await clock.runCurrent()
    #expect(clock.pendingSleepers == 0)  // its timer ended with it
    guard let late = await bounded(clock.task { await collect(share) }, "the late subscriber") else { return }
    #expect(late.elements.isEmpty)
    #expect(late.failure == TestError(id: 3))
  }

  @Test func zeroGracePeriodStopsTheUpstreamAtOnce() async {
    let share = share(gracePeriod: .zero)
    let screen = await subscribe(share, into: EventLog())
    await leave(screen)
    #expect(clock.pendingSleepers == 0)
    #expect(source.subscriberCount == 0)
  }

  @Test func theDefaultsStillCompileAsBefore() {
    let plain: AsyncShareFlowSequence<Int, Never> = Flow.just(1).shareFlow()
    let replayed = Flow.just(1).shareFlow(replay: 1)
    let scoped = Flow.just(1).shareFlow(replay: 1, replayScope: .acrossRestarts, bufferingPolicy: .bufferingNewest(1))
    let graced = Flow.just(1).shareFlow(gracePeriod: .seconds(1))
    #expect([plain.subscriberCount, replayed.subscriberCount, scoped.subscriberCount, graced.subscriberCount] == [0, 0, 0, 0])
  }

  @Test func negativeGracePeriodIsAProgrammerError() async {
    await #expect(processExitsWith: .failure) {
      _ = Flow.just(1).shareFlow(gracePeriod: .seconds(-1))
    }
  }
}
