import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `runEach(in:id:)`: a sequence's elements as requests of one identity, beside the explicit
/// `run(_:request:)` calls of the same identity. On the test clock: the feeding's task and the runs'
/// tasks follow its schedule, and `runCurrent()` runs them until they wait for an answer.
@Suite("TaskSlots.runEach", .onTestClock, .hangGuard)
struct TaskSlotsRunEachTests {
  private struct Offline: Error {}

  /// A screen's requests: a subject for the feeding's elements, and a search whose calls the test
  /// answers.
  private struct Screen {
    let slots = TaskSlots<String>()
    let keywords = PassthroughFlow<String, Never>()
    let calls = ControlledCalls<String, Result<[String], Offline>>()

    var search: @Sendable (String) async throws -> Void {
      { [calls] keyword in _ = try await calls.call(keyword).get() }
    }

    func feed(policy: SlotPolicy = .latestWins) -> FlowSubscription {
      keywords.runEach(in: slots, id: "search", policy: policy, operation: search)
    }

    /// Answers every call still waiting, so that every run ends.
    func answerAll() {
      for call in calls.log where !call.isAnswered { calls.respond(toCall: call.index, with: .success([])) }
    }
  }

  @Test func anElementSupersedesTheRunThatAnExplicitCallStarted() async {
    let clock = TestClock.current
    let screen = Screen()
    let feeding = screen.feed()
    screen.slots.run("search", request: "", trigger: "appear", operation: screen.search)
    await clock.runCurrent()
    screen.keywords.send("swift")
    await clock.runCurrent()
    #expect(screen.calls.arguments == ["", "swift"])
    #expect(screen.calls.log.map(\.wasCancelled) == [true, false])  // the appear load was superseded
    screen.answerAll()
    await clock.runCurrent()
    #expect(!screen.slots.isRunning("search"))
    feeding.cancel()
  }

  /// Equal to the last request, whichever entry point made it: nothing runs. An explicit call
  /// compares nothing.
  @Test func anElementEqualToTheLastRequestStartsNothing() async {
    let clock = TestClock.current
    let screen = Screen()
    let feeding = screen.feed()
    screen.slots.run("search", request: "a", operation: screen.search)
    screen.keywords.send("a")  // the explicit call's request, still in flight
    await clock.runCurrent()
    #expect(screen.calls.arguments == ["a"])
    #expect(screen.calls.log.map(\.wasCancelled) == [false])
    screen.answerAll()
    screen.keywords.send("a")  // its answer has come
    screen.keywords.send("b")
    screen.keywords.send("b")
    await clock.runCurrent()
    #expect(screen.calls.arguments == ["a", "b"])
    screen.slots.run("search", request: "b", trigger: "retry", operation: screen.search)  // a retry loads
    await clock.runCurrent()
    #expect(screen.calls.arguments == ["a", "b", "b"])
    screen.answerAll()
    await clock.runCurrent()
    feeding.cancel()
  }

  /// A run without a request replaces the memory; a cancelled run's request is forgotten (its
  /// answer never came); a failed run's is kept.
  @Test func whatTheIdentityRemembers() async {
    let clock = TestClock.current
    let screen = Screen()
    let feeding = screen.feed()
    screen.keywords.send("a")
    await clock.runCurrent()
    screen.slots.run("search") {}  // no request: the identity remembers none
    screen.keywords.send("a")
    await clock.runCurrent()
    #expect(screen.calls.arguments == ["a", "a"])
    screen.slots.cancel("search")  // the second "a" is cancelled, its request forgotten
    screen.keywords.send("a")
    await clock.runCurrent()
    #expect(screen.calls.arguments == ["a", "a", "a"])
    screen.calls.fail(call: 2, with: Offline())
    await clock.runCurrent()
    #expect(!screen.slots.isRunning("search"))
    screen.keywords.send("a")  // failed: still the last request
    await clock.runCurrent()
    #expect(screen.calls.arguments == ["a", "a", "a"])
    screen.answerAll()
    await clock.runCurrent()
    feeding.cancel()
  }

