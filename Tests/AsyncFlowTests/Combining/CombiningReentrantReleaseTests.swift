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

/// No element is released while a combining storage holds its lock: an element's `deinit` that
/// calls back into the same pipeline (here: cancels the consumer's task, whose cancellation handler
/// takes that lock) must not deadlock. Each runs in a process of its own, everything on a
/// `TestClock`'s executor so that each step has run until it suspended; before the fix the child
/// deadlocked, and its alarm (10 s of wall time) killed it: the expected successful exit failed.
@Suite("Combining: re-entrant release", .hangGuard)
struct CombiningReentrantReleaseTests {
  /// combineLatest: a2 replaces a1 as slot 0's latest in the input's task (a hand-off to the
  /// waiting consumer); a1's `deinit` cancels the consumer.
  @Test func aReplacedLatestIsReleasedOutsideTheLock() async {
    await #expect(processExitsWith: .success) {
      alarm(10)
      let clock = TestClock()
      let a = CombiningScript<ReleaseHook, Never>()
      let b = CombiningScript<ReleaseHook, Never>()
      let consumer = TaskHandleBox()
      let task = clock.task {
        var iterator = Flow.combineLatest(a, b).makeAsyncIterator()
        do { _ = await iterator.next() }  // (a1, b1), let go at once: the latest holds a1 alone
        _ = await iterator.next()  // cancelled by a1's release
      }
      consumer.set(task)
      await clock.runCurrent()
      a.send(ReleaseHook { consumer.cancel() })
      b.send(ReleaseHook())
      await clock.runCurrent()
      a.send(ReleaseHook())
      await clock.runCurrent()
      await bounded(task, "task")
    }
  }

  /// withLatestFrom: o2 replaces o1 as the other's latest in its input's task while the consumer
  /// waits for the base; o1's `deinit` cancels the consumer.
  @Test func theOthersReplacedLatestIsReleasedOutsideTheLock() async {
    await #expect(processExitsWith: .success) {
      alarm(10)
      let clock = TestClock()
      let base = CombiningScript<ReleaseHook, Never>()
      let other = CombiningScript<ReleaseHook, Never>()
      let consumer = TaskHandleBox()
      let task = clock.task {
        var iterator = base.withLatestFromFlow(other).makeAsyncIterator()
        _ = await iterator.next()  // cancelled by o1's release
      }
      consumer.set(task)
      await clock.runCurrent()
      other.send(ReleaseHook { consumer.cancel() })
      await clock.runCurrent()
      other.send(ReleaseHook())
      await clock.runCurrent()
      await bounded(task, "task")
    }
  }
}
