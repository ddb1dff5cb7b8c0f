import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `KeyedShareFlow` on the test clock: each key's upstream is a connection that counts its runs and
/// forwards what `feed` sends for its key; a message without a value ends that key's upstream.
@Suite("KeyedShareFlow", .hangGuard)
struct KeyedShareFlowTests {
  struct Message: Sendable {
    let key: String
    let value: Int?
  }

  let clock = TestClock()
  let feed = PassthroughFlow<Message, Never>()
  let connects = LockedState([String: Int]())

  func keyed(gracePeriod: Duration = .zero) -> KeyedShareFlow<String, Int, Never> {
    KeyedShareFlow(replay: 1, gracePeriod: gracePeriod, clock: clock) { [feed, connects] (key: String) in
      Flow { emitter in
        connects.withLock { $0[key, default: 0] += 1 }
        for await message in feed where message.key == key {
          guard let value = message.value else { return }
          await emitter.emit(value)
        }
      }
    }
  }

  func connectCount(_ key: String) -> Int { connects.withLock { $0[key] ?? 0 } }

  /// Subscribes a sink to `key` on the clock's schedule, and waits until `upstreams` run.
  func subscribe(
    _ keyed: KeyedShareFlow<String, Int, Never>, _ key: String, into log: EventLog<Int>, upstreams: Int
  ) async -> FlowSubscription {
    let subscription = await clock.onSchedule { keyed[key].sink { log.append($0) } }
    await clock.runCurrent()
    await feed.subscribers(count: upstreams)
    return subscription
  }

  func leave(_ subscription: FlowSubscription) async {
    await clock.onSchedule { subscription.cancel() }
    await clock.runCurrent()
  }

  func send(_ key: String, _ value: Int?) async {
    feed.send(Message(key: key, value: value))
    await clock.runCurrent()
  }

  @Test func twoKeysAtOnceHaveOneUpstreamEachAndNoEntryIsLeft() async {
    let keyed = keyed()
    let (apple, apple2, google) = (EventLog<Int>(), EventLog<Int>(), EventLog<Int>())
    let first = await subscribe(keyed, "AAPL", into: apple, upstreams: 1)
    let second = await subscribe(keyed, "GOOG", into: google, upstreams: 2)
    await send("AAPL", 1)
    await send("GOOG", 2)
    let third = await subscribe(keyed, "AAPL", into: apple2, upstreams: 2)  // joins: the replay first
    await send("AAPL", 3)
    #expect(apple.all == [1, 3])
    #expect(apple2.all == [1, 3])
    #expect(google.all == [2])
    #expect(connectCount("AAPL") == 1)
    #expect(connectCount("GOOG") == 1)
    #expect(keyed.keyCount == 2)
    for subscription in [first, second, third] { await leave(subscription) }
    await clock.run()
    #expect(feed.subscriberCount == 0)
    #expect(keyed.keyCount == 0)
  }

  @Test func aKeyThatComesBackWithinItsGracePeriodJoinsTheRunningUpstream() async {
    let keyed = keyed(gracePeriod: .seconds(5))
    let (first, second) = (EventLog<Int>(), EventLog<Int>())
    let screen = await subscribe(keyed, "AAPL", into: first, upstreams: 1)
    await send("AAPL", 1)
    await leave(screen)
    await clock.advance(by: .milliseconds(4_999))
    #expect(keyed.keyCount == 1)  // held through the grace period
    let next = await subscribe(keyed, "AAPL", into: second, upstreams: 1)
    await send("AAPL", 2)
    #expect(second.all == [1, 2])
    #expect(connectCount("AAPL") == 1)
    await leave(next)
    await clock.advance(by: .seconds(5))
    await clock.run()
    #expect(keyed.keyCount == 0)
  }

  @Test func aKeyThatComesBackAfterItsGracePeriodStartsANewUpstream() async {
    let keyed = keyed(gracePeriod: .seconds(5))
    let (first, second) = (EventLog<Int>(), EventLog<Int>())
    let screen = await subscribe(keyed, "AAPL", into: first, upstreams: 1)
    await send("AAPL", 1)
    await leave(screen)
    await clock.advance(by: .seconds(5))
    await clock.run()
    #expect(feed.subscriberCount == 0)
    #expect(keyed.keyCount == 0)  // forgotten with its upstream
    let next = await subscribe(keyed, "AAPL", into: second, upstreams: 1)
    await send("AAPL", 2)
    #expect(second.all == [2])  // a new run: no old replay
    #expect(connectCount("AAPL") == 2)
    await leave(next)
    await clock.run()
    #expect(keyed.keyCount == 0)
  }

  @Test func aKeyWhoseUpstreamEndedIsForgottenAndItsNextSubscriberStartsANewOne() async {
    let keyed = keyed()
    let (first, second) = (EventLog<Int>(), EventLog<Int>())
    let ended = LockedState(false)
    let screen = await clock.onSchedule {
      keyed["AAPL"].sink { _ in
        ended.withLock { $0 = true }
      } receiveValue: {
        first.append($0)
      }
    }
    await clock.runCurrent()
    await feed.subscribers(count: 1)
    await send("AAPL", 1)
    await send("AAPL", nil)  // the upstream finishes by itself
    await clock.run()
    #expect(first.all == [1])
    #expect(ended.withLock { $0 })
    #expect(keyed.keyCount == 0)
    let next = await subscribe(keyed, "AAPL", into: second, upstreams: 1)
    await send("AAPL", 2)
    #expect(second.all == [2])
    #expect(connectCount("AAPL") == 2)
    await leave(next)
    await clock.run()
    withExtendedLifetime(screen) {}
    #expect(keyed.keyCount == 0)
  }

