import AsyncFlow
import AsyncFlowTesting
import Testing

/// A search model with a deliberate bug: its filter drops every query, so the pipeline never
/// searches, and a test that waits for the search waits forever.
@MainActor
final class BrokenSearchModel {
  let queries = PassthroughFlow<String, Never>()
  private(set) var results: [String] = []
  private var subscriptions = Set<FlowSubscription>()

  init(clock: TestClock, search: @escaping @Sendable (String) async -> [String]) {
    queries
      .debounceFlow(for: .milliseconds(300), clock: clock)
      .filter { $0.count > 100 }  // the bug: meant `!$0.isEmpty`
      .switchToLatestFlow { query in Flow.single { await search(query) } }
      .sink { @MainActor [weak self] in self?.results = $0 }
      .store(in: &subscriptions)
  }
}

/// The model test as it would be written for a working model: with the broken one, every wait in
/// it waits for something that never comes.
@MainActor
func searchTestOfTheBrokenModel() async {
  let clock = TestClock.current
  let searches = ControlledCalls<String, [String]>()
  let model = BrokenSearchModel(clock: clock) { await searches.call($0) }
  model.queries.send("swift")
  await clock.advance(by: .milliseconds(300))
  await searches.calls(count: 1)  // never: the query was dropped
  searches.respond(toCall: 0, with: ["swift"])  // answers a call that never came
  await searches.parked(count: 1)
  await clock.sleepers(count: 1)
  let gate = Gate()
  await gate.entered()
  await clock.runCurrent()
}

/// A broken test fails fast, saying what is stuck: on a test clock, a barrier whose condition
/// nothing on the clock can meet records an issue once the clock is idle, and returns, instead of
/// waiting for the suite's time limit (4 of a user's 31 deliberate bugs cost a minute
/// each that way, and the report said only "Time limit was exceeded").
@Suite("A broken pipeline fails its test fast", .onTestClock, .hangGuard)
@MainActor
struct BrokenPipelineTests {
  /// Every barrier of the broken model's test gives up, each with its own message, and the test
  /// goes on to its end.
  @Test func aBrokenModelsTestFailsFastNamingWhatEachWaitWaitsFor() async {
    let messages = LockedState<[String]>([])
    await withKnownIssue {
      await searchTestOfTheBrokenModel()
    } matching: { issue in
      issue.comments.contains { comment in
        messages.withLock { $0.append(comment.rawValue) }
        return true
      }
    }
    // What each wait waited for: its message up to the clock's verdict, or to the waiting calls.
    let firstLines = messages.withLock { $0 }.map { message in
      let end = message.firstRange(of: ". The clock")?.lowerBound ?? message.firstRange(of: ";")?.lowerBound
      return String(message[..<(end ?? message.endIndex)])
    }
    #expect(
      firstLines == [
        "ControlledCalls<String, Array<String>>.calls(count: 1): 0 calls made, 0 parked",
        "ControlledCalls<String, Array<String>>.respond(toCall: 0, with:): call 0 was never made",
        "ControlledCalls<String, Array<String>>.parked(count: 1): 0 calls made, 0 parked",
        "TestClock.sleepers(count: 1): 0 sleepers",
        "Gate.entered(count: 1): 0 callers parked",
      ])
  }

  /// The message names what the code under test is parked in: here the first of two calls came
  /// and waits. The barrier gives up by itself, once the clock is idle and its quiet main-actor
  /// rounds ran nothing, not when the test's time limit cancels it (a barrier that waited for the
  /// limit would return cancelled, with no message). How long that takes is no unit test's
  /// business: on a loaded machine it is however long the main actor takes to come round.
  @Test func aBarrierThatGivesUpNamesTheParkedCalls() async {
    let calls = ControlledCalls<String, Int>()
    let first = TestClock.current.task { await calls.call("a") }
    let message = LockedState("")
    await withKnownIssue {
      await calls.calls(count: 2)
    } matching: { issue in
      message.withLock { $0 = issue.comments.map(\.rawValue).joined() }
      return true
    }
    #expect(!Task.isCancelled, "the barrier returned because the test ran out of time, not by itself")
    #expect(message.withLock { $0 }.hasPrefix(#"ControlledCalls<String, Int>.calls(count: 2): 1 call made, 1 parked: call 0 ("a")"#))
    #expect(message.withLock { $0 }.contains(#"- ControlledCalls<String, Int>: call 0 ("a") waits for its answer"#))
    calls.respond(to: "a", with: 1)
    #expect(await TestClock.current.value(of: first) == 1)
  }

  /// A barrier the clock can meet is met, however much has to run first: no false alarm. The
  /// call comes after a hundred hops on the clock and one through the main actor.
  @Test func aBarrierTheClockCanMeetIsMet() async {
    let clock = TestClock.current
    let calls = ControlledCalls<Int, Int>()
    let caller = clock.task {
      for _ in 0..<100 { await Task.yield() }
      await MainActor.run {}
      return await calls.call(1)
    }
    await calls.calls(count: 1)
    #expect(calls.arguments == [1])
    calls.respond(toCall: 0, with: 10)
    #expect(await clock.value(of: caller) == 10)
  }
}

