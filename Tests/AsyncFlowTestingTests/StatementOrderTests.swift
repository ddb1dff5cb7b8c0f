import AsyncFlow
import AsyncFlowTesting
import Synchronization
import Testing

/// "Nothing moves between two statements; the clock runs while the test awaits." The clock's
/// executor drained its jobs by itself on a global-executor task, so a `@MainActor` test body saw
/// a nonisolated sink run between two of its statements (37 of 40 cases of the first test when a
/// user tried it). Its jobs now run on the main actor, in turn with the body.
@Suite("Nothing moves between two statements", .onTestClock, .hangGuard)
@MainActor
struct StatementOrderTests {
  /// The user's case, 40 times: a millisecond of work between `send(1)` and the read.
  @Test(arguments: 0..<40) func aSinkDoesNotRunBetweenTwoStatements(round: Int) async {
    let clock = TestClock.current
    let subject = PassthroughFlow<Int, Never>()
    let seen = Mutex<[Int]>([])
    let subscription = subject.map { $0 * 10 }.sink { value in seen.withLock { $0.append(value) } }
    await clock.runCurrent()
    subject.send(1)
    var spin = 0
    for i in 0..<200_000 { spin &+= i }  // about a millisecond of work in the same turn
    let before = seen.withLock { $0 }
    subject.send(2)
    await clock.runCurrent()
    #expect(before.isEmpty, "the sink ran between two statements (spin \(spin))")
    #expect(seen.withLock { $0 } == [10, 20])
    subscription.cancel()
  }

  /// Any await of the body lets the clock run: a task's value, a loop over a flow, a model's
  /// async method. None of them hangs, with no `runCurrent()` before it.
  @Test func anyAwaitOfTheBodyRunsTheClock() async {
    let clock = TestClock.current
    let doubled = clock.task { await Flow.sequence([1, 2, 3]).map { $0 * 2 }.reduce(0, +) }
    #expect(await doubled.value == 12)
    var seen: [Int] = []
    for await value in Flow.merge(Flow.sequence([1, 2]), Flow.just(3)) { seen.append(value) }
    #expect(seen.sorted() == [1, 2, 3])
    let slots = TaskSlots<String>()
    let ran = Mutex(false)
    await slots.runAndWait("work") { ran.withLock { $0 = true } }
    #expect(ran.withLock { $0 })
  }
}
