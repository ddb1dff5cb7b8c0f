import AsyncFlow
import AsyncFlowTesting
import Testing

/// One wait that nothing can meet, and the start of the issue it must record when it gives up.
struct UnmetBarrier: Sendable, CustomTestStringConvertible {
  var name: String
  var says: String
  var wait: @MainActor @Sendable (TestClock) async -> Void

  var testDescription: String { name }
}

private let unmetBarriers: [UnmetBarrier] = [
  UnmetBarrier(
    name: "ControlledCalls.calls(count:)",
    says: "ControlledCalls<String, Int>.calls(count: 1): 0 calls made"
  ) { _ in
    await ControlledCalls<String, Int>().calls(count: 1)
  },
  UnmetBarrier(
    name: "ControlledCalls.parked(count:)",
    says: "ControlledCalls<String, Int>.parked(count: 1): 0 calls made"
  ) { _ in
    await ControlledCalls<String, Int>().parked(count: 1)
  },
  UnmetBarrier(name: "Gate.entered(count:)", says: "Gate.entered(count: 1): 0 callers parked") { _ in
    await Gate().entered(count: 1)
  },
  UnmetBarrier(name: "TestClock.sleepers(count:)", says: "TestClock.sleepers(count: 1): 0 sleepers") { clock in
    await clock.sleepers(count: 1)
  },
  UnmetBarrier(name: "TestClock.value(of:)", says: "TestClock.value(of:): the task has not finished") { clock in
    let gate = Gate()
    let stuck = clock.task { await gate.wait() }
    _ = await clock.value(of: stuck)
    stuck.cancel()
  },
  UnmetBarrier(
    name: "PassthroughFlow.subscribers(count:)",
    says: "PassthroughFlow<Int, Never>.subscribers(count: 1): 0 subscribers"
  ) { _ in
    await PassthroughFlow<Int, Never>().subscribers(count: 1)
  },
  UnmetBarrier(
    name: "CurrentValueFlow.subscribers(count:)",
    says: "CurrentValueFlow<Int>.subscribers(count: 2): 1 subscriber"
  ) { _ in

    let subject = CurrentValueFlow(0)
    let subscription = subject.sink { _ in }
    await subject.subscribers(count: 2)
    subscription.cancel()
  },
  UnmetBarrier(
    name: "shareFlow.subscribers(count:)",
    says: "AsyncShareFlowSequence<Int, Never>.subscribers(count: 1): 0 subscribers"
  ) { _ in
    await PassthroughFlow<Int, Never>().shareFlow().subscribers(count: 1)
  },
]

/// Every barrier of both libraries gives up alike on a test clock: once the clock is idle and
/// nothing on it can meet the wait, it records an issue naming what it waited for and what is
/// there, and returns, instead of waiting for the test's time limit.
@Suite("Every barrier gives up alike", .onTestClock, .hangGuard)
@MainActor
struct BarrierGiveUpTests {
  @Test(arguments: unmetBarriers)
  func aBarrierThatCanNeverBeMetRecordsAnIssueAndReturns(_ barrier: UnmetBarrier) async {
    let clock = TestClock.current
    let messages = LockedState<[String]>([])
    let started = ContinuousClock.now
    await withKnownIssue {
      await barrier.wait(clock)
    } matching: { issue in
      messages.withLock { $0 += issue.comments.map(\.rawValue) }
      return true
    }
    let elapsed = ContinuousClock.now - started
    let recorded = messages.withLock { $0 }
    #expect(recorded.count == 1, "\(recorded)")
    #expect(recorded.first?.hasPrefix(barrier.says) == true, "\(recorded)")
    // The give-up time, for the record (not asserted: the time limit bounds it).
    print("\(barrier.name) gave up after \(elapsed)")
  }
}