/// Off a test clock a barrier only waits, until its condition holds or its task is cancelled:
/// what `.timeLimit` relies on, since it cancels the test's task when the limit is exceeded and
/// the test fails only once that task returns. A wait that ignored cancellation would keep the
/// test, and its process, running forever after the time limit was reported.
@Suite("A barrier off the clock returns when cancelled", .hangGuard)
struct OffClockBarrierTests {
  @Test(arguments: ["calls", "parked", "sleepers", "entered"])
  func aCancelledWaitForSomethingThatNeverComesReturns(wait: String) async {
    let clock = TestClock()
    let calls = ControlledCalls<Int, Int>()
    let gate = Gate()
    let waiter = Task {
      switch wait {
      case "calls": await calls.calls(count: 1)
      case "parked": await calls.parked(count: 1)
      case "sleepers": await clock.sleepers(count: 1)
      default: await gate.entered()
      }
      return Task.isCancelled
    }
    waiter.cancel()
    #expect(await bounded(waiter, "waiter") == true)  // it returned because it was cancelled, not because the wait was met
    #expect(calls.log.isEmpty && gate.parkedCount == 0 && clock.pendingSleepers == 0)
  }
}

/// Answering a call that is not waiting is a wrong step of the test: it records an issue and
/// returns, where a `precondition` used to stop the whole test process. Serialized, so that the
/// second test runs after the first in the same process: it would not run at all if the first
/// had stopped the process.
@Suite("Answering a call that is not waiting fails the test, not the process", .serialized, .hangGuard)
struct RespondingToNoCallTests {
  static let firstRan = LockedState(false)

  @Test func answeringACallThatIsNotWaitingRecordsAnIssueNamingTheWaitingCalls() async {
    let calls = ControlledCalls<String, Result<Int, TestFailure>>()
    let waiting = Task { await calls.call("a") }
    await bounded("the call to park") { await calls.parked(count: 1) }
    let messages = LockedState<[String]>([])
    withKnownIssue {
      calls.respond(to: "b", with: .success(1))
      calls.respond(toCall: 5, with: .success(1))
      calls.fail("c", with: TestFailure())
      calls.fail(call: 7, with: TestFailure())
    } matching: { issue in
      messages.withLock { $0 += issue.comments.map(\.rawValue) }
      return true
    }
    #expect(
      messages.withLock { $0 } == [
        #"ControlledCalls<String, Result<Int, TestFailure>>.respond(to: "b", with:): no call with this argument is waiting; waiting: call 0 ("a")"#,
        #"ControlledCalls<String, Result<Int, TestFailure>>.respond(toCall: 5, with:): call 5 was never made; waiting: call 0 ("a")"#,
        #"ControlledCalls<String, Result<Int, TestFailure>>.respond(to: "c", with:): no call with this argument is waiting; waiting: call 0 ("a")"#,
        #"ControlledCalls<String, Result<Int, TestFailure>>.respond(toCall: 7, with:): call 7 was never made; waiting: call 0 ("a")"#,
      ])
    calls.respond(to: "a", with: .success(1))
    #expect(await bounded(waiting, "the waiting call") == .success(1))
    Self.firstRan.withLock { $0 = true }
  }

  @Test func theNextTestStillRuns() {
    #expect(Self.firstRan.withLock { $0 })
  }
}

struct TestFailure: Error, Equatable {}