  /// Cancelling the subscription ends the iteration and cancels the runs it started; the runs of
  /// other entry points go on.
  @Test func cancellingTheSubscriptionCancelsItsRunsOnly() async {
    let clock = TestClock.current
    let screen = Screen()
    let feeding = screen.feed(policy: .concurrent)
    screen.slots.run("search", request: "appear", policy: .concurrent, operation: screen.search)
    screen.keywords.send("typed")
    await clock.runCurrent()
    #expect(screen.calls.arguments == ["appear", "typed"])
    feeding.cancel()
    await clock.runCurrent()
    #expect(screen.calls.log.map(\.wasCancelled) == [false, true])
    #expect(screen.keywords.subscriberCount == 0)  // the iteration ended
    await bounded(feeding.task!, "the feeding")
    screen.keywords.send("later")
    await clock.runCurrent()
    #expect(screen.calls.arguments == ["appear", "typed"])
    screen.answerAll()
    await clock.runCurrent()
    #expect(!screen.slots.isRunning("search"))
  }

  /// The race the check under the lock closes: an element the upstream hands over after
  /// `cancel()` returned (here the upstream itself cancels, then returns the element) would start
  /// a run that the feeding's cancellation handler, run already, never cancels. Without the check,
  /// "late" runs and stays registered.
  @Test func anElementHandedOverAfterCancelReturnedStartsNothing() async {
    let clock = TestClock.current
    let screen = Screen()
    let subscription = LockedState<FlowSubscription?>(nil)
    let upstream = CancellingUpstream { subscription.withLock { $0 }?.cancel() }
    let feeding = upstream.runEach(in: screen.slots, id: "search", operation: screen.search)
    subscription.withLock { $0 = feeding }
    await clock.runCurrent()
    // "first" was cancelled before it began; "late" never registered.
    #expect(screen.calls.arguments == [])
    #expect(!screen.slots.isRunning("search"))
    await bounded(feeding.task!, "the feeding")
    screen.answerAll()
    await clock.runCurrent()
    subscription.withLock { $0 = nil }
  }

  /// Releasing the `TaskSlots` cancels the runs, and the feeding ends at its next element.
  @Test func releasingTheTaskSlotsEndsTheFeeding() async {
    let clock = TestClock.current
    var slots: TaskSlots<String>? = TaskSlots<String>()
    let keywords = PassthroughFlow<String, Never>()
    let calls = ControlledCalls<String, Int>()
    let feeding = keywords.runEach(in: slots!, id: "search") { keyword in _ = await calls.call(keyword) }
    keywords.send("a")
    await clock.runCurrent()
    slots = nil
    _ = slots
    await clock.runCurrent()
    #expect(calls.log.map(\.wasCancelled) == [true])
    keywords.send("b")
    await clock.runCurrent()
    await bounded(feeding.task!, "the feeding")
    #expect(calls.arguments == ["a"])
    calls.respond(toCall: 0, with: 0)
    await clock.runCurrent()
  }

  /// A repeat is not a run: the request log records nothing for it, and its numbers stay
  /// contiguous.
  @Test func aRepeatTakesNoNumberInTheRequestLog() async {
    let clock = TestClock.current
    let log = RequestLog<String>()
    let slots = TaskSlots<String>(log: log)
    let keywords = PassthroughFlow<String, Never>()
    let feeding = keywords.runEach(in: slots, id: "search", trigger: "typing") { _ in }
    for keyword in ["a", "a", "b"] { keywords.send(keyword) }
    await clock.runCurrent()
    let decisions = log.entries.filter { $0.event != .finished && $0.event != .cancelled }
    #expect(
      decisions.map(\.description) == [
        "#1 search [typing] started", "#1 search [typing] superseded by #2", "#2 search [typing] started",
      ])
    feeding.cancel()
  }
}

