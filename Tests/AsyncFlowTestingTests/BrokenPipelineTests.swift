import AsyncFlow
import AsyncFlowTesting
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

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
  let clock = TestClock()
  let searches = ControlledCalls<String, [String]>()
  let model = await clock.onSchedule { BrokenSearchModel(clock: clock) { await searches.call($0) } }
  await clock.runCurrent()
  model.queries.send("swift")
  await clock.advance(by: .milliseconds(300))
  await searches.calls(count: 1)  // never: the query was dropped. Only cancellation ends this wait
  searches.respond(toCall: 0, with: ["swift"])  // answers a call that never came: ignored, once cancelled
  await searches.parked(count: 1)
  await clock.sleepers(count: 1)
  let gate = Gate()
  await gate.entered()
  await clock.runCurrent()
}

/// What `.timeLimit` relies on: it cancels the test's task when the limit is exceeded, and the
/// test fails only once that task returns. Each of AsyncFlowTesting's waits must therefore return
/// when its task is cancelled; a wait that did not would keep the test, and its process, running
/// forever after the time limit was reported.
@Suite("A broken pipeline fails its test instead of hanging", .timeLimit(.minutes(1)))
struct BrokenPipelineTests {
  /// End to end, in a process of its own: the broken model's test runs in a task that is
  /// cancelled once it is parked, as `.timeLimit` cancels a test's task; the task ends, and the
  /// process exits. Without that, the child would hang until its alarm (30 s of wall time) killed
  /// it with a signal, and this expectation of a successful exit would fail.
  @Test func aCancelledTestOfABrokenModelEndsAndItsProcessExits() async {
    await #expect(processExitsWith: .success) {
      alarm(30)  // the bound on the wall time: a wait that ignored cancellation ends the child here
      let clock = TestClock()
      // On the clock's executor: once the executor is idle, the test is parked in a wait.
      let test = clock.task { await searchTestOfTheBrokenModel() }
      await clock.runCurrent()
      test.cancel()
      await bounded(test, "test")
    }
  }

  /// The same, in process, for each of the waits alone, parked for sure before the cancellation:
  /// a task on the clock's executor has run until it suspended when `runCurrent()` returns.
  @Test(arguments: ["calls", "parked", "sleepers", "entered"])
  func aCancelledWaitForSomethingThatNeverComesReturns(wait: String) async {
    let clock = TestClock()
    let calls = ControlledCalls<Int, Int>()
    let gate = Gate()
    let waiter = clock.task {
      switch wait {
      case "calls": await calls.calls(count: 1)
      case "parked": await calls.parked(count: 1)
      case "sleepers": await clock.sleepers(count: 1)
      default: await gate.entered()
      }
      return Task.isCancelled
    }
    await clock.runCurrent()
    waiter.cancel()
    #expect(await bounded(waiter, "waiter") == true)  // it returned because it was cancelled, not because the wait was met
    #expect(calls.log.isEmpty && gate.parkedCount == 0 && clock.pendingSleepers == 0)
  }
}
