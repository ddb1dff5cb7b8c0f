import AsyncFlowTesting
import Testing

@Suite("ControlledCalls", .timeLimit(.minutes(1)))
struct ControlledCallsTests {
  /// `calls(count:)` returns only once the call waits for its answer, so the test can answer at
  /// once. (A call is logged a moment before it waits; answering in between found no call waiting
  /// and stopped the process, about once in a few hundred tries under load.)
  @Test func aCallReportedByTheBarrierCanBeAnsweredAtOnce() async {
    for round in 0..<10_000 {
      let calls = ControlledCalls<Int, Int>()
      let caller = Task { await calls.call(round) }
      await calls.calls(count: 1)
      calls.respond(to: round, with: round * 2)
      #expect(await caller.value == round * 2)
    }
  }

  @Test func theLogRecordsArgumentsCancellationAndAnswers() async {
    let calls = ControlledCalls<String, String>(whenCancelled: "cancelled")
    let first = Task { await calls.call("sw") }
    await calls.parked(count: 1)
    let second = Task { await calls.call("swift") }
    await calls.parked(count: 2)
    first.cancel()
    #expect(await first.value == "cancelled")
    calls.respond(toCall: 1, with: "swift results")
    #expect(await second.value == "swift results")
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
    #expect(await a.value == .failure(Offline()))
    #expect(await b.value == .failure(Offline()))
  }
}
