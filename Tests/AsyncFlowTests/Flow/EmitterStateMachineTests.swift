import Testing

@testable import AsyncFlow

/// The state × event grid of ``EmitterStateMachine``, one test per cell, named
/// `test<Event>_when<State>`. Waiters and the body's task are integers: the consumer is 1,
/// producers are 10, 11, …, the body's task is 100. States: `idle`, `producing`, `bodyEnded`,
/// `cancelled`, `finished` (`modifying` exists only inside an event). Impossible cells are exit tests.
@Suite("EmitterStateMachine", .timeLimit(.minutes(1)))
struct EmitterStateMachineTests {
  typealias Machine = EmitterStateMachine<Int, TestError, Int, Int>

  // MARK: Building states

  static func idle(bufferSize: Int = 0) -> Machine { Machine(bufferSize: bufferSize) }

  /// The consumer asked (its demand is pending) and the body's task 100 is reported.
  static func producing(bufferSize: Int = 0) -> Machine {
    var machine = idle(bufferSize: bufferSize)
    var batch: [Int] = []
    guard case .startBody = machine.next(swapping: &batch) else { preconditionFailure("expected startBody") }
    precondition(machine.bodyStarted(100) == nil)
    return machine
  }

  static func bodyEnded(buffer: [Int] = [1, 2], failure: TestError? = TestError(id: 1)) -> Machine {
    var machine = producing(bufferSize: buffer.count)
    for value in buffer { _ = machine.emit(value) }
    precondition(machine.bodyEnded(failure: failure).isEmpty)
    return machine
  }

  static func cancelled() -> Machine {
    var machine = producing()
    _ = machine.consumerCancelled()
    return machine
  }

  static func finished() -> Machine {
    var machine = idle()
    _ = machine.consumerCancelled()
    return machine
  }

  static func name(_ machine: Machine) -> String {
    switch machine.state {
    case .idle: "idle"
    case .producing: "producing"
    case .bodyEnded: "bodyEnded"
    case .cancelled: "cancelled"
    case .finished: "finished"
    case .modifying: "modifying"
    }
  }

  static func producing(_ machine: Machine) -> Machine.Producing? {
    if case .producing(let producing) = machine.state { return producing }
    return nil
  }

  // MARK: next

