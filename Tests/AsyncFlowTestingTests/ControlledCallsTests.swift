import AsyncFlowTesting
import Testing

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// An argument whose `==` runs code of the test's: here, code that reads the same stub.
private struct Reentrant: Hashable, Sendable {
  var value: Int
  var onCompare: @Sendable () -> Void

  static func == (lhs: Reentrant, rhs: Reentrant) -> Bool {
    lhs.onCompare()
    return lhs.value == rhs.value
  }

  func hash(into hasher: inout Hasher) { hasher.combine(value) }
}

/// A response whose `deinit` runs code of the test's.
private final class Released: Sendable {
  let onDeinit: @Sendable () -> Void
  init(onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
  deinit { onDeinit() }
}

// Five minutes: under ThreadSanitizer on two cores its longest tests take most of one when idle.
@Suite("ControlledCalls", .hangGuard)
struct ControlledCallsTests {
  /// `calls(count:)` returns only once the call waits for its answer, so the test can answer at
  /// once. (A call is logged a moment before it waits; answering in between found no call waiting
  /// and stopped the process, about once in a few hundred tries under load.)
  @Test func aCallReportedByTheBarrierCanBeAnsweredAtOnce() async {
    // One bound around the hot loop, not one per round: a round whose caller never ends stops the
    // loop at the time limit all the same.
    let answered = await bounded("10,000 rounds of call, barrier, answer") { () async -> Int in
      for round in 0..<10_000 where !Task.isCancelled {
        let calls = ControlledCalls<Int, Int>()
        let caller = Task { await calls.call(round) }
        await calls.calls(count: 1)
        calls.respond(to: round, with: round * 2)
        guard await caller.value == round * 2 else { return round }
      }
      return 10_000
    }
    #expect(answered == 10_000)
  }

  @Test func theLogRecordsArgumentsCancellationAndAnswers() async {
    let calls = ControlledCalls<String, String>(whenCancelled: "cancelled")
    let first = Task { await calls.call("sw") }
    await calls.parked(count: 1)
    let second = Task { await calls.call("swift") }
    await calls.parked(count: 2)
    first.cancel()
    #expect(await bounded(first, "first") == "cancelled")
    calls.respond(toCall: 1, with: "swift results")
    #expect(await bounded(second, "second") == "swift results")
    #expect(
      calls.log == [
        ControlledCall(index: 0, argument: "sw", wasCancelled: true, isAnswered: true),
        ControlledCall(index: 1, argument: "swift", isAnswered: true),
      ])
    #expect(calls.arguments == ["sw", "swift"])
  }

  @Test func aResultStubFailsByArgumentOrIndex() async {
    struct Offline: Error, Equatable {}
    let calls = ControlledCalls<Int, Result<Int, Offline>>()
    let a = Task { await calls.call(1) }
    let b = Task { await calls.call(2) }
    await calls.parked(count: 2)
    calls.fail(2, with: Offline())
    calls.fail(call: calls.log.first { $0.argument == 1 }!.index, with: Offline())
    #expect(await bounded(a, "a") == .failure(Offline()))
    #expect(await bounded(b, "b") == .failure(Offline()))
  }

  // MARK: Cancellation before the call waits

  /// Cancelled before it could wait, the call used to park for good: the cancellation handler had
  /// run first and found nothing to answer. Bounded by `value(of:)`: unfixed, it returns nil and
  /// records an issue naming the parked call, instead of hanging.
  @Test func aCallFromAnAlreadyCancelledTaskReturnsWhenCancelledAtOnce() async {
    let clock = TestClock()
    let calls = ControlledCalls<Int, Int>(whenCancelled: -1)
    let caller = clock.task {
      withUnsafeCurrentTask { $0?.cancel() }
      return await calls.call(7)
    }
    #expect(await clock.value(of: caller) == -1)
    #expect(calls.log == [ControlledCall(index: 0, argument: 7, wasCancelled: true, isAnswered: true)])
    #expect(calls.waitingCalls.isEmpty)
    await calls.calls(count: 1)  // it counts as a call that reached its wait
  }

  /// Without `whenCancelled`, a call from a cancelled task waits for its answer, as documented.
  @Test func aCallFromAnAlreadyCancelledTaskWithoutWhenCancelledWaitsForItsAnswer() async {
    let clock = TestClock()
    let calls = ControlledCalls<Int, Int>()
    let caller = clock.task {
      withUnsafeCurrentTask { $0?.cancel() }
      return await calls.call(7)
    }
    await calls.parked(count: 1)
    #expect(calls.waitingCalls == [ControlledCall(index: 0, argument: 7, wasCancelled: true)])
    calls.respond(toCall: 0, with: 70)
    #expect(await clock.value(of: caller) == 70)
  }

  // MARK: Programmer errors

  @Test func aNegativeCallsCountIsAProgrammerError() async {
    await #expect(processExitsWith: .failure) {
      await ControlledCalls<Int, Int>().calls(count: -1)
    }
  }

  @Test func aNegativeParkedCountIsAProgrammerError() async {
    await #expect(processExitsWith: .failure) {
      await ControlledCalls<Int, Int>().parked(count: -1)
    }
  }

  // MARK: Re-entrant release: no user code under the stub's lock

  /// `respond(to:)` compares arguments with their `==`, user code: under the stub's lock, an
  /// argument whose `==` reads the same stub deadlocked on that lock. In a process of its own,
  /// with an alarm as the bound: unfixed, the child hangs until the alarm kills it, and this
  /// expectation of a successful exit fails.
  @Test func anArgumentWhoseEqualityReadsTheStubDoesNotDeadlockRespond() async {
    await #expect(processExitsWith: .success) {
      alarm(20)
      let calls = ControlledCalls<Reentrant, Int>()
      let reader = Reentrant(value: 1) { [calls] in _ = calls.log.count + calls.waitingCalls.count }
      let caller = Task { await calls.call(reader) }
      await calls.parked(count: 1)
      calls.respond(to: reader, with: 10)
      guard await bounded(caller, "caller") == 10 else { exit(1) }
    }
  }

  /// A response released by the code under test (or ignored by a cancelled test's answer) may
  /// call back into the stub from its `deinit`: it is let go outside the lock.
  @Test func aResponseWhoseDeinitCallsTheStubAgainDoesNotDeadlock() async {
    await #expect(processExitsWith: .success) {
      alarm(20)
      let calls = ControlledCalls<Int, Released?>()
      let first = Task { _ = await calls.call(1) }  // drops the response at once
      await calls.parked(count: 1)
      calls.respond(
        toCall: 0,
        with: Released { [calls] in
          _ = calls.log
          Task { _ = await calls.call(2) }  // and calls again
        })
      await bounded(first, "first")
      await calls.parked(count: 1)
      guard calls.arguments == [1, 2] else { exit(1) }
      calls.respond(toCall: 1, with: nil)
    }
  }
}
