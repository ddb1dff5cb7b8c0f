import AsyncFlow
import AsyncFlowTesting
import Synchronization
import Testing

private final class Counter: Sendable {
  private let value = Atomic(0)
  func increment() { value.add(1, ordering: .relaxed) }
  var count: Int { value.load(ordering: .relaxed) }
}

@Suite("Gate", .hangGuard)
struct GateTests {
  @Test func releaseResumesEveryParkedCallerAndOnlyThem() async {
    let gate = Gate()
    let passed = Counter()
    var waiters: [Task<Void, Never>] = []
    for _ in 0..<3 {
      waiters.append(
        Task {
          await gate.wait()
          passed.increment()
        })
    }
    await gate.entered(count: 3)
    #expect(gate.parkedCount == 3)
    #expect(passed.count == 0)
    gate.release()
    for waiter in waiters { await bounded(waiter, "waiter") }
    #expect(passed.count == 3)
    #expect(gate.parkedCount == 0)
  }

  @Test func aCancelledCallerLeavesAtOnce() async {
    let gate = Gate()
    let waiter = Task { await gate.wait() }
    await gate.entered()
    waiter.cancel()
    await bounded(waiter, "waiter")
    #expect(gate.parkedCount == 0)
  }

  @Test func enteredReturnsAtOnceWhenEnoughAreParked() async {
    let gate = Gate()
    #expect(await bounded("entered(count: 0) with nobody parked") { await gate.entered(count: 0) } != nil)
    let waiter = Task { await gate.wait() }
    await bounded("the waiter to park") { await gate.entered() }
    #expect(gate.parkedCount == 1)
    #expect(await bounded("entered() with the waiter already parked") { await gate.entered() } != nil)
    gate.release()
    #expect(await bounded(waiter, "the released waiter") != nil)
    #expect(gate.parkedCount == 0)
  }

  /// Off a clock, `entered(count:)` only waits: its cancellation ends it.
  @Test func aCancelledEnteredWaitReturnsAtOnceThoughNobodyCame() async {
    let gate = Gate()
    let parked = Task { await gate.entered(count: 5) }
    parked.cancel()
    await bounded(parked, "parked")
    #expect(gate.parkedCount == 0)
  }

  /// On a clock, `entered(count:)` gives up once the clock is idle, and says how many came.
  @Test func enteredOnTheClockGivesUpWhenTheClockIsIdle() async {
    await withTestClock { clock in
      let gate = Gate()
      let waiter = clock.task { await gate.wait() }
      let message = LockedState("")
      await withKnownIssue {
        await gate.entered(count: 2)
      } matching: { issue in
        message.withLock { $0 = issue.comments.map(\.rawValue).joined() }
        return true
      }
      #expect(message.withLock { $0 }.hasPrefix("Gate.entered(count: 2): 1 caller parked"))
      gate.release()
      #expect(await clock.value(of: waiter) != nil)
    }
  }
}
