import AsyncFlowTesting
import Synchronization
import Testing

@testable import AsyncFlow

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// What a drop handler was told: every call's count, in order.
final class DropLog: Sendable {
  private let counts = LockedState<[Int]>([])

  var policyHandler: @Sendable (Int) -> Void { { count in self.counts.withLock { $0.append(count) } } }
  var all: [Int] { counts.withLock { $0 } }
  var total: Int { all.reduce(0, +) }
}

/// Every bounded buffer counts what each subscriber (each iteration) dropped, readable on the
/// iterator and the subscription, after the end too, and reports each drop to the policy's handler.
@Suite("Drops are counted", .hangGuard)
struct DropCountTests {
  // MARK: Subjects

  @Test func aPassthroughIteratorCountsTheNewElementsThatFoundItsBufferFull() async {
    let log = DropLog()
    let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingOldest(2).onDrop(log.policyHandler))
    var reader = subject.makeAsyncIterator()
    var other = subject.makeAsyncIterator()
    for value in 1...5 { subject.send(value) }
    #expect(reader.droppedCount == 3)
    #expect(log.all == [2, 2, 2])  // each send dropped one element of each of the two subscribers
    #expect(await reader.next() == 1)
    #expect(await reader.next() == 2)
    subject.send(6)
    #expect(await reader.next() == 6)
    subject.finish()
    #expect(await reader.next() == nil)
    #expect(reader.droppedCount == 3)  // readable after the end
    #expect(other.droppedCount == 4)
    #expect(await other.next() == 1)
  }

  @Test func aPassthroughIteratorCountsTheOldElementsThatGaveWay() async {
    let log = DropLog()
    let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingNewest(2).onDrop(log.policyHandler))
    var reader = subject.makeAsyncIterator()
    for value in 1...10 { subject.send(value) }
    #expect(await reader.next() == 9)
    #expect(await reader.next() == 10)
    #expect(reader.droppedCount == 8)
    #expect(log.total == 8)
  }

  @Test func bufferingNewestZeroDropsEverything() async {
    let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingNewest(0))
    let reader = subject.makeAsyncIterator()
    for value in 1...4 { subject.send(value) }
    #expect(reader.droppedCount == 4)
  }

  @Test func anUnboundedSubscriberDropsNothingAndNoHandlerIsCalled() async {
    let log = DropLog()
    let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .unbounded.onDrop(log.policyHandler))
    var reader = subject.makeAsyncIterator()
    for value in 1...100 { subject.send(value) }
    subject.finish()
    var received = 0
    while await reader.next() != nil { received += 1 }
    #expect(received == 100 && reader.droppedCount == 0 && log.all.isEmpty)
  }

  @Test func aCurrentValueSubscriberCountsTheValuesItNeverSaw() async {
    let filter = CurrentValueFlow(0)
    var reader = filter.makeAsyncIterator()
    for value in 1...5 { filter.value = value }
    #expect(await reader.next() == 5)
    #expect(reader.droppedCount == 5)  // the first value, then 1 to 4
  }

  @Test func twoPoliciesWithTheSameBoundAreEqualWhateverTheirHandlers() {
    #expect(FlowBufferingPolicy.bufferingNewest(3).onDrop { _ in } == .bufferingNewest(3))
    #expect(FlowBufferingPolicy.bufferingNewest(3).onDrop { _ in } != .bufferingOldest(3))
  }

  // MARK: Sinks

  @Test func aSlowSinkCountsItsDropsOnItsSubscriptionAfterTheEndToo() async {
    let log = DropLog()
    let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingNewest(1).onDrop(log.policyHandler))
    let gate = Gate()
    let received = LockedState<[Int]>([])
    let ended = Signal()
    let subscription = subject.sink { _ in ended.fire() } receiveValue: { value in
      received.withLock { $0.append(value) }
      if value == 1 { await gate.wait() }
    }
    subject.send(1)
    await gate.entered()  // the sink holds 1
    for value in 2...10 { subject.send(value) }
    #expect(subscription.droppedCount == 8)  // 2 to 9 gave way
    subject.finish()
    gate.release()
    #expect(await bounded("the sink's end") { await ended.wait() } != nil)
    #expect(received.withLock { $0 } == [1, 10])
    #expect(subscription.droppedCount == 8)
    #expect(log.total == 8)
  }

  @Test func aCancelledSinkKeepsItsCount() async {
    let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingOldest(1))
    let gate = Gate()
    let subscription = subject.sink { (_: Int) in await gate.wait() }
    subject.send(1)
    await gate.entered()
    for value in 2...4 { subject.send(value) }  // 2 is kept, 3 and 4 dropped
    subscription.cancel()
    gate.release()
    #expect(subscription.droppedCount == 2)
    #expect(subject.subscriberCount == 0)
  }

  @Test func aSinkOnAnyOtherSequenceHasNoBufferOfItsOwn() async {
    let done = Signal()
    let subscription = Flow.sequence([1, 2]).sink { _ in done.fire() } receiveValue: { (_: Int) in }
    #expect(await bounded("the sink's end") { await done.wait() } != nil)
    #expect(subscription.droppedCount == 0)
  }

  // MARK: Cancellation and the end

  /// The consumer parks (nothing kept: `bufferingNewest(0)`), and its task is cancelled: its
  /// cancellation handler removes it from the table, on another thread than the iterator's; the
  /// count stays readable on the iterator.
  @Test func aCancelledIteratorKeepsItsCount() async {
    let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingNewest(0))
    let subscribed = Signal()
    let consumer = Task {
      var reader = subject.makeAsyncIterator()
      subscribed.fire()
      let value = await reader.next()
      return (value, reader.droppedCount)
    }
    #expect(await bounded("the subscription") { await subscribed.wait() } != nil)
    for value in 1...3 { subject.send(value) }
    consumer.cancel()
    let result = await bounded(consumer, "the consumer")
    #expect(result?.0 == nil)
    #expect(result?.1 == 3)
    #expect(subject.subscriberCount == 0)
  }

  @Test func aReleasedIteratorForgetsItsCount() async {
    let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingOldest(1))
    do {
      let reader = subject.makeAsyncIterator()
      for value in 1...3 { subject.send(value) }
      #expect(reader.droppedCount == 2)
    }
    let counts = subject.storage.state.withLock {
      ($0.subscribers.departedIterators.count, $0.subscribers.iterators.count)
    }
    #expect(counts == (0, 0))
  }

  @Test func aReleasedSubscriptionForgetsItsCount() async {
    let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingOldest(1))
    let gate = Gate()
    do {
      let subscription = subject.sink { (_: Int) in await gate.wait() }
      subject.send(1)
      await gate.entered()
      for value in 2...4 { subject.send(value) }
      subscription.cancel()
      #expect(subject.storage.state.withLock { $0.subscribers.departedPush.count } == 1)
    }
    gate.release()
    #expect(subject.storage.state.withLock { $0.subscribers.departedPush.count } == 0)
  }

  // MARK: Shares

  @Test func aShareCountsEachSubscribersDropsAndReportsThemFromItsUpstream() async {
    let clock = TestClock()
    let log = DropLog()
    let produced = LockedState(0)
    let upstream = Flow<Int, Never>(bufferSize: 0) { emitter in
      for value in 1...50 {
        produced.withLock { $0 = value }
        await emitter.emit(value)
      }
    }
    let shared = upstream.shareFlow(bufferingPolicy: .bufferingOldest(4).onDrop(log.policyHandler))
    let result = await clock.task {
      var slow = shared.makeAsyncIterator()
      var fast = shared.makeAsyncIterator()
      var received = (slow: [Int](), fast: [Int]())
      received.slow.append(await slow.next()!)  // starts the upstream
      await clock.runCurrent()  // it runs to its end while neither takes more
      #expect(produced.withLock { $0 } == 50)
      while let value = await fast.next() { received.fast.append(value) }
      while let value = await slow.next() { received.slow.append(value) }
      return (received, slow.droppedCount, fast.droppedCount)
    }.value
    #expect(result.0.slow == [1, 2, 3, 4, 5])
    #expect(result.0.slow.count + result.1 == 50)
    #expect(result.0.fast.count + result.2 == 50)
    #expect(log.total == result.1 + result.2)
  }

  @Test func aKeyedShareIteratorCountsItsDrops() async {
    let clock = TestClock()
    let quotes = KeyedShareFlow(bufferingPolicy: .bufferingNewest(2)) { (symbol: String) in
      Flow.sequence(Array(1...20))
    }
    let result = await clock.task {
      var reader = quotes["AAPL"].makeAsyncIterator()
      var received: [Int] = []
      received.append(await reader.next()!)
      await clock.runCurrent()
      while let value = await reader.next() { received.append(value) }
      return (received, reader.droppedCount)
    }.value
    #expect(result.0.count + result.1 == 20)
    #expect(result.0.last == 20)
    #expect(result.1 > 0)
  }

  // MARK: bufferFlow and Flow.callbacks

  /// Emits 1 to 10, each as the pull asks: the consumer takes the first, then the producer runs
  /// to its end while the consumer holds back.
  private var tenElements: Flow<Int, Never> {
    Flow(bufferSize: 0) { emitter in
      for value in 1...10 { await emitter.emit(value) }
    }
  }

  @Test func bufferFlowCountsWhatItsPolicyDroppedOnItsIterator() async {
    let clock = TestClock()
    let log = DropLog()
    let result = await clock.task {
      var iterator = tenElements.bufferFlow(policy: .bufferingNewest(3).onDrop(log.policyHandler))
        .makeAsyncIterator()
      var received = [await iterator.next()!]
      await clock.runCurrent()  // the upstream runs to its end meanwhile
      while let value = await iterator.next() { received.append(value) }
      return (received, iterator.droppedCount)
    }.value
    #expect(result.0 == [1, 8, 9, 10])
    #expect(result.1 == 6)  // readable after the end
    #expect(log.all == [1, 1, 1, 1, 1, 1])
  }

  @Test func bufferFlowOldestCountsTheRefusedElements() async {
    let clock = TestClock()
    let result = await clock.task {
      var iterator = tenElements.bufferFlow(policy: .bufferingOldest(3)).makeAsyncIterator()
      var received = [await iterator.next()!]
      await clock.runCurrent()
      while let value = await iterator.next() { received.append(value) }
      return (received, iterator.droppedCount)
    }.value
    #expect(result.0 == [1, 2, 3, 4])
    #expect(result.1 == 6)
  }

  @Test func aCancelledBufferFlowKeepsItsCount() async {
    let clock = TestClock()
    let result = await clock.task {
      var iterator = tenElements.bufferFlow(policy: .bufferingOldest(2)).makeAsyncIterator()
      _ = await iterator.next()
      await clock.runCurrent()
      withUnsafeCurrentTask { $0?.cancel() }
      let after = await iterator.next()
      return (after, iterator.droppedCount)
    }.value
    #expect(result.0 == nil)
    #expect(result.1 == 7)  // 1 received, 2 and 3 kept, 4 to 10 refused
  }

  @Test func callbacksReportTheirDropsToThePolicysHandler() async {
    let clock = TestClock()
    let log = DropLog()
    let newest = Flow<Int, Never>.callbacks(bufferingPolicy: .bufferingNewest(2).onDrop(log.policyHandler)) {
      callbacks in
      for value in 1...6 { callbacks.send(value) }
      callbacks.finish()
      return {}
    }
    let received = await clock.task { await collect(newest).elements }.value
    #expect(received == [5, 6])
    #expect(log.total == 4)
    let oldestLog = DropLog()
    let oldest = Flow<Int, Never>.callbacks(bufferingPolicy: .bufferingOldest(2).onDrop(oldestLog.policyHandler)) {
      callbacks in
      for value in 1...6 { callbacks.send(value) }
      callbacks.finish()
      return {}
    }
    #expect(await clock.task { await collect(oldest).elements }.value == [1, 2])
    #expect(oldestLog.total == 4)
  }

  /// The handler runs after the lock: it may call back into the source it was told about.
  @Test func theHandlerMayCallBackIntoTheSource() async {
    let reentered = LockedState(0)
    let holder = LockedState<PassthroughFlow<Int, Never>?>(nil)
    let subject = PassthroughFlow<Int, Never>(
      bufferingPolicy: .bufferingOldest(1).onDrop { _ in
        guard let subject = holder.withLock({ $0 }) else { return }
        reentered.withLock { $0 += subject.subscriberCount }
      })
    holder.withLock { $0 = subject }
    let reader = subject.makeAsyncIterator()
    for value in 1...3 { subject.send(value) }
    #expect(reentered.withLock { $0 } == 2)
    #expect(reader.droppedCount == 2)
    holder.withLock { $0 = nil }
  }
}

