import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// What a subscription received, and its end, as strings.
final class SubscriptionLog: Sendable {
  let events = EventLog<String>()
  let ended = Signal()

  var values: [String] { events.all.filter { $0 != "end" } }

  /// `sequence.sink`, logging each value and the completion.
  func sink<S: AsyncSequence & Sendable>(_ sequence: S) -> FlowSubscription where S.Element: Sendable {
    sequence.sink(
      receiveCompletion: { (_: FlowCompletion<S.Failure>) in
        self.events.append("end")
        self.ended.fire()
      },
      receiveValue: { (value: S.Element) in self.events.append(String(describing: value)) })
  }
}

/// A subject's failure (none) as a `TestError`, for the operators that handle failures.
@Sendable private func typed(_ never: Never) -> TestError {}

/// One operator between a `PassthroughFlow` and a `sink`.
struct SinkCase: Sendable, CustomTestStringConvertible {
  let name: String
  /// `false` for the documented exception: a `shareFlow` between the subject and the sink starts
  /// its upstream (and so subscribes to the subject) at its first subscriber's first `next()`.
  var subscribesAtOnce = true
  let subscribe: @Sendable (PassthroughFlow<Int, Never>, AnyFlowClock, SubscriptionLog) -> FlowSubscription
  var testDescription: String { name }
}

