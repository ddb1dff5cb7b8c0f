import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `collectLatest` and an upstream failure (issue 24, item 9), as kotlinx's
/// `CollectLatestTest.testUpstreamErrorSuspension`: the body of the element delivered before the
/// failure runs (it begins; a failure cancels it if it is still running), then the failure is
/// thrown. Before, the failure ended the operator before that body's task began: it never ran.
@Suite("collectLatest and an upstream failure", .hangGuard)
struct CollectLatestFailureTests {
  /// kotlinx's case: `flow { emit(1); yield(); throw TestException() }.collectLatest { expect(1) }`.
  @Test(arguments: [true, false])
  func theBodyOfTheElementBeforeAFailureRunsThenTheFailureIsThrown(yielding: Bool) async {
    let runs = LockedState<[Int]>([])
    let failing = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      if yielding { await Task.yield() }
      throw TestError(id: 3)
    }
    await #expect(throws: TestError(id: 3)) {
      try await failing.collectLatest { value in runs.withLock { $0.append(value) } }
    }
    #expect(runs.withLock { $0 } == [1])
  }

  /// The failure does not wait for the body: a body still running is cancelled (it began), and
  /// `collectLatest` throws once it has ended.
  @Test func aFailureCancelsTheBodyStillRunning() async {
    let gate = Gate()
    let log = EventLog<String>()
    let failing = Flow<Int, TestError>(bufferSize: 0) { emitter throws(TestError) in
      await emitter.emit(1)
      await gate.entered()  // the body is running
      throw TestError(id: 4)
    }
    await #expect(throws: TestError(id: 4)) {
      try await failing.collectLatest { value in
        log.append("began \(value)")
        await gate.wait()  // leaves at once when cancelled
        log.append(Task.isCancelled ? "cancelled \(value)" : "finished \(value)")
      }
    }
    #expect(log.all == ["began 1", "cancelled 1"])
  }

  /// Superseding keeps its rule: an element superseded before its body began never runs it, and
  /// the body of the last one before the failure does.
  @Test func anElementSupersededBeforeItsBodyBeganStillNeverRunsIt() async {
    let clock = TestClock()
    let runs = LockedState<[Int]>([])
    let failing = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      await emitter.emit(2)
      throw TestError(id: 5)
    }
    let result = clock.task { () -> TestError? in
      do throws(TestError) {
        try await failing.collectLatest { value in runs.withLock { $0.append(value) } }
        return nil
      } catch {
        return error
      }
    }
    await clock.runCurrent()
    #expect(await bounded(result, "result") == TestError(id: 5))
    // On the clock's serial schedule, 2 arrives before the task of 1's body begins.
    #expect(runs.withLock { $0 } == [2])
  }
}