/// 200 subscribers of one subject on real threads, 5 of them slow (each blocked on a gate after its
/// first element): for every one, what it received and what its buffer dropped add up to what was
/// sent. Half are iterators, half sinks.
///
/// 10,000 events by default: the 195 fast subscribers take one element per lock each (a bounded
/// buffer), and on 100,000 events the test holds both cores of a 2-core machine for 80 to 100 s
/// in a debug build, long enough for the real-thread tests that run beside it to pass their
/// 60-second limits. `ASYNCFLOW_DROP_EVENTS=100000 swift test --filter DropCountStressTests` runs
/// it on 100,000, alone.
@Suite("Drops are counted on real threads", .hangGuard)
struct DropCountStressTests {
  static var sent: Int {
    if let value = getenv("ASYNCFLOW_DROP_EVENTS"), let events = Int(String(cString: value)), events > 65 {
      return events
    }
    return 10_000
  }

  final class Tally: Sendable {
    let received = Atomic(0)
    let ended = Signal()
  }

  @Test func everySubscriberReceivesOrCountsEveryEvent() async {
    let sent = Self.sent
    let log = DropLog()
    let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingNewest(64).onDrop(log.policyHandler))
    let gate = Gate()
    let slowIterators: Set<Int> = [0, 33, 66]
    let slowSinks: Set<Int> = [10, 90]
    // Iterators, each in a task of its own.
    let iterators = (0..<100).map { index in
      let subscribed = Signal()
      let task = Task.detached {
        var iterator = subject.makeAsyncIterator()
        subscribed.fire()
        var received = 0
        while await iterator.next() != nil {
          received += 1
          if received == 1, slowIterators.contains(index) { await gate.wait() }
        }
        return (received, iterator.droppedCount)
      }
      return (task, subscribed)
    }
    for (_, subscribed) in iterators {
      guard await bounded("the iterators' subscriptions", { await subscribed.wait() }) != nil else { return }
    }
    // Sinks, each a mailbox of the subject.
    let sinks = (0..<100).map { index in
      let tally = Tally()
      let subscription = subject.sink { _ in tally.ended.fire() } receiveValue: { (_: Int) in
        let received = tally.received.add(1, ordering: .relaxed).newValue
        if received == 1, slowSinks.contains(index) { await gate.wait() }
      }
      return (subscription, tally)
    }
    #expect(subject.subscriberCount == 200)
    // The first element, then the slow ones park on the gate: from then on they keep only 64.
    subject.send(1)
    #expect(await bounded("the slow subscribers") { await gate.entered(count: 5) } != nil)
    let sender = Task.detached {
      for value in 2...sent { subject.send(value) }
      subject.finish()
    }
    _ = await bounded(sender, "the sender")
    gate.release()
    var droppedBySlow = 0
    var total = 0
    for (index, (task, _)) in iterators.enumerated() {
      guard let (received, dropped) = await bounded(task, "iterator \(index)") else { return }
      #expect(received + dropped == sent, "iterator \(index): \(received) received, \(dropped) dropped")
      if slowIterators.contains(index) { droppedBySlow += dropped }
      total += dropped
    }
    for (index, (subscription, tally)) in sinks.enumerated() {
      guard await bounded("sink \(index)", { await tally.ended.wait() }) != nil else { return }
      let received = tally.received.load(ordering: .relaxed)
      let dropped = subscription.droppedCount
      #expect(received + dropped == sent, "sink \(index): \(received) received, \(dropped) dropped")
      if slowSinks.contains(index) { droppedBySlow += dropped }
      total += dropped
    }
    // Each slow one received its first element and the last 64, and dropped the rest.
    #expect(droppedBySlow == 5 * (sent - 1 - 64))
    #expect(log.total == total)
  }
}