  @Test func testNext_whenIdle_startsTheBody() {
    var machine = Self.idle()
    var batch: [Int] = []
    guard case .startBody = machine.next(swapping: &batch) else { return #expect(Bool(false), "expected startBody") }
    #expect(Self.name(machine) == "producing")
  }

  @Test func testNext_whenProducing_suspendsOnAnEmptyBufferAndDeliversABatch() {
    var machine = Self.producing(bufferSize: 4)
    var batch: [Int] = []
    guard case .suspend([]) = machine.next(swapping: &batch) else { return #expect(Bool(false), "expected suspend") }
    _ = machine.emit(1)
    _ = machine.emit(2)
    guard case .deliver([]) = machine.next(swapping: &batch) else { return #expect(Bool(false), "expected deliver") }
    #expect(batch == [1, 2])
    #expect(Self.producing(machine)?.consumerBacklog == 1)
  }

  @Test func testNext_whenProducingWithAProducerWaiting_resumesItOnceThereIsRoom() {
    var machine = Self.producing(bufferSize: 2)
    for value in 1...3 { _ = machine.emit(value) }  // one demanded plus two of buffer
    #expect(machine.suspendProducer(10, token: machine.makeProducerToken(), isCancelled: false) == nil)
    var batch: [Int] = []
    // The consumer takes all three but still holds two: no room yet.
    guard case .deliver([]) = machine.next(swapping: &batch) else { return #expect(Bool(false), "expected deliver") }
    #expect(batch == [1, 2, 3])
    // Asking again after using the batch frees the room.
    guard case .suspend([10]) = machine.next(swapping: &batch) else { return #expect(Bool(false), "expected resume") }
  }

  @Test func testNext_whenBodyEnded_drainsTheBufferThenFails() {
    var machine = Self.bodyEnded(buffer: [1, 2], failure: TestError(id: 1))
    var batch: [Int] = []
    guard case .deliver([]) = machine.next(swapping: &batch) else { return #expect(Bool(false), "expected deliver") }
    #expect(batch == [1, 2])
    guard case .end(TestError(id: 1), nil) = machine.next(swapping: &batch) else {
      return #expect(Bool(false), "expected end(1)")
    }
    #expect(batch.isEmpty)
    #expect(Self.name(machine) == "finished")
  }

  @Test func testNext_whenCancelled_endsAwaitingTheBody() {
    var machine = Self.cancelled()
    var batch: [Int] = []
    guard case .end(nil, 100) = machine.next(swapping: &batch) else { return #expect(Bool(false), "expected end") }
    #expect(Self.name(machine) == "finished")
  }

  @Test func testNext_whenFinished_endsAgain() {
    var machine = Self.finished()
    var batch: [Int] = []
    guard case .end(nil, nil) = machine.next(swapping: &batch) else { return #expect(Bool(false), "expected end") }
  }

  // MARK: suspendConsumer

  @Test func testSuspendConsumer_whenIdle_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = EmitterStateMachine<Int, Never, Int, Int>(bufferSize: 0)
      _ = machine.suspendConsumer(1)
    }
  }

  @Test func testSuspendConsumer_whenProducing_registersItAndTheNextEmitResumesIt() {
    var machine = Self.producing()
    #expect(machine.suspendConsumer(1) == nil)
    // The first element is demanded: the consumer is resumed, but the producer must wait.
    guard case .suspend(resumeConsumer: 1) = machine.emit(1) else { return #expect(Bool(false), "expected suspend") }
  }

  @Test func testSuspendConsumer_whenProducingAndAnElementArrived_resumesAtOnce() {
    var machine = Self.producing(bufferSize: 1)
    _ = machine.emit(1)
    #expect(machine.suspendConsumer(1) == 1)
  }

  @Test func testSuspendConsumer_whenProducingAndAConsumerWaits_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = EmitterStateMachine<Int, Never, Int, Int>(bufferSize: 0)
      var batch: [Int] = []
      _ = machine.next(swapping: &batch)
      _ = machine.suspendConsumer(1)
      _ = machine.suspendConsumer(2)
    }
  }

  @Test func testSuspendConsumer_whenBodyEnded_resumesAtOnce() {
    var machine = Self.bodyEnded()
    #expect(machine.suspendConsumer(1) == 1)
  }

  @Test func testSuspendConsumer_whenCancelled_resumesAtOnce() {
    var machine = Self.cancelled()
    #expect(machine.suspendConsumer(1) == 1)
  }

  @Test func testSuspendConsumer_whenFinished_resumesAtOnce() {
    var machine = Self.finished()
    #expect(machine.suspendConsumer(1) == 1)
  }

  // MARK: consumerCancelled

  @Test func testConsumerCancelled_whenIdle_finishesWithoutABody() {
    var machine = Self.idle()
    let action = machine.consumerCancelled()
    #expect(action.cancelBody == nil && action.resumeConsumer == nil && action.released.isEmpty)
    #expect(Self.name(machine) == "finished")
  }

  @Test func testConsumerCancelled_whenProducing_resumesBothSidesCancelsTheBodyAndReleasesTheBuffer() {
    var machine = Self.producing()
    _ = machine.emit(1)
    #expect(machine.suspendProducer(10, token: machine.makeProducerToken(), isCancelled: false) == nil)
    let action = machine.consumerCancelled()
    #expect(action.resumeProducers == [10] && action.resumeConsumer == nil)
    #expect(action.cancelBody == 100 && action.released == [1])
    guard case .drop = machine.emit(2) else { return #expect(Bool(false), "expected drop") }
    #expect(Self.name(machine) == "cancelled")
  }

  @Test func testConsumerCancelled_whenProducingWithTheConsumerWaiting_resumesIt() {
    var machine = Self.producing()
    _ = machine.suspendConsumer(1)
    #expect(machine.consumerCancelled().resumeConsumer == 1)
  }

  @Test func testConsumerCancelled_whenBodyEnded_releasesTheBufferAndFinishes() {
    var machine = Self.bodyEnded(buffer: [1, 2])
    let action = machine.consumerCancelled()
    #expect(action.released == [1, 2] && action.cancelBody == nil)
    #expect(Self.name(machine) == "finished")
  }

  @Test func testConsumerCancelled_whenCancelled_doesNothing() {
    var machine = Self.cancelled()
    let action = machine.consumerCancelled()
    #expect(action.cancelBody == nil && action.resumeProducers.isEmpty)
    #expect(Self.name(machine) == "cancelled")
  }

  @Test func testConsumerCancelled_whenFinished_doesNothing() {
    var machine = Self.finished()
    #expect(machine.consumerCancelled().cancelBody == nil)
    #expect(Self.name(machine) == "finished")
  }

  // MARK: bodyStarted

  @Test func testBodyStarted_whenIdle_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = EmitterStateMachine<Int, Never, Int, Int>(bufferSize: 0)
      _ = machine.bodyStarted(100)
    }
  }

  @Test func testBodyStarted_whenProducing_keepsTheTaskForCancellation() {
    var machine = Self.idle()
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)
    #expect(machine.bodyStarted(100) == nil)
    #expect(machine.consumerCancelled().cancelBody == 100)
  }

  /// The body may return before its task's handle is reported.
  @Test func testBodyStarted_whenBodyEnded_keepsNothing() {
    var machine = Self.idle()
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)
    _ = machine.bodyEnded(failure: nil)
    #expect(machine.bodyStarted(100) == nil)
    #expect(Self.name(machine) == "bodyEnded")
  }

  @Test func testBodyStarted_whenCancelled_cancelsTheTaskAndTheConsumerAwaitsIt() {
    var machine = Self.idle()
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)
    _ = machine.consumerCancelled()
    #expect(machine.bodyStarted(100) == 100)
    guard case .end(nil, 100) = machine.next(swapping: &batch) else { return #expect(Bool(false), "expected end") }
  }

  @Test func testBodyStarted_whenFinished_keepsNothing() {
    var machine = Self.bodyEnded(buffer: [])
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)  // finished
    #expect(machine.bodyStarted(100) == nil)
    #expect(Self.name(machine) == "finished")
  }

  // MARK: emit

  @Test func testEmit_whenIdle_drops() {
    var machine = Self.idle()
    guard case .drop = machine.emit(1) else { return #expect(Bool(false), "expected drop") }
  }

  @Test func testEmit_whenProducingRendezvous_suspendsTheProducerUntilTheNextDemand() {
    var machine = Self.producing(bufferSize: 0)
    guard case .suspend(nil) = machine.emit(1) else { return #expect(Bool(false), "expected suspend") }
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)
    #expect(batch == [1])
    // The consumer holds element 1 and has not asked again: the producer stays parked.
    #expect(machine.suspendProducer(10, token: machine.makeProducerToken(), isCancelled: false) == nil)
    guard case .suspend([10]) = machine.next(swapping: &batch) else {
      return #expect(Bool(false), "expected the next demand to resume the producer")
    }
  }

  @Test func testEmit_whenProducingBuffered_runsAheadByBufferSize() {
    var machine = Self.producing(bufferSize: 2)
    guard case .proceed = machine.emit(1), case .proceed = machine.emit(2), case .suspend = machine.emit(3) else {
      return #expect(Bool(false), "expected proceed, proceed, suspend")
    }
  }

  @Test func testEmit_whenBodyEnded_drops() {
    var machine = Self.bodyEnded(buffer: [1])
    guard case .drop = machine.emit(2) else { return #expect(Bool(false), "expected drop") }
  }

  @Test func testEmit_whenCancelled_drops() {
    var machine = Self.cancelled()
    guard case .drop = machine.emit(1) else { return #expect(Bool(false), "expected drop") }
  }

  @Test func testEmit_whenFinished_drops() {
    var machine = Self.finished()
    guard case .drop = machine.emit(1) else { return #expect(Bool(false), "expected drop") }
  }

  // MARK: suspendProducer

  @Test func testSuspendProducer_whenIdle_resumesAtOnce() {
    var machine = Self.idle()
    #expect(machine.suspendProducer(10, token: 0, isCancelled: false) == 10)
  }

  @Test func testSuspendProducer_whenProducingAndFull_registersIt() {
    var machine = Self.producing()
    _ = machine.emit(1)
    #expect(machine.suspendProducer(10, token: 0, isCancelled: false) == nil)
    #expect(Self.producing(machine)?.producers.map(\.waiter) == [10])
  }

  @Test func testSuspendProducer_whenProducingAndTheConsumerTookTheBatch_resumesAtOnce() {
    var machine = Self.producing(bufferSize: 1)
    _ = machine.emit(1)
    #expect(machine.suspendProducer(10, token: 0, isCancelled: false) == 10)
  }

  @Test func testSuspendProducer_whenProducingAndItsTaskIsCancelled_resumesAtOnce() {
    var machine = Self.producing()
    _ = machine.emit(1)
    #expect(machine.suspendProducer(10, token: 0, isCancelled: true) == 10)
  }

  @Test func testSuspendProducer_whenBodyEnded_resumesAtOnce() {
    var machine = Self.bodyEnded()
    #expect(machine.suspendProducer(10, token: 0, isCancelled: false) == 10)
  }

  @Test func testSuspendProducer_whenCancelled_resumesAtOnce() {
    var machine = Self.cancelled()
    #expect(machine.suspendProducer(10, token: 0, isCancelled: false) == 10)
  }

  @Test func testSuspendProducer_whenFinished_resumesAtOnce() {
    var machine = Self.finished()
    #expect(machine.suspendProducer(10, token: 0, isCancelled: false) == 10)
  }

  // MARK: producerCancelled

  @Test func testProducerCancelled_whenIdle_findsNothing() {
    var machine = Self.idle()
    #expect(machine.producerCancelled(token: 0) == nil)
  }

  @Test func testProducerCancelled_whenProducing_removesThatProducerOnly() {
    var machine = Self.producing()
    _ = machine.emit(1)
    let first = machine.makeProducerToken()
    let second = machine.makeProducerToken()
    _ = machine.suspendProducer(10, token: first, isCancelled: false)
    _ = machine.suspendProducer(11, token: second, isCancelled: false)
    #expect(machine.producerCancelled(token: second) == 11)
    #expect(machine.producerCancelled(token: second) == nil)
    #expect(Self.producing(machine)?.producers.map(\.waiter) == [10])
  }

  @Test func testProducerCancelled_whenBodyEnded_findsNothing() {
    var machine = Self.bodyEnded()
    #expect(machine.producerCancelled(token: 0) == nil)
  }

  @Test func testProducerCancelled_whenCancelled_findsNothing() {
    var machine = Self.cancelled()
    #expect(machine.producerCancelled(token: 0) == nil)
  }

  @Test func testProducerCancelled_whenFinished_findsNothing() {
    var machine = Self.finished()
    #expect(machine.producerCancelled(token: 0) == nil)
  }

  // MARK: bodyEnded

  @Test func testBodyEnded_whenIdle_changesNothing() {
    var machine = Self.idle()
    #expect(machine.bodyEnded(failure: nil).isEmpty)
    #expect(Self.name(machine) == "idle")
  }

  @Test func testBodyEnded_whenProducing_resumesTheConsumerAndEveryWaitingProducer() {
    var machine = Self.producing()
    _ = machine.emit(1)
    _ = machine.suspendProducer(10, token: machine.makeProducerToken(), isCancelled: false)
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)  // takes 1, still holds it: 10 stays parked
    _ = machine.next(swapping: &batch)  // room: 10 resumed; now the consumer waits
    _ = machine.emit(2)
    _ = machine.suspendProducer(11, token: machine.makeProducerToken(), isCancelled: false)
    #expect(Set(machine.bodyEnded(failure: TestError(id: 2))) == [11])
    #expect(Self.name(machine) == "bodyEnded")
    guard case .deliver = machine.next(swapping: &batch), case .end(TestError(id: 2), nil) = machine.next(swapping: &batch)
    else { return #expect(Bool(false), "expected deliver then end(2)") }
  }

  @Test func testBodyEnded_whenProducingWithTheConsumerWaiting_resumesIt() {
    var machine = Self.producing()
    _ = machine.suspendConsumer(1)
    #expect(machine.bodyEnded(failure: nil) == [1])
  }

  @Test func testBodyEnded_whenBodyEnded_keepsTheFirstEnd() {
    var machine = Self.bodyEnded(buffer: [], failure: TestError(id: 1))
    #expect(machine.bodyEnded(failure: TestError(id: 2)).isEmpty)
    var batch: [Int] = []
    guard case .end(TestError(id: 1), nil) = machine.next(swapping: &batch) else {
      return #expect(Bool(false), "expected end(1)")
    }
  }

  @Test func testBodyEnded_whenCancelled_changesNothing() {
    var machine = Self.cancelled()
    #expect(machine.bodyEnded(failure: TestError(id: 1)).isEmpty)
    var batch: [Int] = []
    guard case .end(nil, 100) = machine.next(swapping: &batch) else { return #expect(Bool(false), "expected end") }
  }

  @Test func testBodyEnded_whenFinished_changesNothing() {
    var machine = Self.finished()
    #expect(machine.bodyEnded(failure: nil).isEmpty)
    #expect(Self.name(machine) == "finished")
  }
}
