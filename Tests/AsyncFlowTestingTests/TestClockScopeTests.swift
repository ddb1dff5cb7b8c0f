import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// A model as apps write them: main-actor state, entry points that start their work in a
/// `TaskSlots`, and a stub behind each request.
@MainActor
private final class Loader {
  private(set) var items: [Int] = []
  private(set) var isLoading = false
  let slots = TaskSlots<String>()
  private let fetch: @Sendable (Int) async -> Int

  init(fetch: @escaping @Sendable (Int) async -> Int) { self.fetch = fetch }

  func load(_ value: Int) {
    isLoading = true
    slots.run("load") { @MainActor [weak self, fetch] in
      let item = await fetch(value)
      guard !Task.isCancelled else { return }
      self?.items.append(item)
      self?.isLoading = false
    }
  }
}

@Suite("The whole test on the clock", .hangGuard)
struct TestClockScopeTests {
  /// The issue's flaky case: entry points called directly from the test, their `TaskSlots` tasks
  /// (and the slot's clean-up after them) on the clock, so that `runCurrent()` waits for them.
  /// Without the trait, the slot's task runs on the global executor and `runningCount` or
  /// `isLoading` is read before it finishes in some of the 200 cases.
  @Test(.onTestClock, arguments: 0..<200) @MainActor func entryPointsCalledDirectlyRunOnTheClock(_ case: Int) async {
    let clock = TestClock.current
    let calls = ControlledCalls<Int, Int>()
    let loader = Loader { value in await calls.call(value) }
    loader.load(1)
    await calls.parked(count: 1)
    #expect(loader.isLoading)
    calls.respond(to: 1, with: 10)
    await clock.runCurrent()
    #expect(loader.items == [10])
    #expect(!loader.isLoading)
    #expect(loader.slots.runningCount == 0)
  }

  /// Each case has a clock of its own: time moved in one is not seen in another.
  @Test(.onTestClock, arguments: 1...5) func eachTestCaseHasAClockOfItsOwn(seconds: Int) async {
    let clock = TestClock.current
    #expect(clock.now == .init(offset: .zero))
    await clock.advance(by: .seconds(seconds))
    #expect(TestClock.current === clock)
    #expect(clock.now == .init(offset: .seconds(seconds)))
  }

  /// A sink subscribed in the test body, with no `clock.task`: its task is on the clock, so the
  /// clock waits for each tick's delivery (and reports no unscheduled sleeper).
  @Test(.onTestClock) func aSinkSubscribedInTheBodyFollowsTheSchedule() async {
    let clock = TestClock.current
    let ticks = LockedState<[Duration]>([])
    let subscription = Flow.timer(every: .seconds(1), clock: clock).prefix(3).sink { tick in
      ticks.withLock { $0.append(tick.offset) }
    }
    await clock.sleepers(count: 1)
    await clock.advance(by: .seconds(3))
    #expect(ticks.withLock { $0 } == [.seconds(1), .seconds(2), .seconds(3)])
    subscription.cancel()
  }

  @Test func withTestClockReturnsTheBodysValueAndRethrowsItsError() async {
    struct Stop: Error {}
    let now = await withTestClock { clock in
      await clock.advance(by: .seconds(2))
      return clock.now
    }
    #expect(now == .init(offset: .seconds(2)))
    await #expect(throws: Stop.self) {
      try await withTestClock { (_) throws(Stop) in throw Stop() }
    }
  }

  @Test func readingTheCurrentClockOutsideAScopeIsAProgrammerError() async {
    await #expect(processExitsWith: .failure) {
      _ = TestClock.current
    }
  }

  // MARK: Work the clock cannot see

  /// A `Task { }` of the code under test's own, nonisolated: the stub and the gate say that the
  /// clock cannot follow the task after the answer.
  @Test(.onTestClock) func aCallFromAPlainTaskIsReported() async {
    let clock = TestClock.current
    let calls = ControlledCalls<Int, Int>()
    let gate = Gate()
    var call: Task<Int, Never>?
    var wait: Task<Void, Never>?
    await withKnownIssue {
      call = Task { await calls.call(1) }
      wait = Task { await gate.wait() }
      // Off the clock until they have come: the clock cannot see a plain task on its way, so its
      // barriers give up once it is idle, which it may be before either task has begun.
      await bounded(Task.detached {
        while calls.waitingCalls.isEmpty || gate.parkedCount == 0, !Task.isCancelled { await Task.yield() }
      }, "the plain tasks' waits")
      await calls.parked(count: 1)
      await gate.entered()
    } matching: { issue in
      issue.comments.contains { $0.rawValue.contains("does not run on the test clock's executor") }
    }
    calls.respond(to: 1, with: 10)
    gate.release()
    // Off the clock, so not `value(of:)`: the tasks end on the global executor, answered above.
    if let call { #expect(await bounded(call, "call") == 10) }
    if let wait { await bounded(wait, "wait") }
    _ = clock
  }

  /// The main actor is settled by the clock: a main-actor caller off the clock is not reported.
  @Test(.onTestClock) @MainActor func aCallFromTheMainActorIsNotReported() async {
    let clock = TestClock.current
    let calls = ControlledCalls<Int, Int>()
    let gate = Gate()
    let call = Task { @MainActor in await calls.call(1) }
    let wait = Task { @MainActor in await gate.wait() }
    await calls.parked(count: 1)
    await gate.entered()
    calls.respond(to: 1, with: 10)
    gate.release()
    #expect(await clock.value(of: call) == 10)
    #expect(await clock.value(of: wait) != nil)
  }

  /// A call from a task on the clock is not reported either.
  @Test(.onTestClock) func aCallFromATaskOnTheClockIsNotReported() async {
    let clock = TestClock.current
    let calls = ControlledCalls<Int, Int>()
    let call = clock.task { await calls.call(1) }
    await calls.parked(count: 1)
    calls.respond(to: 1, with: 10)
    #expect(await clock.value(of: call) == 10)
  }
}

/// The trait on a suite: every test in it, nested suites included, gets a clock of its own.
@Suite(.onTestClock, .hangGuard)
struct TestClockSuiteScopeTests {
  @Test func aTestOfTheSuiteHasAClock() async {
    await TestClock.current.advance(by: .seconds(1))
    #expect(TestClock.current.now == .init(offset: .seconds(1)))
  }

  @Suite(.hangGuard) struct Nested {
    @Test func aTestOfANestedSuiteHasOneToo() {
      #expect(TestClock.current.now == .init(offset: .zero))
    }
  }
}
