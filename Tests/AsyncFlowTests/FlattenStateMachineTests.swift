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

  /// An outer element arrives and the inner's task begins at once: its channel, if one starts.
  private func start(_ element: String, in machine: inout Machine) -> Machine.Channel? {
    guard let id = machine.outerElement(element, key: 0).startInner else { return nil }
    return machine.claim(id)?.channel
  }

  /// Offers `element` on `channel` as the inner's task does: listing the channel when it asks.
  private func offer(_ element: String, on channel: Machine.Channel, to machine: inout Machine) -> Bool {
    guard case .accepted(let needsListing) = channel.offer(element) else { return false }
    if needsListing { _ = machine.listReady(channel) }
    return true
  }

  /// Ends `channel` as the inner's task does.
  private func end(_ channel: Machine.Channel, failure: TestError?, in machine: inout Machine) -> Machine.Effects {
    machine.innerEnded(channel, failure: failure)
  }

  @Test func testOuterElement_whenLatest_dropsThePendingElementsOfTheSupersededInner() async {
    var machine = running(.latest)
    guard let channel = start("a", in: &machine) else {
      Issue.record("expected an inner to start")
      return
    }
    #expect(offer("a1", on: channel, to: &machine))
    #expect(start("b", in: &machine)?.id == 1)
    // "a1" was offered before "b" arrived, but is never delivered after it.
    guard case .suspend = machine.next() else {
      Issue.record("expected nothing to deliver")
      return
    }
    guard case .dropped = channel.offer("a2") else {
      Issue.record("expected the superseded inner to be told to stop")
      return
    }
  }

  @Test func testOuterElement_whenLatestAndTheInnersTaskHasNotBegun_handsThatTaskTheNewElement() {
    var machine = running(.latest)
    guard let id = machine.outerElement("a", key: 0).startInner else {
      Issue.record("expected an inner to start")
      return
    }
    let superseding = machine.outerElement("b", key: 0)
    // Nothing to cancel and nothing new to start: the waiting task begins with "b", and "a" is
    // never transformed.
    #expect(superseding.startInner == nil && superseding.cancel.isEmpty)
    #expect(machine.claim(id)?.element == "b")
  }

  @Test func testNext_whenMerge_takesEverythingReadyInOneBatch() async {
    var machine = running(.merge(maxConcurrent: 2))
    guard let first = start("a", in: &machine), let second = start("b", in: &machine) else {
      Issue.record("expected two inners to start")
      return
    }
    #expect(offer("a1", on: first, to: &machine))
    #expect(offer("b1", on: second, to: &machine))
    #expect(offer("a2", on: first, to: &machine))
    guard case .deliver(let elements, _) = machine.next() else {
      Issue.record("expected a batch")
      return
    }
    #expect(elements == ["a1", "a2", "b1"])
  }

  @Test func testNext_whenLatest_takesOneElementAtATime() async {
    var machine = running(.latest)
    guard let channel = start("a", in: &machine) else {
      Issue.record("expected an inner to start")
      return
    }
    #expect(offer("a1", on: channel, to: &machine))
    #expect(offer("a2", on: channel, to: &machine))
    guard case .deliver(let elements, _) = machine.next() else {
      Issue.record("expected an element")
      return
    }
    #expect(elements == ["a1"])
  }

  @Test func testOuterElement_whenLatestAndTheInnerWaitsForRoom_resumesItToStop() async {
    var machine = running(.latest)
    guard let channel = start("a", in: &machine) else {
      Issue.record("expected an inner to start")
      return
    }
    for index in 0..<Machine.Channel.bufferLimit {
      guard offer("a\(index)", on: channel, to: &machine) else {
        Issue.record("expected room for \(index)")
        return
      }
    }
    guard case .full = channel.offer("more") else {
      Issue.record("expected the inner to be full")
      return
    }
    await withProducer { producer in
      #expect(channel.waitForRoom(producer) == nil)
      let effects = machine.outerElement("b", key: 0)
      #expect(effects.resume.count == 1 && effects.resume.first?.1 == false)
      #expect(effects.cancel.isEmpty)  // the task was never attached in this test
    }
  }

  @Test func testInnerEnded_whenSuperseded_discardsItsFailure() {
    var machine = running(.latest)
    guard let channel = start("a", in: &machine) else {
      Issue.record("expected an inner to start")
      return
    }
    _ = start("b", in: &machine)
    let stale = end(channel, failure: TestError(id: 1), in: &machine)
    #expect(stale.cancel.isEmpty && stale.resumeConsumer == nil)
    guard case .suspend = machine.next() else {
      Issue.record("the stream must go on")
      return
    }
  }

  @Test func testInnerEnded_whenCurrentFails_endsWithTheFailure() {
    var machine = running(.latest)
    guard let channel = start("a", in: &machine) else {
      Issue.record("expected an inner to start")
      return
    }
    _ = end(channel, failure: TestError(id: 2), in: &machine)
    // Nothing was left to take: it retired at once, so a newer outer element cannot swallow it.
    #expect(machine.outerElement("b", key: 0).startInner == nil)
    guard case .end(let failure, _) = machine.next() else {
      Issue.record("expected end")
      return
    }
    #expect(failure == TestError(id: 2))
  }

  @Test func testInnerEnded_whenElementsWait_retiresAfterTheConsumerTookTheLast() {
    var machine = running(.merge(maxConcurrent: 1))
    guard let channel = start("a", in: &machine) else {
      Issue.record("expected an inner to start")
      return
    }
    #expect(offer("a1", on: channel, to: &machine))
    _ = end(channel, failure: TestError(id: 3), in: &machine)
    // "a1" comes first, in the same batch as the decision to end with the failure.
    guard case .deliver(let elements, _) = machine.next() else {
      Issue.record("expected a1")
      return
    }
    #expect(elements == ["a1"])
    guard case .end(let failure, _) = machine.next() else {
      Issue.record("expected the end")
      return
    }
    #expect(failure == TestError(id: 3))
  }

  @Test func testNext_whenKeyedLatest_servesBusyKeysInTurn() {
    var machine = running(.latest)
    guard let first = machine.outerElement("a", key: 1).startInner.flatMap({ machine.claim($0)?.channel }),
      let second = machine.outerElement("b", key: 2).startInner.flatMap({ machine.claim($0)?.channel })
    else {
      Issue.record("expected two inners to start")
      return
    }
    for index in 0..<3 {
      #expect(offer("a\(index)", on: first, to: &machine))
      #expect(offer("b\(index)", on: second, to: &machine))
    }
    var delivered: [String] = []
    for _ in 0..<4 {
      guard case .deliver(let elements, _) = machine.next() else { break }
      delivered += elements
    }
    // One key's backlog does not hold back the other's.
    #expect(delivered == ["a0", "b0", "a1", "b1"])
  }

  @Test func testNext_whenLatestAndTheCurrentInnerIsAlwaysBusy_keepsTheReadyQueueBounded() {
    var machine = running(.latest)
    var longest = 0
    for index in 0..<1_000 {
      guard let channel = start("x\(index)", in: &machine) else {
        Issue.record("expected an inner to start")
        return
      }
      #expect(offer("first", on: channel, to: &machine) && offer("second", on: channel, to: &machine))
      _ = machine.next()  // a slow consumer: one element per outer element
      longest = max(longest, machine.readyQueueLength)
    }
    #expect(longest <= 64)
  }

  @Test func testOuterElement_whenExhaustAndRunning_dropsTheElement() {
    var machine = running(.exhaust)
    guard let channel = start("a", in: &machine) else {
      Issue.record("expected an inner to start")
      return
    }
    #expect(start("b", in: &machine) == nil)
    // Nothing was left to take: the inner retires at once, without waiting for the consumer.
    _ = end(channel, failure: nil, in: &machine)
    #expect(start("c", in: &machine)?.id == 1)
  }

  @Test func testOuterEnded_whenInnersRun_finishesOnlyAfterTheLastEnds() {
    var machine = running(.merge(maxConcurrent: 2))
    guard let first = start("a", in: &machine), let second = start("b", in: &machine) else {
      Issue.record("expected two inners to start")
      return
    }
    _ = machine.outerEnded(nil)
    _ = end(first, failure: nil, in: &machine)
    guard case .suspend = machine.next() else {
      Issue.record("b still runs")
      return
    }
    _ = end(second, failure: nil, in: &machine)
    guard case .end(nil, _) = machine.next() else {
      Issue.record("expected the finish")
      return
    }
  }
}
