import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

@Suite("PassthroughFlow, CurrentValueFlow, shareFlow, sink", .hangGuard)
struct HotSourcesTests {
  // MARK: PassthroughFlow

  @Test func subscriberIsRegisteredWhenItsIteratorIsMade() async throws {
    let subject = PassthroughFlow<Int, Never>()
    subject.send(0)  // nobody listens: dropped
    var iterator = subject.makeAsyncIterator()
    #expect(subject.subscriberCount == 1)
    subject.send(1)
    #expect(await iterator.next() == 1)
  }

  @Test func everySubscriberGetsEveryValueInOrder() async {
    let subject = PassthroughFlow<Int, Never>()
    var fast = subject.makeAsyncIterator()
    var slow = subject.makeAsyncIterator()
    for value in 1...100 { subject.send(value) }
    subject.finish()
    var fastValues: [Int] = []
    while let value = await fast.next() { fastValues.append(value) }
    var slowValues: [Int] = []
    while let value = await slow.next() { slowValues.append(value) }
    #expect(fastValues == Array(1...100))
    #expect(slowValues == Array(1...100))
  }

  @Test func bufferingPoliciesKeepWhatTheySay() async {
    let newest = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingNewest(2))
    let oldest = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingOldest(2))
    var newestIterator = newest.makeAsyncIterator()
    var oldestIterator = oldest.makeAsyncIterator()
    for value in 1...5 {
      newest.send(value)
      oldest.send(value)
    }
    newest.finish()
    oldest.finish()
    var newestValues: [Int] = []
    while let value = await newestIterator.next() { newestValues.append(value) }
    var oldestValues: [Int] = []
    while let value = await oldestIterator.next() { oldestValues.append(value) }
    #expect(newestValues == [4, 5])
    #expect(oldestValues == [1, 2])
    #expect(FlowBufferingPolicy.bufferingNewest(2) != .bufferingOldest(2))
  }

  /// The bound holds for what the subscriber receives: the elements it has not received yet are
  /// inside the policy, not in a batch it took earlier.
  @Test func boundedPoliciesHoldForWhatTheSubscriberReceives() async throws {
    let newest = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingNewest(3))
    let oldest = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingOldest(3))
    var newestIterator = newest.makeAsyncIterator()
    var oldestIterator = oldest.makeAsyncIterator()
    for value in 1...3 {
      newest.send(value)
      oldest.send(value)
    }
    var newestValues = [try #require(await newestIterator.next())]
    var oldestValues = [try #require(await oldestIterator.next())]
    for value in 4...10 {
      newest.send(value)
      oldest.send(value)
    }
    newest.finish()
    oldest.finish()
    while let value = await newestIterator.next() { newestValues.append(value) }
    while let value = await oldestIterator.next() { oldestValues.append(value) }
    #expect(newestValues == [1, 8, 9, 10])
    #expect(oldestValues == [1, 2, 3, 4])
  }

  @Test func finishAndFailEndSubscribersAfterTheirBuffer() async throws {
    let subject = PassthroughFlow<Int, TestError>()
    var iterator = subject.makeAsyncIterator()
    subject.send(1)
    subject.fail(TestError(id: 3))
    subject.send(2)  // ignored after the end
    #expect(try await iterator.next() == 1)
    await #expect(throws: TestError(id: 3)) { try await iterator.next() }
    #expect(try await iterator.next() == nil)
    // A subscriber made after the end fails at once.
    var late = subject.makeAsyncIterator()
    await #expect(throws: TestError(id: 3)) { try await late.next() }

    let finished = PassthroughFlow<Int, Never>()
    finished.finish()
    #expect(await collect(finished).elements.isEmpty)
  }

  @Test func cancelledOrReleasedSubscribersAreRemovedAtOnce() async {
    let subject = PassthroughFlow<Int, Never>()
    do {
      let iterator = subject.makeAsyncIterator()
      #expect(subject.subscriberCount == 1)
      _ = iterator
    }
    #expect(subject.subscriberCount == 0)
    let started = Signal()
    let consumer = Task {
      var iterator = subject.makeAsyncIterator()
      started.fire()
      return await iterator.next()
    }
    await started.wait()
    consumer.cancel()
    #expect(await bounded(consumer, "consumer") == .some(nil))
    #expect(subject.subscriberCount == 0)
  }

  @Test func manySendersLoseNothingAndKeepEachSendersOrder() async {
    let subject = PassthroughFlow<(sender: Int, value: Int), Never>()
    let perSender = 10_000
    let received = await withTaskGroup(of: [[Int]].self) { group in
      for _ in 0..<4 {
        group.addTask {
          var iterator = subject.makeAsyncIterator()
          var bySender = [[Int]](repeating: [], count: 8)
          for _ in 0..<(8 * perSender) {
            guard let (sender, value) = await iterator.next() else { break }
            bySender[sender].append(value)
          }
          return bySender
        }
      }
      // Every subscriber is registered before the first value is sent (a barrier, not a guess).
      await subject.subscribers(count: 4)
      await withTaskGroup(of: Void.self) { senders in
        for sender in 0..<8 {
          senders.addTask {
            for value in 0..<perSender { subject.send((sender, value)) }
          }
        }
      }
      return await group.reduce(into: []) { $0.append($1) }
    }
    #expect(received.count == 4)
    for bySender in received {
      #expect(bySender.allSatisfy { $0 == Array(0..<perSender) })
    }
  }

  @Test func subscribersCountIsABarrierThatReturnsOnCancellation() async {
    let subject = PassthroughFlow<Int, Never>()
    let current = CurrentValueFlow(0)
    let shared = subject.shareFlow()
    await subject.subscribers(count: 0)  // reached at once
    let waiting = Task {
      await subject.subscribers(count: 2)
      await current.subscribers(count: 1)
      await shared.subscribers(count: 1)
    }
    let first = subject.makeAsyncIterator()
    let second = subject.makeAsyncIterator()
    let third = current.makeAsyncIterator()
    let fourth = shared.makeAsyncIterator()
    await bounded(waiting, "waiting")
    _ = (first, second, third, fourth)
    #expect(shared.subscriberCount == 1)
    // A cancelled waiter returns although the count is never reached.
    let cancelled = Task { await subject.subscribers(count: 10) }
    cancelled.cancel()
    await bounded(cancelled, "cancelled")
    await inCancelledTask { await current.subscribers(count: 10) }
  }

  @Test func negativeSubscriberCountIsAProgrammerError() async {
    await #expect(processExitsWith: .failure) {
      await PassthroughFlow<Int, Never>().subscribers(count: -1)
    }
  }

  // MARK: CurrentValueFlow

  @Test func currentValueGoesFirstThenLaterValuesConflated() async {
    let current = CurrentValueFlow(1)
    var iterator = current.makeAsyncIterator()
    #expect(await iterator.next() == 1)
    current.send(2)
    current.send(3)
    current.value = 4  // a slow subscriber sees only the latest
    #expect(await iterator.next() == 4)
    #expect(current.value == 4)
    var late = current.makeAsyncIterator()
    #expect(await late.next() == 4)
    current.finish()
    #expect(await iterator.next() == nil)
    #expect(await collect(current).elements.isEmpty)  // after the end: finishes at once
  }

  // MARK: shareFlow

  @Test func shareIteratesTheUpstreamOnceAndReplaysToLateSubscribers() async {
    let iterations = LockedState(0)
    let gate = Gate()
    let upstream = Flow<Int, Never>(bufferSize: 0) { emitter in
      iterations.withLock { $0 += 1 }
      await emitter.emit(1)
      await emitter.emit(2)
      await gate.wait()
      await emitter.emit(3)
    }
    let shared = upstream.shareFlow(replay: 1)
    var first = shared.makeAsyncIterator()
    #expect(iterations.withLock { $0 } == 0)  // started by the first next(), not by subscribing
    #expect(await first.next() == 1)
    #expect(await first.next() == 2)
    await gate.entered()
    var late = shared.makeAsyncIterator()  // replays 2, then live
    gate.release()
    #expect(await late.next() == 2)
    #expect(await late.next() == 3)
    #expect(await late.next() == nil)
    #expect(await first.next() == 3)
    #expect(await first.next() == nil)
    #expect(iterations.withLock { $0 } == 1)
  }

  @Test func shareCancelsTheUpstreamWhenTheLastSubscriberLeaves() async {
    let ended = Signal()
    let upstream = Flow<Int, Never> { emitter in
      defer { ended.fire() }
      var value = 0
      while !Task.isCancelled {
        value += 1
        await emitter.emit(value)
      }
    }
    let shared = upstream.shareFlow()
    do {
      var iterator = shared.makeAsyncIterator()
      #expect(await iterator.next() == 1)
    }
    await bounded("the upstream's end once its last subscriber left") { await ended.wait() }
    #expect(ended.isFired)
  }

  @Test func shareDeliversTheUpstreamFailureToEverySubscriber() async {
    let gate = Gate()
    let upstream = Flow<Int, TestError> { emitter throws(TestError) in
      await gate.wait()
      throw TestError(id: 8)
    }
    let shared = upstream.shareFlow()
    let clock = TestClock()
    let a = clock.task { await collect(shared).failure }
    let b = clock.task { await collect(shared).failure }
    await clock.runCurrent()  // both have subscribed and wait; the upstream is parked
    #expect(gate.parkedCount == 1)
    gate.release()
    #expect(await bounded(a, "a") == TestError(id: 8))
    #expect(await bounded(b, "b") == TestError(id: 8))
  }

  /// Run n of the upstream produces n01, then waits. Each subscriber below takes one element and
  /// leaves, which stops the upstream; the next one starts it again.
  private func restartingUpstream() -> Flow<Int, Never> {
    let runs = LockedState(0)
    let gate = Gate()
    return Flow<Int, Never>(bufferSize: 0) { emitter in
      let run = runs.withLock { runs in
        runs += 1
        return runs
      }
      await emitter.emit(run * 100 + 1)
      await gate.wait()  // until cancelled
    }
  }

  @Test func shareReplaysOnlyTheRunningIterationByDefault() async {
    let shared = restartingUpstream().shareFlow(replay: 1)
    do {
      var first = shared.makeAsyncIterator()
      #expect(await first.next() == 101)
    }  // the upstream stops: its replay goes with it
    var second = shared.makeAsyncIterator()
    #expect(await second.next() == 201)
  }

  @Test func shareReplaysThePreviousRunAcrossRestartsWhenAsked() async {
    let shared = restartingUpstream().shareFlow(replay: 1, replayScope: .acrossRestarts)
    do {
      var first = shared.makeAsyncIterator()
      #expect(await first.next() == 101)
    }
    var second = shared.makeAsyncIterator()
    #expect(await second.next() == 101)  // the last known value first...
    #expect(await second.next() == 201)  // ...then the new run's
    #expect(FlowReplayScope.whileRunning != .acrossRestarts)
    #expect("\(FlowReplayScope.acrossRestarts)" == ".acrossRestarts")
  }

  @Test func shareFlowIsAConcreteSequenceWhoseIteratorThrowsTheUpstreamsFailure() async {
    let shared: AsyncShareFlowSequence<Int, TestError> = Flow<Int, TestError>.fail(TestError(id: 9)).shareFlow()
    var iterator = shared.makeAsyncIterator()
    do throws(TestError) {
      _ = try await iterator.next()
      Issue.record("expected the upstream's failure")
    } catch {
      #expect(error == TestError(id: 9))
    }
  }

  // MARK: sink

  @Test func sinkStartsAtOnceAndStopsDeliveringOnCancel() async {
    let subject = PassthroughFlow<Int, Never>()
    let received = LockedState<[Int]>([])
    let gotOne = Signal()
    let subscription = subject.sink { @MainActor value in
      received.withLock { $0.append(value) }
      gotOne.fire()
    }
    await subject.subscribers(count: 1)
    subject.send(1)
    await gotOne.wait()
    await MainActor.run { subscription.cancel() }
    #expect(subject.subscriberCount == 0)  // unsubscribed when cancel() returned: 2 is not buffered
    subject.send(2)
    #expect(received.withLock { $0 } == [1])
  }

  @Test func sinkReportsCompletionAndReleasingCancels() async {
    let done = Signal()
    let completion = LockedState<String>("")
    let subscription = Flow<Int, TestError>.fail(TestError(id: 4)).sink { result in
      if case .failure(let error) = result { completion.withLock { $0 = "failed \(error.id)" } }
      done.fire()
    } receiveValue: { _ in
    }
    await done.wait()
    #expect(completion.withLock { $0 } == "failed 4")
    var subscriptions = Set<FlowSubscription>()
    subscription.store(in: &subscriptions)
    #expect(subscriptions.contains(subscription))

    let subject = PassthroughFlow<Int, Never>()
    var released: FlowSubscription? = subject.sink { _ in }
    await subject.subscribers(count: 1)
    released = nil
    _ = released
    #expect(subject.subscriberCount == 0)  // releasing cancelled it
  }
}

