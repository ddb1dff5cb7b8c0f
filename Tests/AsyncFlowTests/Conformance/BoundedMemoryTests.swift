import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// Counts the `Tracked` elements alive: made and not yet freed. Behind a stalled consumer, what is
/// alive is what the pipeline holds, measured rather than inferred from its code.
final class Tracker: Sendable {
  private let state = LockedState((made: 0, live: 0))

  func make() -> Tracked { Tracked(self) }
  fileprivate func didMake() {
    state.withLock {
      $0.made += 1
      $0.live += 1
    }
  }
  fileprivate func freed() { state.withLock { $0.live -= 1 } }

  var made: Int { state.withLock { $0.made } }
  var live: Int { state.withLock { $0.live } }
}

final class Tracked: Sendable {
  let tracker: Tracker
  init(_ tracker: Tracker) {
    self.tracker = tracker
    tracker.didMake()
  }
  deinit { tracker.freed() }
}

/// A buffering operator, its documented bound (Guides/Effects.md, "buffering"), and how to build
/// it over a tracked upstream on a test clock.
struct BufferingCase: Sendable, CustomStringConvertible {
  var name: String
  /// What Guides/Effects.md allows it to hold behind a stalled consumer, plus the one element each
  /// producing `Flow` (bufferSize 0) holds while its `emit` waits.
  var bound: Int
  var make:
    @Sendable (_ upstream: Flow<Tracked, Never>, _ inner: @escaping @Sendable (Int) -> Flow<Tracked, Never>, TestClock)
      -> AnyStepper
  var description: String { name }
}

/// The figures measured for Guides/Guarantees.md: run `swift test --filter BoundedMemoryTests`
/// and read the recorded `held` counts in the test names' arguments.
let bufferingTable: [BufferingCase] = [
  BufferingCase(name: "debounceFlow", bound: 2 + 1) { up, _, clock in
    AnyStepper(up.debounceFlow(for: .milliseconds(50), clock: clock))
  },
  BufferingCase(name: "throttleFlow(latest: true)", bound: 2 + 1) { up, _, clock in
    AnyStepper(up.throttleFlow(for: .seconds(1), clock: clock, latest: true))
  },
  BufferingCase(name: "throttleFlow(latest: false)", bound: 2 + 1) { up, _, clock in
    AnyStepper(up.throttleFlow(for: .seconds(1), clock: clock, latest: false))
  },
  // 10 elements arrive per interval: about twice that, plus one.
  BufferingCase(name: "delayFlow", bound: 2 * 10 + 1 + 1) { up, _, clock in
    AnyStepper(up.delayFlow(for: .seconds(1), clock: clock))
  },
  BufferingCase(name: "timeoutFlow(after:)", bound: 1 + 1) { up, _, clock in
    AnyStepper(up.timeoutFlow(after: .seconds(1000), clock: clock))
  },
  BufferingCase(name: "timeoutFlow(finishingAfter:)", bound: 1 + 1) { up, _, clock in
    AnyStepper(up.timeoutFlow(finishingAfter: .seconds(1000), clock: clock))
  },
  BufferingCase(name: "collectFlow(count: 5)", bound: 5 + 1) { up, _, _ in AnyStepper(up.collectFlow(count: 5)) },
  BufferingCase(name: "removeDuplicatesFlow(by:)", bound: 1 + 1) { up, _, _ in
    AnyStepper(up.removeDuplicatesFlow { $0 === $1 })
  },
  // Flattening: 64 per running inner plus one batch the consumer took (the outer emits 1 element).
  BufferingCase(name: "switchToLatestFlow", bound: 64 + 64 + 1) { _, inner, _ in
    AnyStepper(Flow.sequence(0..<1).switchToLatestFlow { inner($0) })
  },
  BufferingCase(name: "exhaustFlow", bound: 64 + 64 + 1) { _, inner, _ in
    AnyStepper(Flow.sequence(0..<4).exhaustFlow { inner($0) })
  },
  BufferingCase(name: "concatFlow", bound: 64 + 64 + 1) { _, inner, _ in
    AnyStepper(Flow.sequence(0..<4).concatFlow { inner($0) })
  },
  BufferingCase(name: "mergeFlow(maxConcurrent: 2)", bound: 2 * (64 + 1) + 64) { _, inner, _ in
    AnyStepper(Flow.sequence(0..<4).mergeFlow(maxConcurrent: 2) { inner($0) })
  },
  // 32 inners, unlimited: no inner starts while the consumer is behind 16 (those that have not
  // delivered yet included: before, all 32 started before any held elements, 32 x 64), each with
  // 64 waiting, one in its task's hands and one in its body; plus the batch the consumer took
  // from some of them (at most 16 x 64), which they refill.
  BufferingCase(name: "mergeFlow() over 32 inners", bound: 16 * (64 + 2) + 16 * 64) { _, inner, _ in
    AnyStepper(Flow.sequence(0..<32).mergeFlow { inner($0) })
  },
]