/// The promises on real threads: the feeding's comparison and registration are one step, whatever
/// another thread's explicit calls do meanwhile; and once the feeding's task has ended after its
/// cancellation, nothing it fed is registered.
@Suite("TaskSlots.runEach on real threads", .hangGuard)
struct TaskSlotsRunEachThreadTests {
  /// Queued runs begin in registration order, so the order they log in is the registry's: a fed
  /// request is never equal to the request registered just before it, explicit or fed.
  @Test func aFedRequestNeverRepeatsTheRequestRegisteredBeforeIt() async {
    var generator = SplitMix64(state: 49)
    for _ in 0..<40 {
      let slots = TaskSlots<String>()
      let begun = EventLog<String>()
      let (keywords, input) = AsyncStream<String>.makeStream()
      let fed = (0..<200).map { _ in Bool.random(using: &generator) ? "a" : "b" }
      let explicit = (0..<200).map { _ in Bool.random(using: &generator) ? "a" : "b" }
      let feeding = keywords.runEach(in: slots, id: "search", policy: .queue) { begun.append("fed \($0)") }
      let done = [Reentry.Flag(), Reentry.Flag()]
      Reentry.onThread(setting: done[0]) {
        for keyword in fed { input.yield(keyword) }
        input.finish()
      }
      Reentry.onThread(setting: done[1]) {
        for keyword in explicit {
          slots.run("search", request: keyword, policy: .queue) { begun.append("explicit \($0)") }
        }
      }
      for flag in done { #expect(await Reentry.isSetSoon(flag)) }
      await bounded(feeding.task!, "the feeding")
      #expect(await Reentry.eventually { slots.runningCount == 0 })
      let order = begun.all
      let repeats = zip(order, order.dropFirst()).filter { previous, next in
        next.hasPrefix("fed") && previous.split(separator: " ")[1] == next.split(separator: " ")[1]
      }
      #expect(repeats.isEmpty, "\(repeats.count) repeats: \(repeats.prefix(3))")
      #expect(order.filter { $0.hasPrefix("explicit") }.count == explicit.count)  // explicit calls always run
    }
  }

  /// The feeding is cancelled from another thread while elements keep coming: when its task has
  /// ended, no run it fed is registered (the runs' operations wait until they are cancelled).
  @Test func afterTheCancelledFeedingEndsNothingItFedIsRegistered() async {
    for round in 0..<100 where !Task.isCancelled {
      let slots = TaskSlots<String>()
      let request = Gate()
      let (keywords, input) = AsyncStream<String>.makeStream()
      let feeding = keywords.runEach(in: slots, id: "search") { _ in await request.wait() }
      let done = [Reentry.Flag(), Reentry.Flag()]
      Reentry.onThread(setting: done[0]) {
        // Not finished: a feeding whose sequence finished has ended, and its runs go on.
        for index in 0..<200 { input.yield("k\(index)") }
      }
      Reentry.onThread(setting: done[1]) {
        for _ in 0..<(round % 50) { _ = slots.isRunning("search") }
        feeding.cancel()
      }
      for flag in done { #expect(await Reentry.isSetSoon(flag)) }
      await bounded(feeding.task!, "the feeding")
      #expect(!slots.isRunning("search"), "round \(round)")
      input.finish()
    }
  }

  /// The feeding sees its cancellation (here its upstream, which waits for it, ends the sequence)
  /// and leaves the scope of its cancellation handler before the canceller's thread calls the
  /// handler, which is then never called: the run it fed must be cancelled all the same.
  @Test func aFeedingThatSeesItsCancellationFirstStillCancelsItsRun() async {
    for round in 0..<500 where !Task.isCancelled {
      let slots = TaskSlots<String>()
      let request = Gate()
      let feeding = UntilCancelled().runEach(in: slots, id: "search") { _ in await request.wait() }
      #expect(await Reentry.eventually { slots.isRunning("search") })
      let done = Reentry.Flag()
      Reentry.onThread(setting: done) { feeding.cancel() }
      #expect(await Reentry.isSetSoon(done))
      await bounded(feeding.task!, "the feeding")
      #expect(!slots.isRunning("search"), "round \(round)")
    }
  }
}

/// An upstream that hands over "first", then finishes as soon as its consumer is cancelled, which it
/// checks without suspending (as a busy upstream would), so that it sees the cancellation at once.
private struct UntilCancelled: AsyncSequence, Sendable {
  typealias Element = String
  typealias Failure = Never

  struct Iterator: AsyncIteratorProtocol {
    var handedOver = false

    mutating func next() async -> String? {
      if !handedOver {
        handedOver = true
        return "first"
      }
      while !Task.isCancelled { await Task.yield() }
      return nil
    }

    mutating func next(isolation actor: isolated (any Actor)?) async -> String? { await next() }
  }

  func makeAsyncIterator() -> Iterator { Iterator() }
}

/// An upstream that hands over "first", then, at the next call, cancels its consumer (`cancel`) and
/// hands over "late", as an upstream that ignores cancellation does; then it finishes.
private struct CancellingUpstream: AsyncSequence, Sendable {
  typealias Element = String
  typealias Failure = Never
  let cancel: @Sendable () -> Void

  struct Iterator: AsyncIteratorProtocol {
    let cancel: @Sendable () -> Void
    var step = 0

    mutating func next() async -> String? {
      step += 1
      switch step {
      case 1: return "first"
      case 2:
        cancel()
        return "late"
      default: return nil
      }
    }

    mutating func next(isolation actor: isolated (any Actor)?) async -> String? { await next() }
  }

  func makeAsyncIterator() -> Iterator { Iterator(cancel: cancel) }
}