@Suite("shareFlow races", .hangGuard)
struct ShareFlowRaceTests {
  /// The last subscriber leaves while a new one arrives: the newcomer registered first, so the
  /// departure must not stop the upstream under it.
  @Test func aSubscriberArrivingWhileTheLastLeavesKeepsTheUpstream() async {
    let stopped = Signal()
    let iterations = LockedState(0)
    let upstream = Flow<Int, Never>(bufferSize: 0) { emitter in
      iterations.withLock { $0 += 1 }
      defer { stopped.fire() }
      var value = 0
      while !Task.isCancelled {
        value += 1
        await emitter.emit(value)
      }
    }
    let shared = AsyncShareFlowSequence(base: upstream, replay: 0, bufferingPolicy: .unbounded)
    var first: AsyncShareFlowSequence<Int, Never>.Iterator? = shared.makeAsyncIterator()
    #expect(await first?.next() != nil)  // starts the upstream
    var second = shared.makeAsyncIterator()  // the newcomer registers...
    first = nil  // ...and the last one before it leaves
    #expect(await second.next() != nil)
    #expect(!stopped.isFired)
    #expect(iterations.withLock { $0 } == 1)
  }

  /// Subscribers come and go from 8 tasks at once, so that the last one leaves while others
  /// arrive, again and again: every one is served (none waits on a stopped upstream), and the
  /// upstream is stopped at the end.
  @Test func subscribersComingAndGoingConcurrentlyAreAlwaysServed() async {
    let upstream = Flow<Int, Never>(bufferSize: 0) { emitter in
      var value = 0
      while !Task.isCancelled {
        value += 1
        await emitter.emit(value)
      }
    }
    let shared = upstream.shareFlow(bufferingPolicy: .bufferingNewest(1))
    let served = await withTaskGroup(of: Int.self) { group in
      for _ in 0..<8 {
        group.addTask {
          var served = 0
          for _ in 0..<200 {
            var iterator = shared.makeAsyncIterator()
            if await iterator.next() != nil { served += 1 }
          }
          return served
        }
      }
      return await group.reduce(0, +)
    }
    #expect(served == 1600)
    #expect(shared.subscriberCount == 0)
  }

