import AsyncFlow
import AsyncFlowTesting
import Testing

@Suite("TestClock.value(of:): a wait that cannot hang", .hangGuard)
struct ValueOfTests {
  private struct Offline: Error, Equatable {}

  @Test(.onTestClock) func returnsTheValueOfWorkThatEndsOnTheSchedule() async {
    let clock = TestClock.current
    let calls = ControlledCalls<String, Int>()
    let work = clock.task { await calls.call("a") + 1 }
    await calls.parked(count: 1)
    calls.respond(to: "a", with: 41)
    #expect(await clock.value(of: work) == 42)
  }

  @Test(.onTestClock) func rethrowsTheErrorOfAThrowingTask() async {
    let clock = TestClock.current
    let work = Task<Int, any Error> { throw Offline() }
    await #expect(throws: Offline.self) { try await clock.value(of: work) }
  }

  /// The issue's case: work that ignores cancellation, cancelled, and awaited. `await work.value`
  /// hangs the test process; `value(of:)` returns nil once the schedule is idle and names the call
  /// the work is parked in, with its argument.
  @Test(.onTestClock) func workThatIgnoresCancellationGivesNilAndAnIssueNamingTheParkedCall() async {
    let clock = TestClock.current
    let calls = ControlledCalls<String, Int>()  // answers only when the test says so, cancelled or not
    let work = clock.task { await calls.call("swift") }
    await calls.parked(count: 1)
    work.cancel()
    await withKnownIssue {
      #expect(await clock.value(of: work) == nil)
    } matching: { issue in
      issue.comments.contains {
        $0.rawValue.contains("has not finished")
          && $0.rawValue.contains(#"call 0 ("swift") waits for its answer, though its task was cancelled"#)
      }
    }
    calls.respond(toCall: 0, with: 1)  // let it go: nothing is left running
    #expect(await clock.value(of: work) == 1)
  }

  @Test(.onTestClock) func theIssueNamesParkedGatesAndSleepers() async {
    let clock = TestClock.current
    let gate = Gate()
    let work = clock.task {
      async let parked: Void = gate.wait()
      try? await clock.sleep(until: .init(offset: .seconds(3)))
      await parked
    }
    await gate.entered()
    await clock.sleepers(count: 1)
    await withKnownIssue {
      #expect(await clock.value(of: work) == nil)
    } matching: { issue in
      issue.comments.contains {
        $0.rawValue.contains("Gate: 1 caller parked in wait()") && $0.rawValue.contains("a sleeper until 3.0 seconds")
      }
    }
    gate.release()
    await clock.run()
    #expect(await clock.value(of: work) != nil)
  }

  /// Nothing parked that AsyncFlowTesting can see: the issue says so.
  @Test(.onTestClock) func theIssueSaysWhenItSeesNothing() async {
    let clock = TestClock.current
    // Made outside every clock's scope and called from a detached task: a wait that no clock sees.
    // Not a global: one made lazily by the test body's first use, in the clock's scope, took that
    // clock as its home, and its detached caller's wait was then reported from no test at all.
    let released = await Task.detached { ControlledCalls<Int, Void>() }.value
    let never = clock.task {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
        Task.detached {
          await released.call(0)
          continuation.resume()
        }
      }
    }
    await withKnownIssue {
      #expect(await clock.value(of: never) == nil)
    } matching: { issue in
      issue.comments.contains { $0.rawValue.contains("nothing AsyncFlowTesting can see") }
    }
    // Off the clock too: a barrier in the clock's scope gives up once the clock is idle, and the
    // detached call may not have come yet.
    await bounded(Task.detached { await released.parked(count: 1) }, "the detached call")
    released.respond(toCall: 0, with: ())
    await bounded(never, "never")  // bounded: released above
  }
}