/// Every operator of AsyncFlow that a `PassthroughFlow` can be put through, ending in a `sink`.
/// Timed operators use an interval of 1 s (timeouts 1,000 s) on the clock they are given.
let sinkTable: [SinkCase] = [
  SinkCase(name: "(none)") { subject, _, log in log.sink(subject) },
  SinkCase(name: "Flow.map") { subject, _, log in log.sink(subject.map { $0 + 0 }) },
  SinkCase(name: "Flow.filter") { subject, _, log in log.sink(subject.filter { $0 > 0 }) },
  SinkCase(name: "Flow.compactMap") { subject, _, log in log.sink(subject.compactMap { $0 }) },
  SinkCase(name: "Flow(_:)") { subject, _, log in log.sink(Flow(subject)) },
  SinkCase(name: "Flow.deferred") { subject, _, log in log.sink(Flow<Int, Never>.deferred { subject }) },
  SinkCase(name: "catch") { subject, _, log in
    log.sink(subject.mapError(typed).catch { _ in Flow<Int, Never>.sequence([]) })
  },
  SinkCase(name: "mapError") { subject, _, log in log.sink(subject.mapError(typed)) },
  SinkCase(name: "replaceError") { subject, _, log in
    log.sink(subject.mapError(typed).replaceError(with: -1))
  },
  SinkCase(name: "materialize") { subject, _, log in log.sink(subject.materialize()) },
  SinkCase(name: "dematerialize") { subject, _, log in log.sink(subject.materialize().dematerialize()) },
  SinkCase(name: "asLoadState") { subject, _, log in log.sink(subject.asLoadState()) },
  SinkCase(name: "prependState") { subject, _, log in log.sink(subject.prependState(-1)) },
  SinkCase(name: "retryWithBackoff") { subject, clock, log in
    log.sink(subject.retryWithBackoff(maxRetries: 2, initialDelay: .seconds(1), clock: clock))
  },
  SinkCase(name: "scanFlow") { subject, _, log in log.sink(subject.scanFlow(0, +)) },
  SinkCase(name: "removeDuplicatesFlow()") { subject, _, log in log.sink(subject.removeDuplicatesFlow()) },
  SinkCase(name: "removeDuplicatesFlow(by:)") { subject, _, log in log.sink(subject.removeDuplicatesFlow { $0 == $1 })
  },
  SinkCase(name: "collectFlow(count:)") { subject, _, log in log.sink(subject.collectFlow(count: 2)) },
  SinkCase(name: "handleEventsFlow") { subject, _, log in log.sink(subject.handleEventsFlow(onElement: { _ in })) },
  SinkCase(name: "traceFlow") { subject, _, log in log.sink(subject.traceFlow("sink") { _ in }) },
  SinkCase(name: "debounceFlow") { subject, clock, log in log.sink(subject.debounceFlow(for: .seconds(1), clock: clock))
  },
  SinkCase(name: "throttleFlow(latest: true)") { subject, clock, log in
    log.sink(subject.throttleFlow(for: .seconds(1), clock: clock, latest: true))
  },
  SinkCase(name: "throttleFlow(latest: false)") { subject, clock, log in
    log.sink(subject.throttleFlow(for: .seconds(1), clock: clock, latest: false))
  },
  SinkCase(name: "delayFlow") { subject, clock, log in log.sink(subject.delayFlow(for: .seconds(1), clock: clock)) },
  SinkCase(name: "timeoutFlow(after:)") { subject, clock, log in
    log.sink(subject.timeoutFlow(after: .seconds(1000), clock: clock))
  },
  SinkCase(name: "timeoutFlow(finishingAfter:)") { subject, clock, log in
    log.sink(subject.timeoutFlow(finishingAfter: .seconds(1000), clock: clock))
  },
  SinkCase(name: "collectFlow(every:)") { subject, clock, log in
    log.sink(subject.collectFlow(every: .seconds(1), clock: clock))
  },
  SinkCase(name: "collectFlow(count:orEvery:)") { subject, clock, log in
    log.sink(subject.collectFlow(count: 2, orEvery: .seconds(1), clock: clock))
  },
  SinkCase(name: "sampleFlow") { subject, clock, log in log.sink(subject.sampleFlow(every: .seconds(1), clock: clock))
  },
  SinkCase(name: "bufferFlow") { subject, _, log in log.sink(subject.bufferFlow(policy: .unbounded)) },
  SinkCase(name: "Flow.merge") { subject, _, log in log.sink(Flow.merge(subject, Flow<Int, Never>.sequence([]))) },
  SinkCase(name: "Flow.combineLatest") { subject, _, log in
    log.sink(Flow.combineLatest(subject, Flow<Int, Never>.sequence([7])))
  },
  SinkCase(name: "Flow.zip") { subject, _, log in log.sink(Flow.zip(subject, Flow<Int, Never>.sequence([7, 8]))) },
  SinkCase(name: "withLatestFromFlow") { subject, _, log in
    log.sink(subject.withLatestFromFlow(Flow<Int, Never>.sequence([7])))
  },
  SinkCase(name: "switchToLatestFlow(_:)") { subject, _, log in
    log.sink(subject.switchToLatestFlow { Flow<Int, Never>.sequence([$0]) })
  },
  SinkCase(name: "switchToLatestFlow(by:_:)") { subject, _, log in
    log.sink(subject.switchToLatestFlow(by: { $0 % 2 }) { Flow<Int, Never>.sequence([$0]) })
  },
  SinkCase(name: "mergeFlow()") { subject, _, log in log.sink(subject.mergeFlow { Flow<Int, Never>.sequence([$0]) }) },
  SinkCase(name: "concatFlow(_:)") { subject, _, log in log.sink(subject.concatFlow { Flow<Int, Never>.sequence([$0]) })
  },
  SinkCase(name: "exhaustFlow(_:)") { subject, _, log in
    log.sink(subject.exhaustFlow { Flow<Int, Never>.sequence([$0]) })
  },
  SinkCase(name: "collectLatest") { subject, _, log in
    log.sink(subject.map { Flow<Int, Never>.sequence([$0]) }.switchToLatestFlow())
  },
  SinkCase(name: "shareFlow() (its sink)") { subject, _, log in subject.shareFlow().sink { log.events.append("\($0)") }
  },
  SinkCase(name: "shareFlow() then map", subscribesAtOnce: false) { subject, _, log in
    log.sink(subject.shareFlow().map { $0 })
  },
  SinkCase(name: "debounceFlow then map") { subject, clock, log in
    log.sink(subject.debounceFlow(for: .seconds(1), clock: clock).map { $0 })
  },
]

