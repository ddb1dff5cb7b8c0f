import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// The two overloads of `sink` on the hot sources: a closure that does not `await` picks the
/// synchronous one, one that awaits the asynchronous one, and both deliver alike.
@Suite("sink on hot sources: synchronous and asynchronous overloads", .hangGuard)
struct SynchronousSinkTests {
  enum Overload: CaseIterable, Sendable {
    case async, sync
  }

  /// Subscribes `log` to `source` through `overload`, the closures' types spelt out so that the
  /// overload does not depend on what the closures do.
  static func sink<Source: HotFlowSource<Int, Failure>, Failure: Error>(
    _ source: Source, _ overload: Overload, into log: SinkLog
  ) -> FlowSubscription {
    @Sendable func end(_ completion: FlowCompletion<Failure>) {
      switch completion {
      case .finished: log.append(.finished)
      case .failure: log.append(.failed(0))
      }
    }
    switch overload {
    case .async:
      let receiveCompletion: @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void = { end($0) }
      let receiveValue: @Sendable @isolated(any) (Int) async -> Void = { log.append(.value($0)) }
      return source.sink(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
    case .sync:
      let receiveCompletion: @Sendable @isolated(any) (FlowCompletion<Failure>) -> Void = { end($0) }
      let receiveValue: @Sendable @isolated(any) (Int) -> Void = { log.append(.value($0)) }
      return source.sink(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
    }
  }

  /// Whether `subscription` is a hot source's sink whose value closure is the synchronous one.
  static func isSynchronous(_ subscription: FlowSubscription) -> Bool? {
    switch (subscription.target as? SubjectMailbox<Int, Never>)?.receiver {
    case .syncSink: true
    case .sink: false
    case .assign, nil: nil
    }
  }

  // MARK: Which overload a closure picks

  @Test func aClosureThatDoesNotAwaitPicksTheSynchronousOverload() {
    let subject = PassthroughFlow<Int, Never>()
    let counter = Counter()
    let one = subject.sink { _ in counter.add() }
    let two = subject.sink { _ in counter.add() } receiveValue: { _ in counter.add() }
    let onMain = subject.sink { @MainActor _ in counter.add() }
    #expect(Self.isSynchronous(one) == true)
    #expect(Self.isSynchronous(two) == true)
    #expect(Self.isSynchronous(onMain) == true)
    #expect(Self.isSynchronous(CurrentValueFlow(0).sink { _ in counter.add() }) == true)
    let share = subject.shareFlow()
    #expect(Self.isSynchronous(share.sink { _ in counter.add() }) == true)
    withExtendedLifetime((one, two, onMain)) {}
  }

  /// Source compatibility: a closure that awaits still compiles, and picks the asynchronous
  /// overload; so does a pair where only one closure awaits.
  @Test func aClosureThatAwaitsPicksTheAsynchronousOverload() {
    let subject = PassthroughFlow<Int, Never>()
    let gate = Gate()
    let one = subject.sink { _ in await gate.wait() }
    let valueAwaits = subject.sink { _ in } receiveValue: { _ in await gate.wait() }
    let completionAwaits = subject.sink { _ in await gate.wait() } receiveValue: { _ in }
    #expect(Self.isSynchronous(one) == false)
    #expect(Self.isSynchronous(valueAwaits) == false)
    #expect(Self.isSynchronous(completionAwaits) == false)
    withExtendedLifetime((one, valueAwaits, completionAwaits)) {}
  }

  // MARK: Both overloads deliver alike

  @Test(arguments: Overload.allCases)
  func everyHostDeliversInOrderThenTheEndOnce(overload: Overload) async {
    let subject = PassthroughFlow<Int, TestError>()
    let subjectLog = SinkLog()
    let onSubject = Self.sink(subject, overload, into: subjectLog)

    let current = CurrentValueFlow(0)
    let currentLog = SinkLog()
    let onCurrent = Self.sink(current, overload, into: currentLog)

    let upstream = PassthroughFlow<Int, TestError>()
    let share = upstream.shareFlow(replay: 1)
    let shareLog = SinkLog()
    let onShare = Self.sink(share, overload, into: shareLog)
    await upstream.subscribers(count: 1)  // the sink started the share's upstream

    for value in 1...300 {
      subject.send(value)
      upstream.send(value)
    }
    subject.fail(TestError(id: 0))
    upstream.finish()
    subject.send(301)  // after the end: ignored
    await bounded("the subject's sink completed") { await subjectLog.logged(count: 301) }
    await bounded("the share's sink completed") { await shareLog.logged(count: 301) }
    #expect(subjectLog.events == (1...300).map { .value($0) } + [.failed(0)], "\(overload)")
    #expect(shareLog.events == (1...300).map { .value($0) } + [.finished], "\(overload)")

    await bounded("the current value arrived") { await currentLog.logged(count: 1) }
    current.finish()
    await bounded("the current value's sink completed") { await currentLog.logged(count: 2) }
    #expect(currentLog.events == [.value(0), .finished], "\(overload)")
    withExtendedLifetime((onSubject, onCurrent, onShare)) {}
  }

  @Test(arguments: Overload.allCases)
  @MainActor func aMainActorClosureRunsOnTheMainActorInOrder(overload: Overload) async {
    let subject = PassthroughFlow<Int, Never>()
    let box = SinkBox()
    let done = Signal()
    let subscription: FlowSubscription
    switch overload {
    case .async:
      subscription = subject.sink { _ in
        done.fire()
      } receiveValue: { @MainActor value in
        await Task.yield()
        MainActor.preconditionIsolated("an asynchronous @MainActor sink ran off the main actor")
        box.received.append(value)
      }
    case .sync:
      subscription = subject.sink { _ in
        done.fire()
      } receiveValue: { @MainActor value in
        MainActor.preconditionIsolated("a synchronous @MainActor sink ran off the main actor")
        box.received.append(value)
      }
    }
    #expect(Self.isSynchronous(subscription) == (overload == .sync))
    let sender = Task.detached {
      for value in 1...500 { subject.send(value) }
      subject.finish()
    }
    await bounded(sender, "sender")
    await done.wait()
    #expect(box.received == Array(1...500), "\(overload)")
    withExtendedLifetime(subscription) {}
  }

  /// `cancel()` made in the closure, on its isolation, in the middle of one batch: nothing after
  /// it is delivered, nor the end.
  @Test(arguments: Overload.allCases)
  @MainActor func cancelFromTheClosureDeliversNothingAfterIt(overload: Overload) async {
    let clock = TestClock()
    let subject = PassthroughFlow<Int, Never>()
    let box = SinkBox()
    let completed = Signal()
    @MainActor func receive(_ value: Int) {
      box.received.append(value)
      if value == 3 {
        box.subscription?.cancel()
        box.subscription = nil
      }
    }
    switch overload {
    case .async:
      box.subscription = subject.sink { _ in completed.fire() } receiveValue: { @MainActor value in
        await Task.yield()
        receive(value)
      }
    case .sync:
      box.subscription = subject.sink { _ in completed.fire() } receiveValue: { @MainActor value in receive(value) }
    }
    #expect(box.subscription.map(Self.isSynchronous) == (overload == .sync))
    await clock.onSchedule {
      for value in 1...10 { subject.send(value) }  // one batch: the drain waits for the main actor
      subject.finish()
    }
    await clock.runCurrent()
    #expect(box.received == [1, 2, 3], "\(overload)")
    #expect(!completed.isFired)
    #expect(subject.subscriberCount == 0)
  }

  /// `cancel()` from elsewhere, between two batches of a background sink: nothing sent after it
  /// is delivered, nor the end.
  @Test(arguments: Overload.allCases)
  func cancelBetweenBatchesStopsDelivery(overload: Overload) async {
    let subject = PassthroughFlow<Int, Never>()
    let log = SinkLog()
    let subscription = Self.sink(subject, overload, into: log)
    let siblingLog = SinkLog()
    let sibling = Self.sink(subject, overload, into: siblingLog)
    for value in 1...3 { subject.send(value) }
    await bounded("the first batch arrived") { await log.logged(count: 3) }
    subscription.cancel()
    #expect(subject.subscriberCount == 1)
    for value in 4...6 { subject.send(value) }
    subject.finish()
    // The sibling, drained as the cancelled sink would have been, has had 4...6 and the end.
    await bounded("the sibling completed") { await siblingLog.logged(count: 7) }
    #expect(siblingLog.events == (1...6).map { .value($0) } + [.finished], "\(overload)")
    #expect(log.events == [.value(1), .value(2), .value(3)], "\(overload)")
    withExtendedLifetime(sibling) {}
  }
}