  @Test func anIteratorMadeAndReleasedWithoutIteratingLeavesNoEntry() async {
    let keyed = keyed()
    var iterator: AsyncKeyedShareFlowSequence<String, Int, Never>.Iterator? = keyed["AAPL"].makeAsyncIterator()
    #expect(keyed.keyCount == 1)
    #expect(iterator != nil)
    iterator = nil
    #expect(keyed.keyCount == 0)
    #expect(connectCount("AAPL") == 0)
  }
}

/// `KeyedShareFlow` on real threads.
@Suite("KeyedShareFlow on threads", .hangGuard)
struct KeyedShareFlowThreadTests {
  /// Subscribers of two keys arriving at once from many tasks share one upstream per key, and once
  /// they have all left, the keys go.
  @Test func subscribersArrivingAtOnceShareOneUpstreamPerKey() async {
    let start = Gate()
    let connects = LockedState([Int: Int]())
    let keyed = KeyedShareFlow(bufferingPolicy: .bufferingNewest(8)) { (key: Int) in
      Flow<Int, Never> { emitter in
        connects.withLock { $0[key, default: 0] += 1 }
        await start.wait()  // every subscriber is in before the first element
        var value = 0
        while !Task.isCancelled {
          await emitter.emit(value)
          value += 1
        }
      }
    }
    let subscribers = 40
    var tasks: [Task<Int, Never>] = []
    for index in 0..<subscribers {
      let iterator = keyed[index % 2].makeAsyncIterator()  // subscribed before any task runs
      tasks.append(
        Task { [iterator] in
          var iterator = iterator
          var received = 0
          while received < 3, await iterator.next() != nil { received += 1 }
          return received
        })
    }
    #expect(keyed.keyCount == 2)
    await start.entered(count: 2)
    start.release()
    for task in tasks { #expect(await bounded(task, "a subscriber") == 3) }
    #expect(connects.withLock { $0 } == [0: 1, 1: 1])
    // The upstreams' ends are reported from their own tasks, after the last subscriber left.
    var yields = 0
    while keyed.keyCount > 0, yields < 100_000 {
      await Task.yield()
      yields += 1
    }
    #expect(keyed.keyCount == 0)
  }
}

/// `KeyedShareStateMachine`'s rules, event by event: when a key's entry goes, and that an old
/// generation's late report never touches the key's next entry.
@Suite("KeyedShareStateMachine")
struct KeyedShareStateMachineTests {
  typealias Machine = KeyedShareStateMachine<String, String>

  @Test func anEntryGoesOnlyWhenNoIteratorLivesAndItsUpstreamDoesNotRun() {
    var machine = Machine()
    let (share, generation) = machine.subscribe("A") { "share \($0)" }
    #expect(share == "share 0")
    machine.upstreamStarted("A", generation: generation)
    #expect(machine.iteratorReleased("A", generation: generation) == nil)  // the upstream runs on (grace)
    #expect(machine.subscribe("A") { "share \($0)" }.share == "share 0")  // back within it: the same share
    #expect(machine.iteratorReleased("A", generation: generation) == nil)
    #expect(machine.upstreamEnded("A", generation: generation, stopped: true) == "share 0")
    #expect(machine.entries.isEmpty)
  }

  @Test func aStoppedUpstreamKeepsTheEntryWhileAnIteratorLives() {
    var machine = Machine()
    let (_, generation) = machine.subscribe("A") { "share \($0)" }
    machine.upstreamStarted("A", generation: generation)
    // The grace period ran out while a new subscriber was being made: it restarts this share.
    #expect(machine.upstreamEnded("A", generation: generation, stopped: true) == nil)
    #expect(machine.iteratorReleased("A", generation: generation) == "share 0")
  }

  @Test func anUpstreamThatEndedByItselfTakesItsEntryAndLateReportsAreIgnored() {
    var machine = Machine()
    let (_, old) = machine.subscribe("A") { "share \($0)" }
    machine.upstreamStarted("A", generation: old)
    #expect(machine.upstreamEnded("A", generation: old, stopped: false) == "share 0")
    let (share, new) = machine.subscribe("A") { "share \($0)" }
    #expect(share == "share 1")
    #expect(machine.iteratorReleased("A", generation: old) == nil)  // the old share's subscriber left
    machine.upstreamStarted("A", generation: old)
    #expect(machine.entries["A"]?.upstream == .idle)
    #expect(machine.iteratorReleased("A", generation: new) == "share 1")
  }

  @Test func anIteratorReleasedBeforeItsUpstreamStartedTakesTheEntry() {
    var machine = Machine()
    let (_, generation) = machine.subscribe("A") { "share \($0)" }
    #expect(machine.iteratorReleased("A", generation: generation) == "share 0")
  }
}