/// A value sent right after `sink` returns reaches the sink, through every operator: the sink
/// makes its iterator before its task starts, and each operator's iterator makes its upstream's
/// at once, so the subject has its subscriber by the time `sink` returns.
@Suite("A value sent right after sink returns reaches it", .hangGuard)
struct SinkSubscribesAtOnceTests {
  /// On the clock's serial executor the sink's task cannot run before the sends: only a
  /// subscription made inside `sink` can receive them.
  @Test(arguments: sinkTable)
  func onTheClock(_ row: SinkCase) async {
    let clock = TestClock()
    let subject = PassthroughFlow<Int, Never>()
    let log = SubscriptionLog()
    let subscription = await clock.task { () -> FlowSubscription in
      let subscription = row.subscribe(subject, AnyFlowClock(clock), log)
      subject.send(1)
      subject.send(2)
      return subscription
    }.value
    await clock.advance(by: .seconds(3))
    if row.subscribesAtOnce {
      #expect(!log.values.isEmpty, "\(row.name): nothing received")
    } else {
      #expect(log.values.isEmpty, "\(row.name): documented as subscribing when the sink's task runs")
    }
    subscription.cancel()
  }

  /// On real threads: the values are sent at once, then the subject finishes; every operator
  /// delivers what it holds at the finish, so the sink receives something before its completion.
  @Test(arguments: sinkTable)
  func onRealThreads(_ row: SinkCase) async {
    let subject = PassthroughFlow<Int, Never>()
    let log = SubscriptionLog()
    let clock = AnyFlowClock(ContinuousClock())
    let subscription = row.subscribe(subject, clock, log)
    subject.send(1)
    subject.send(2)
    subject.finish()
    if row.name == "shareFlow() (its sink)" {
      await bounded("the value") { while log.values.isEmpty { await Task.yield() } }
    } else {
      await bounded("the completion") { await log.ended.wait() }
    }
    if row.subscribesAtOnce {
      #expect(!log.values.isEmpty, "\(row.name): nothing received before the end: \(log.events.all)")
    }
    subscription.cancel()
  }

  /// `assignFlow` through an operator: the object has the value sent right after it returns.
  @Test func assignFlowThroughAnOperatorAssignsAValueSentAtOnce() async {
    final class Model: @unchecked Sendable {
      var query = ""
    }
    let clock = TestClock()
    let subject = PassthroughFlow<String, Never>()
    let model = Model()
    let subscription = await clock.task { () -> FlowSubscription in
      let subscription = subject.debounceFlow(for: .milliseconds(300), clock: clock).assignFlow(
        to: \.query, on: model)
      subject.send("swift")
      return subscription
    }.value
    await clock.advance(by: .seconds(1))
    #expect(model.query == "swift")
    subscription.cancel()
  }

  /// The report's example: `debounceFlow` then `sink`, then a value sent at once.
  @Test func aDebouncedSinkReceivesAValueSentAtOnce() async {
    let clock = TestClock()
    let subject = PassthroughFlow<String, Never>()
    let received = EventLog<String>()
    let subscription = await clock.task { () -> FlowSubscription in
      let subscription = subject.debounceFlow(for: .milliseconds(300), clock: clock).sink { received.append($0) }
      subject.send("swift")
      return subscription
    }.value
    await clock.advance(by: .milliseconds(300))
    #expect(received.all == ["swift"])
    subscription.cancel()
  }

  /// An operator's iterator made and never pulled subscribes, and unsubscribes when dropped,
  /// starting no task.
  @Test(arguments: ["debounceFlow", "Flow.merge", "switchToLatestFlow", "shareFlow"])
  func anIteratorMadeAndDroppedUnsubscribes(_ name: String) async {
    let clock = TestClock()
    let subject = PassthroughFlow<Int, Never>()
    do {
      switch name {
      case "debounceFlow":
        let iterator = subject.debounceFlow(for: .seconds(1), clock: clock).makeAsyncIterator()
        #expect(subject.subscriberCount == 1)
        _ = iterator
      case "Flow.merge":
        let iterator = Flow.merge(subject, Flow<Int, Never>.sequence([])).makeAsyncIterator()
        #expect(subject.subscriberCount == 1)
        _ = iterator
      case "switchToLatestFlow":
        let iterator = subject.switchToLatestFlow { Flow<Int, Never>.sequence([$0]) }.makeAsyncIterator()
        #expect(subject.subscriberCount == 1)
        _ = iterator
      default:
        // A share subscribes to its upstream when it starts (its first subscriber's first `next()`).
        let iterator = subject.shareFlow().makeAsyncIterator()
        #expect(subject.subscriberCount == 0)
        _ = iterator
      }
    }
    #expect(subject.subscriberCount == 0)
    await clock.runCurrent()
    #expect(subject.subscriberCount == 0)
  }
}
