import AsyncFlowTesting
import Synchronization
import Testing

private final class Counter: Sendable {
  private let value = Atomic(0)
  func increment() { value.add(1, ordering: .relaxed) }
  var count: Int { value.load(ordering: .relaxed) }
}

@Suite("Gate", .timeLimit(.minutes(1)))
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

  /// Parked for sure: the clock's executor ran the waiter until it suspended in `entered(count:)`.
  @Test func aCancelledEnteredWaitReturnsAtOnceThoughNobodyCame() async {
    let clock = TestClock()
    let gate = Gate()
    let parked = clock.task { await gate.entered(count: 5) }
    await clock.runCurrent()
    parked.cancel()
    await bounded(parked, "parked")
    #expect(gate.parkedCount == 0)
  }
}