/// Held-count results, kept for the guide's figures (printed by the test).
@Suite("Bounded memory", .hangGuard)
struct BoundedMemoryTests {
  /// A consumer takes one element, then stalls while the upstream keeps producing (10 elements a
  /// second for 30 s on the test clock; inners 5,000 elements each). What stays alive is the
  /// operator's buffer; it stays within the documented bound, and all is freed after cancelling.
  @Test(arguments: bufferingTable)
  func stalledConsumerHoldsNoMoreThanTheDocumentedBound(_ row: BufferingCase) async {
    let clock = TestClock()
    let tracker = Tracker()
    let never = Gate()
    let upstream = Flow<Tracked, Never>(bufferSize: 0) { emitter in
      for _ in 0..<30 {
        for _ in 0..<10 { await emitter.emit(tracker.make()) }
        try? await clock.sleep(for: .seconds(1))
      }
      await never.wait()
    }
    let inner: @Sendable (Int) -> Flow<Tracked, Never> = { _ in
      Flow<Tracked, Never>(bufferSize: 0) { emitter in
        for _ in 0..<5_000 {
          if Task.isCancelled { return }
          await emitter.emit(tracker.make())
        }
        await never.wait()
      }
    }
    let stall = Gate()
    let consumer = clock.task {
      let stepper = row.make(upstream, inner, clock)
      _ = await stepper.next()
      await stall.wait()  // stalled: holds the iterator without pulling
      withExtendedLifetime(stepper) {}
    }
    await clock.advance(by: .seconds(40))
    let (held, made) = (tracker.live, tracker.made)
    #expect(stall.parkedCount == 1, "\(row.name): the consumer never got a first element")
    #expect(held <= row.bound, "\(row.name): holds \(held) behind a stalled consumer, bound \(row.bound)")
    #expect(made >= 1, "\(row.name): the upstream never produced (made \(made))")
    print("bounded-memory \(row.name): held \(held) of \(made) made, bound \(row.bound)")
    consumer.cancel()
    await bounded(consumer, "consumer")
    await clock.runCurrent()
    #expect(tracker.live == 0, "\(row.name): \(tracker.live) elements alive after the pipeline was cancelled")
  }

  enum Ending: String, CaseIterable, Sendable { case finished, cancelled, dropped }

  /// Every operator of the conformance table: once its iteration finished, was cancelled, or its
  /// iterator was dropped, everything its closures captured is freed (a `weak` reference to the
  /// environment its closures capture goes `nil`).
  @Test(arguments: operatorTable, Ending.allCases)
  func endedPipelineFreesWhatItsClosuresCaptured(_ row: OperatorCase, _ ending: Ending) async {
    var env: ProbeEnvironment? =
      ending == .finished
      ? ProbeEnvironment(outer: [0, 1], then: .finish, inners: 1)
      : ProbeEnvironment(outer: [0, 1], then: .park, inners: 1, then: .park)
    weak let weakEnv = env
    let clock = env!.clock
    let consumer = clock.task { [env] in
      let stepper = row.make(env!)
      switch ending {
      case .finished: while await stepper.next().isElement {}
      case .cancelled:
        _ = await stepper.next()
        withUnsafeCurrentTask { $0?.cancel() }
        _ = await stepper.next()
      case .dropped: _ = await stepper.next()
      }
    }
    env = nil
    await clock.advance(by: .seconds(10))
    await bounded(consumer, "consumer")
    await clock.runCurrent()
    #expect(weakEnv == nil, "\(row.name), \(ending): the pipeline still holds what its closures captured")
  }

