import Testing

@testable import AsyncFlow

/// Runs `body` with a real continuation that it can hand to the state machine; the continuation
/// is resumed after `body` returns, so the machine must not resume it itself.
private func withContinuation(_ body: (UnsafeContinuation<Void, Never>) -> Void) async {
  await withUnsafeContinuation { continuation in
    body(continuation)
    continuation.resume()
  }
}

/// Whether two continuations are the same one (continuations have identity but are not Equatable).
private func same(_ lhs: UnsafeContinuation<Void, Never>?, _ rhs: UnsafeContinuation<Void, Never>) -> Bool {
  guard let lhs else { return false }
  return unsafeBitCast(lhs, to: UnsafeRawPointer.self) == unsafeBitCast(rhs, to: UnsafeRawPointer.self)
}

@Suite("EmitterStateMachine", .timeLimit(.minutes(1)))
struct EmitterStateMachineTests {
  typealias Machine = EmitterStateMachine<Int, TestError>

  @Test func testNext_whenIdle_startsTheBody() {
    var machine = Machine(bufferSize: 0)
    var batch: [Int] = []
    guard case .startBody = machine.next(swapping: &batch) else {
      Issue.record("expected startBody")
      return
    }
  }

  @Test func testEmit_whenRendezvous_suspendsTheProducerUntilTheNextDemand() async {
    var machine = Machine(bufferSize: 0)
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)  // starts the body; the consumer's demand is pending
    await withContinuation { consumer in
      guard case .suspend(let none) = machine.next(swapping: &batch), none.isEmpty else {
        Issue.record("expected suspend")
        return
      }
      #expect(machine.suspendConsumer(consumer) == nil)
      // The first element is demanded: the consumer is resumed, but the producer must wait.
      guard case .suspend(let resumed?) = machine.emit(1) else {
        Issue.record("expected suspend")
        return
      }
      #expect(same(resumed, consumer))
    }
    guard case .deliver(let none) = machine.next(swapping: &batch), none.isEmpty else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1])
    await withContinuation { producer in
      // The consumer holds element 1 and has not asked again: the producer stays parked.
      #expect(machine.suspendProducer(producer, token: 0, isCancelled: false) == nil)
      guard case .suspend(let resumed) = machine.next(swapping: &batch), resumed.count == 1 else {
        Issue.record("expected the next demand to resume the producer")
        return
      }
      #expect(same(resumed.first, producer))
    }
  }

  @Test func testEmit_whenBuffered_runsAheadByBufferSizeCountingTheConsumersBatch() async {
    var machine = Machine(bufferSize: 2)
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)
    // One element demanded plus two of buffer: the third emit must suspend.
    guard case .proceed = machine.emit(1) else {
      Issue.record("emit(1) should proceed")
      return
    }
    guard case .proceed = machine.emit(2) else {
      Issue.record("emit(2) should proceed")
      return
    }
    guard case .suspend = machine.emit(3) else {
      Issue.record("emit(3) should suspend")
      return
    }
    await withContinuation { producer in
      #expect(machine.suspendProducer(producer, token: 0, isCancelled: false) == nil)
      // The consumer takes all three but still holds two: no room yet.
      guard case .deliver(let none) = machine.next(swapping: &batch), none.isEmpty else {
        Issue.record("expected deliver")
        return
      }
      #expect(batch == [1, 2, 3])
      // Asking again after using the batch frees the room.
      guard case .suspend(let resumed) = machine.next(swapping: &batch), resumed.count == 1 else {
        Issue.record("expected resume")
        return
      }
      #expect(same(resumed.first, producer))
    }
  }

  @Test func testNext_whenBodyEnded_drainsTheBufferThenFails() {
    var machine = Machine(bufferSize: 4)
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)
    _ = machine.emit(1)
    _ = machine.emit(2)
    #expect(machine.bodyEnded(failure: TestError(id: 1)).isEmpty)
    guard case .deliver = machine.next(swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1, 2])
    guard case .end(let failure, nil) = machine.next(swapping: &batch) else {
      Issue.record("expected end")
      return
    }
    #expect(failure == TestError(id: 1))
    guard case .end(nil, nil) = machine.next(swapping: &batch) else {
      Issue.record("expected end")
      return
    }
  }

  @Test func testConsumerCancelled_whenProducing_resumesBothSidesAndDropsLaterEmits() async {
    var machine = Machine(bufferSize: 0)
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)
    _ = machine.emit(1)
    await withContinuation { producer in
      #expect(machine.suspendProducer(producer, token: 0, isCancelled: false) == nil)
      let action = machine.consumerCancelled()
      #expect(action.resumeProducers.count == 1 && same(action.resumeProducers.first, producer))
      #expect(action.resumeConsumer == nil)
    }
    guard case .drop = machine.emit(2) else {
      Issue.record("expected drop")
      return
    }
    guard case .end(nil, _) = machine.next(swapping: &batch) else {
      Issue.record("expected end")
      return
    }
    #expect(batch.isEmpty)
  }

  @Test func testSuspendProducer_whenItsTaskIsCancelled_resumesAtOnce() async {
    var machine = Machine(bufferSize: 0)
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)
    _ = machine.emit(1)
    await withContinuation { producer in
      #expect(same(machine.suspendProducer(producer, token: 0, isCancelled: true), producer))
    }
  }
}
