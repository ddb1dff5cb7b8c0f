import Testing

@testable import AsyncFlow

/// Runs `body` with a real continuation to hand to the machine; resumed here if the machine did
/// not resume it, so the test never hangs.
private func withProducer(_ body: (UnsafeContinuation<Bool, Never>) -> Void) async {
  _ = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
    body(continuation)
    continuation.resume(returning: true)
  }
}

@Suite("FlattenStateMachine", .timeLimit(.minutes(1)))
struct FlattenStateMachineTests {
  typealias Machine = FlattenStateMachine<String, Int, String, TestError>

  private func running(_ policy: FlattenPolicy) -> Machine {
    var machine = Machine(policy: policy)
    guard case .start = machine.next() else { preconditionFailure("a new machine starts") }
    return machine
  }

  @Test func testOuterElement_whenLatest_dropsThePendingElementsOfTheSupersededInner() async {
    var machine = running(.latest)
    #expect(machine.outerElement("a", key: 0).startInner?.id == 0)
    guard case .accepted = machine.offer(0, "a1") else {
      Issue.record("expected the offer to be taken")
      return
    }
    #expect(machine.outerElement("b", key: 0).startInner?.id == 1)
    // "a1" was offered before "b" arrived, but is never delivered after it.
    guard case .suspend = machine.next() else {
      Issue.record("expected nothing to deliver")
      return
    }
    guard case .dropped = machine.offer(0, "a2") else {
      Issue.record("expected the superseded inner to be told to stop")
      return
    }
  }

  @Test func testOuterElement_whenLatestAndTheInnerWaitsForRoom_resumesItToStop() async {
    var machine = running(.latest)
    _ = machine.outerElement("a", key: 0)
    for index in 0..<Machine.innerBufferLimit {
      guard case .accepted = machine.offer(0, "a\(index)") else {
        Issue.record("expected room for \(index)")
        return
      }
    }
    guard case .full = machine.offer(0, "more") else {
      Issue.record("expected the inner to be full")
      return
    }
    await withProducer { producer in
      #expect(machine.waitForRoom(0, producer) == nil)
      let effects = machine.outerElement("b", key: 0)
      #expect(effects.resume.count == 1 && effects.resume.first?.1 == false)
      #expect(effects.cancel.isEmpty)  // the task was never attached in this test
    }
  }

  @Test func testInnerEnded_whenSuperseded_discardsItsFailure() {
    var machine = running(.latest)
    _ = machine.outerElement("a", key: 0)
    _ = machine.outerElement("b", key: 0)
    let stale = machine.innerEnded(0, failure: TestError(id: 1))
    #expect(stale.cancel.isEmpty && stale.resumeConsumer == nil)
    guard case .suspend = machine.next() else {
      Issue.record("the stream must go on")
      return
    }
  }

  @Test func testInnerEnded_whenCurrentFails_endsWithTheFailure() {
    var machine = running(.latest)
    _ = machine.outerElement("a", key: 0)
    _ = machine.innerEnded(0, failure: TestError(id: 2))
    guard case .end(let failure, _) = machine.next() else {
      Issue.record("expected end")
      return
    }
    #expect(failure == TestError(id: 2))
  }

  @Test func testOuterElement_whenExhaustAndRunning_dropsTheElement() {
    var machine = running(.exhaust)
    #expect(machine.outerElement("a", key: 0).startInner != nil)
    #expect(machine.outerElement("b", key: 0).startInner == nil)
    _ = machine.innerEnded(0, failure: nil)
    #expect(machine.outerElement("c", key: 0).startInner?.id == 1)
  }

  @Test func testOuterEnded_whenInnersRun_finishesOnlyAfterTheLastEnds() {
    var machine = running(.merge(maxConcurrent: 2))
    _ = machine.outerElement("a", key: 0)
    _ = machine.outerElement("b", key: 0)
    _ = machine.outerEnded(nil)
    _ = machine.innerEnded(0, failure: nil)
    guard case .suspend = machine.next() else {
      Issue.record("b still runs")
      return
    }
    _ = machine.innerEnded(1, failure: nil)
    guard case .end(nil, _) = machine.next() else {
      Issue.record("expected the finish")
      return
    }
  }
}