  /// A `Flow` body runs ahead of a stalled consumer by at most `bufferSize` elements.
  @Test(arguments: [0, 1, 64])
  func flowBodyRunsAheadByAtMostItsBufferSize(bufferSize: Int) async {
    let clock = TestClock()
    let tracker = Tracker()
    let flow = Flow<Tracked, Never>(bufferSize: bufferSize) { emitter in
      for _ in 0..<10_000 { await emitter.emit(tracker.make()) }
    }
    let stall = Gate()
    let consumer = clock.task {
      var iterator = flow.makeAsyncIterator()
      _ = await iterator.next()
      await stall.wait()
      withExtendedLifetime(iterator) {}
    }
    await clock.runCurrent()
    // What is alive: the buffer, plus the one element the body's `emit` waits with.
    #expect(tracker.live <= bufferSize + 1, "bufferSize \(bufferSize): \(tracker.live) alive")
    print("bounded-memory Flow(bufferSize: \(bufferSize)): held \(tracker.live) of \(tracker.made) made")
    consumer.cancel()
    await bounded(consumer, "consumer")
    await clock.runCurrent()
    #expect(tracker.live == 0)
  }

  /// Subjects and `shareFlow` behind a subscriber that takes nothing: 1,000 sends leave at most
  /// what the buffering policy keeps (plus `replay`, plus the current value).
  @Test func subjectsAndShareFlowHoldWhatTheirPolicySays() async {
    for policy in [FlowBufferingPolicy.bufferingNewest(8), .bufferingOldest(8)] {
      let tracker = Tracker()
      let subject = PassthroughFlow<Tracked, Never>(bufferingPolicy: policy)
      let iterator = subject.makeAsyncIterator()
      for _ in 0..<1_000 { subject.send(tracker.make()) }
      #expect(tracker.live <= 8, "PassthroughFlow \(policy): \(tracker.live) alive")
      print("bounded-memory PassthroughFlow \(policy): held \(tracker.live) of 1000")
      withExtendedLifetime(iterator) {}
    }
    do {
      let tracker = Tracker()
      let subject = CurrentValueFlow(tracker.make())
      let iterator = subject.makeAsyncIterator()
      for _ in 0..<1_000 { subject.send(tracker.make()) }
      #expect(tracker.live <= 2, "CurrentValueFlow: \(tracker.live) alive")
      print("bounded-memory CurrentValueFlow: held \(tracker.live) of 1001")
      withExtendedLifetime(iterator) {}
    }
    do {
      let clock = TestClock()
      let tracker = Tracker()
      let never = Gate()
      let shared = Flow<Tracked, Never>(bufferSize: 0) { emitter in
        for _ in 0..<1_000 { await emitter.emit(tracker.make()) }
        await never.wait()
      }.shareFlow(replay: 4, bufferingPolicy: .bufferingNewest(8))
      let stall = Gate()
      let subscriber = clock.task {
        var iterator = shared.makeAsyncIterator()
        _ = await iterator.next()
        await stall.wait()
        withExtendedLifetime(iterator) {}
      }
      await clock.runCurrent()
      let held = tracker.live
      #expect(tracker.made == 1_000)
      #expect(held <= 8 + 4 + 1, "shareFlow(replay: 4, .bufferingNewest(8)): \(held) alive")
      print("bounded-memory shareFlow(replay: 4, bufferingNewest(8)): held \(held) of \(tracker.made)")
      subscriber.cancel()
      await bounded(subscriber, "subscriber")
      await clock.runCurrent()
      #expect(tracker.live == 0)
    }
  }

  /// 10,000 subscribe/cancel cycles on each subject and on a shared flow leave no subscriber behind:
  /// 100 rounds of 100 subscribers that start iterating and are cancelled, plus 10,000 iterators
  /// made and dropped without a `next()`.
  @Test func tenThousandSubscribeCancelCyclesLeaveNoSubscriber() async {
    let passthrough = PassthroughFlow<Int, Never>()
    let current = CurrentValueFlow(0)
    let shared = passthrough.shareFlow()
    // One bound around the 100 rounds, not one per task.
    await bounded("100 rounds of 100 subscribers cancelled") {
      for _ in 0..<100 {
        let tasks = (0..<100).map { index in
          Task {
            switch index % 3 {
            case 0: for await _ in passthrough {}
            case 1: for await _ in current {}
            default: for await _ in shared {}
            }
          }
        }
        await passthrough.subscribers(count: 34 + 1)  // 34 direct, and the shared upstream
        await current.subscribers(count: 33)
        await shared.subscribers(count: 33)
        for task in tasks { task.cancel() }
        for task in tasks { await task.value }
      }
    }
    for _ in 0..<10_000 {
      _ = passthrough.makeAsyncIterator()
      _ = current.makeAsyncIterator()
    }
    #expect(passthrough.subscriberCount == 0)
    #expect(current.subscriberCount == 0)
    #expect(shared.subscriberCount == 0)
  }
}