  /// An iteration stopped when the last subscriber left, but which ignores cancellation, produces
  /// one more element after a newcomer started a new iteration: that element is dropped.
  @Test func aStoppedIterationCannotSendALateElement() async {
    let lateElement = Signal()
    let staleIterationEnded = Signal()
    let secondIterationGate = Gate()
    let shared = AsyncShareFlowSequence(
      base: ScriptedUpstream(
        lateElement: lateElement, staleIterationEnded: staleIterationEnded, gate: secondIterationGate),
      replay: 0, bufferingPolicy: .unbounded)
    do {
      var first = shared.makeAsyncIterator()
      #expect(await first.next() == 101)
    }  // the last subscriber left: iteration 1 is stopped, but waits for `lateElement`
    var second = shared.makeAsyncIterator()
    #expect(await second.next() == 201)  // iteration 2
    await secondIterationGate.entered()
    lateElement.fire()  // iteration 1 produces 102...
    await staleIterationEnded.wait()  // ...which the share refuses: the iteration ends there
    secondIterationGate.release()
    #expect(await second.next() == nil)
  }
}

/// An upstream whose iteration n produces n01, then: iteration 1 waits for `lateElement` ignoring
/// cancellation and produces 102; iteration 2 waits at `gate` and finishes.
private struct ScriptedUpstream: AsyncSequence, Sendable {
  let lateElement: Signal
  let staleIterationEnded: Signal
  let gate: Gate
  private let iterations = LockedState(0)

  init(lateElement: Signal, staleIterationEnded: Signal, gate: Gate) {
    self.lateElement = lateElement
    self.staleIterationEnded = staleIterationEnded
    self.gate = gate
  }

  /// Fires its signal when the iteration that holds it is released.
  final class EndToken: Sendable {
    let signal: Signal?
    init(_ signal: Signal?) { self.signal = signal }
    deinit { signal?.fire() }
  }

  struct AsyncIterator: AsyncIteratorProtocol {
    let iteration: Int
    let upstream: ScriptedUpstream
    let token: EndToken
    var produced = 0

    mutating func next() async -> Int? {
      produced += 1
      switch (iteration, produced) {
      case (_, 1):
        return iteration * 100 + 1
      case (1, 2):
        await upstream.lateElement.wait()
        return 102
      case (2, 2):
        await upstream.gate.wait()
        return nil
      default:
        return nil
      }
    }
  }

  func makeAsyncIterator() -> AsyncIterator {
    let iteration = iterations.withLock { iterations in
      iterations += 1
      return iterations
    }
    return AsyncIterator(
      iteration: iteration, upstream: self, token: EndToken(iteration == 1 ? staleIterationEnded : nil))
  }
}
