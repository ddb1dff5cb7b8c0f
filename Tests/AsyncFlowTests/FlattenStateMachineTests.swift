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

@Suite("FlattenStateMachine")
struct FlattenStateMachineTests {
  typealias Machine = FlattenStateMachine<String, Int, String, TestError>

  private func running(_ policy: FlattenPolicy) -> Machine {
    var machine = Machine(policy: policy)
    guard case .start = machine.next() else { preconditionFailure("a new machine starts") }
    return machine
  }

  @Test func testOuterElement_whenLatest_dropsThePendingElementOfTheSupersededInner() async {
    var machine = running(.latest)
    let first = machine.outerElement("a", key: 0)
    #expect(first.startInner?.id == 0)
    await withProducer { producer in
      #expect(machine.offer(0, "a1", producer: producer).accepted)
      let second = machine.outerElement("b", key: 0)
      #expect(second.startInner?.id == 1)
      #expect(second.resume.count == 1 && second.resume.first?.1 == false)
    }
    // "a1" was offered before "b" arrived, but is never delivered after it.
    guard case .suspend = machine.next() else {
      Issue.record("expected nothing to deliver")
      return
    }
    await withProducer { producer in
      #expect(machine.offer(0, "a2", producer: producer).accepted == false)
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
