import Testing

@testable import AsyncFlow

/// The machines with integers for their waiters and tasks: consumer 1, the input of slot `s` is
/// `10 + s`, tasks are `100...`.
private typealias Machine = CombiningStateMachine<TestError, Int, Int, Int>

extension CombiningStateMachine {
  /// The state's name, and for a running machine each slot's.
  fileprivate var summary: String {
    switch state {
    case .initial: "initial"
    case .running(let running):
      "running("
        + running.slots.map { slot in
          switch slot {
          case .pulling: "pulling"
          case .parked(nil): "parking"
          case .parked(.some): "parked"
          case .finished: "finished"
          }
        }.joined(separator: ",") + ")"
    case .ended(let failure, _): failure == nil ? "ended" : "failed"
    case .cancelled: "cancelled"
    case .finished: "finished"
    case .modifying: "modifying"
    }
  }
}

extension CombiningBatch {
  /// `rows 2`, `first 0,1,0`, `then 1`, `base 3`.
  fileprivate var summary: String {
    switch self {
    case .rows(let rows): "rows \(rows)"
    case .base(let count): "base \(count)"
    case .arrivals(let order, let first):
      (first ? "first " : "then ") + order.map(String.init).joined(separator: ",")
    }
  }
}

/// A machine whose inputs (tasks 100, 101, ...) started, every slot pulling.
private func running(_ mode: CombiningMode, count: Int = 2, readAhead: Int = 4) -> Machine {
  var machine = Machine(mode: mode, count: count, readAhead: readAhead)
  guard case .startInputs = machine.next() else { preconditionFailure("expected startInputs") }
  #expect(machine.inputsStarted(Array(100..<(100 + count))).isEmpty)
  return machine
}

/// What `received(slot)` answered: `keep`, `keep+wake` (the consumer), `park`, `drop`, `stop`.
private func receive(_ machine: inout Machine, _ slot: Int) -> String {
  switch machine.received(slot) {
  case .keep(let consumer, let parks): (parks ? "park" : "keep") + (consumer == nil ? "" : "+wake")
  case .drop(let pullAgain): pullAgain ? "drop" : "stop"
  }
}

/// What `next()` answered: `start`, `suspend`, `end`, `failed`, or the batch, the inputs it
/// resumes and whether it ended.
private func next(_ machine: inout Machine) -> String {
  switch machine.next() {
  case .startInputs: "start"
  case .suspend: "suspend"
  case .end(let failure, let awaiting): (failure == nil ? "end" : "failed") + " awaiting \(awaiting)"
  case .take(let batch, let resume, let end):
    batch.summary + (resume.isEmpty ? "" : " resume \(resume)") + (end.isEmpty ? "" : " ending")
  }
}

@Suite("CombiningStateMachine", .timeLimit(.minutes(1)))
struct CombiningStateMachineTests {
  // MARK: next

  @Test func testNext_whenInitial_startsTheInputs() {
    var machine = Machine(mode: .zip, count: 2)
    #expect(next(&machine) == "start")
    #expect(machine.summary == "running(pulling,pulling)")
  }

  @Test func testNext_whenInitialWithoutInputs_ends() {
    var machine = Machine(mode: .combineLatest, count: 0)
    #expect(next(&machine) == "end awaiting []")
    #expect(machine.summary == "finished")
  }

  @Test(arguments: [CombiningMode.zip, .combineLatest])
  func testNext_whenRunningAndASlotHoldsNothing_suspends(_ mode: CombiningMode) {
    var machine = running(mode)
    #expect(receive(&machine, 0) == "keep")
    #expect(next(&machine) == "suspend")
  }

  @Test func testNext_whenZipSlotsHoldDifferentCounts_takesTheCompleteRows() {
    var machine = running(.zip)
    for _ in 0..<3 { _ = receive(&machine, 0) }
    _ = receive(&machine, 1)
    #expect(next(&machine) == "rows 1")
    _ = receive(&machine, 1)
    _ = receive(&machine, 1)
    #expect(next(&machine) == "rows 2")
    #expect(next(&machine) == "suspend")
  }

  @Test func testNext_whenCombineLatestFirstOutput_takesEveryArrivalMarkedFirst() {
    var machine = running(.combineLatest)
    _ = receive(&machine, 0)
    _ = receive(&machine, 0)
    _ = receive(&machine, 1)
    #expect(next(&machine) == "first 0,0,1")
    #expect(next(&machine) == "suspend")
    // From then on every element makes an output, in the order they arrived.
    _ = receive(&machine, 1)
    _ = receive(&machine, 0)
    #expect(next(&machine) == "then 1,0")
  }

  @Test func testNext_whenWithLatestFromBaseHolds_takesEveryBaseElement() {
    var machine = running(.withLatestFrom)
    _ = receive(&machine, 1)
    _ = receive(&machine, 0)
    _ = receive(&machine, 0)
    #expect(next(&machine) == "base 2")
  }

  @Test func testNext_whenASlotParked_resumesItOnceTakenDownToHalf() {
    var machine = running(.zip, readAhead: 4)
    for _ in 0..<3 { #expect(receive(&machine, 0) == "keep") }
    #expect(receive(&machine, 0) == "park")
    #expect(machine.suspendInput(0, 10) == .park)
    _ = receive(&machine, 1)
    // Held 3 of 4: not yet.
    #expect(next(&machine) == "rows 1")
    _ = receive(&machine, 1)
    #expect(next(&machine) == "rows 1 resume [10]")
    #expect(machine.summary == "running(pulling,pulling)")
  }

  @Test func testNext_whenAParkingSlotIsTakenBeforeItParks_itPullsOnAtOnce() {
    var machine = running(.combineLatest, readAhead: 1)
    #expect(receive(&machine, 0) == "park")
    _ = receive(&machine, 1)
    #expect(next(&machine) == "first 0,1")
    #expect(machine.suspendInput(0, 10) == .resume(pullAgain: true))
    #expect(machine.suspendInput(1, 11) == .resume(pullAgain: true))
  }

  @Test func testNext_whenEndedWithAFailure_endsWithItOnceAwaitingTheTasks() {
    var machine = running(.zip)
    #expect(machine.inputEnded(0, failure: TestError(id: 1)) != nil)
    #expect(next(&machine) == "failed awaiting [100, 101]")
    #expect(next(&machine) == "end awaiting []")
  }

  @Test func testNext_whenCancelled_endsWithoutFailureAwaitingTheTasks() {
    var machine = running(.zip)
    _ = machine.consumerCancelled()
    #expect(next(&machine) == "end awaiting [100, 101]")
    #expect(machine.summary == "finished")
  }

  // MARK: suspendConsumer

  @Test func testSuspendConsumer_whenNothingDeliverable_parksAndTheCompletingElementWakesIt() {
    var machine = running(.zip)
    _ = receive(&machine, 0)
    #expect(machine.suspendConsumer(1) == nil)
    #expect(receive(&machine, 0) == "keep")
    #expect(receive(&machine, 1) == "keep+wake")
    // Woken once: the next element does not wake it again.
    #expect(receive(&machine, 1) == "keep")
    #expect(next(&machine) == "rows 2")
  }

  @Test func testSuspendConsumer_whenDeliverableMeanwhile_resumesAtOnce() {
    var machine = running(.withLatestFrom)
    _ = receive(&machine, 1)
    _ = receive(&machine, 0)
    #expect(machine.suspendConsumer(1) == 1)
  }

  @Test func testSuspendConsumer_whenEnded_resumesAtOnce() {
    var machine = running(.zip)
    _ = machine.inputEnded(0)
    #expect(machine.suspendConsumer(1) == 1)
  }

  // MARK: received

  @Test func testReceived_whenWithLatestFromOtherHasNoLatest_dropsTheBasesElement() {
    var machine = running(.withLatestFrom)
    #expect(receive(&machine, 0) == "drop")
    #expect(next(&machine) == "suspend")
  }

  @Test func testReceived_whenWithLatestFromOther_keepsItAsTheLatestAndPullsOn() {
    var machine = running(.withLatestFrom, readAhead: 1)
    // However many: the other never parks, and never makes an output by itself.
    for _ in 0..<3 { #expect(receive(&machine, 1) == "keep") }
    #expect(machine.suspendConsumer(1) == nil)
    #expect(receive(&machine, 0) == "park+wake")
  }

  @Test(arguments: [CombiningMode.zip, .combineLatest])
  func testReceived_whenRunning_readsAheadUpToTheLimit(_ mode: CombiningMode) {
    var machine = running(mode, readAhead: 3)
    #expect(receive(&machine, 0) == "keep")
    #expect(receive(&machine, 0) == "keep")
    #expect(receive(&machine, 0) == "park")
    #expect(machine.summary == "running(parking,pulling)")
  }

  @Test func testReceived_whenEndedOrCancelled_dropsAndStopsTheInput() {
    var ended = running(.zip)
    _ = ended.inputEnded(0)
    #expect(receive(&ended, 1) == "stop")
    var cancelled = running(.combineLatest)
    _ = cancelled.consumerCancelled()
    #expect(receive(&cancelled, 0) == "stop")
  }

  // MARK: suspendInput

  @Test func testSuspendInput_whenParking_parks() {
    var machine = running(.zip, readAhead: 1)
    _ = receive(&machine, 0)
    #expect(machine.suspendInput(0, 10) == .park)
    #expect(machine.summary == "running(parked,pulling)")
  }

  @Test func testSuspendInput_whenEnded_stops() {
    var machine = running(.zip, readAhead: 1)
    _ = receive(&machine, 0)
    _ = machine.inputEnded(1, failure: TestError())
    #expect(machine.suspendInput(0, 10) == .resume(pullAgain: false))
  }

  // MARK: inputEnded

  @Test func testInputEnded_whenZipSlotHoldsNothing_endsAndStopsTheParkedInputs() {
    var machine = running(.zip, readAhead: 1)
    _ = receive(&machine, 0)
    _ = machine.suspendInput(0, 10)
    let end = machine.inputEnded(1)
    #expect(end?.stopInputs == [10])
    #expect(end?.cancelTasks == [100, 101])
    #expect(machine.summary == "ended")
  }

  @Test func testInputEnded_whenZipsFinishedSlotStillHolds_endsWithTheBatchThatTakesItsLast() {
    var machine = running(.zip)
    _ = receive(&machine, 0)
    _ = receive(&machine, 0)
    _ = receive(&machine, 1)
    #expect(machine.inputEnded(1)?.isEmpty == true)
    // The batch is the consumer's: it makes its output, then sees the end.
    #expect(next(&machine) == "rows 1 ending")
    #expect(next(&machine) == "end awaiting [100, 101]")
  }

  @Test func testInputEnded_whenCombineLatestSlotNeverProduced_endsAtOnce() {
    var machine = running(.combineLatest)
    _ = receive(&machine, 0)
    #expect(machine.inputEnded(1)?.isEmpty == false)
    #expect(next(&machine) == "end awaiting [100, 101]")
  }

  @Test func testInputEnded_whenCombineLatestSlotsProduced_endsOnceAllFinishedAndTaken() {
    var machine = running(.combineLatest)
    _ = receive(&machine, 0)
    _ = receive(&machine, 1)
    #expect(machine.inputEnded(0)?.isEmpty == true)
    #expect(next(&machine) == "first 0,1")
    _ = receive(&machine, 1)
    #expect(machine.inputEnded(1)?.isEmpty == true)
    #expect(next(&machine) == "then 1 ending")
    #expect(next(&machine) == "end awaiting [100, 101]")
  }

  @Test func testInputEnded_whenWithLatestFrom_onlyTheBaseEnds() {
    var machine = running(.withLatestFrom)
    _ = receive(&machine, 1)
    #expect(machine.inputEnded(1)?.isEmpty == true)
    _ = receive(&machine, 0)
    #expect(machine.inputEnded(0)?.isEmpty == true)
    #expect(next(&machine) == "base 1 ending")
  }

  @Test func testInputEnded_whenCancelled_doesNothing() {
    var machine = running(.zip)
    _ = machine.consumerCancelled()
    #expect(machine.inputEnded(0) == nil)
    #expect(machine.summary == "cancelled")
  }

  @Test(arguments: [CombiningMode.zip, .combineLatest, .withLatestFrom])
  func testInputEnded_whenRunningWithAFailure_endsAtOnceBeforeWhatIsHeld(_ mode: CombiningMode) {
    var machine = running(mode, readAhead: 2)
    _ = receive(&machine, 1)
    _ = receive(&machine, 0)
    #expect(receive(&machine, 0) == "park")
    _ = machine.suspendInput(0, 10)
    // Slot 1 holds its element (withLatestFrom: as the latest), slot 0 its own: a batch is there.
    #expect(machine.suspendConsumer(1) == 1)
    let end = machine.inputEnded(1, failure: TestError(id: 2))
    #expect(end?.cancelTasks == [100, 101])
    #expect(end?.stopInputs == [10])
    // Held elements make no output: the failure comes first.
    #expect(next(&machine) == "failed awaiting [100, 101]")
  }

  @Test func testInputEnded_whenFailingAfterTheEnd_isNotTheFirst() {
    var machine = running(.zip)
    #expect(machine.inputEnded(0, failure: TestError(id: 1)) != nil)
    #expect(machine.inputEnded(1, failure: TestError(id: 2)) == nil)
    guard case .end(TestError(id: 1)?, _) = machine.next() else {
      Issue.record("the first failure wins")
      return
    }
  }

  // MARK: consumerCancelled

  @Test func testConsumerCancelled_whenInitial_finishes() {
    var machine = Machine(mode: .zip, count: 2)
    #expect(machine.consumerCancelled().isEmpty)
    #expect(machine.summary == "finished")
  }

  @Test func testConsumerCancelled_whenRunning_cancelsTasksStopsParkedInputsAndResumesTheConsumer() {
    var machine = running(.combineLatest, readAhead: 1)
    _ = receive(&machine, 0)
    _ = machine.suspendInput(0, 10)
    #expect(machine.suspendConsumer(1) == nil)
    let end = machine.consumerCancelled()
    #expect(end.resumeConsumer == 1)
    #expect(end.stopInputs == [10])
    #expect(end.cancelTasks == [100, 101])
  }

  @Test func testConsumerCancelled_whenEnded_dropsTheFailure() {
    var machine = running(.zip)
    _ = machine.inputEnded(0, failure: TestError())
    #expect(machine.consumerCancelled().isEmpty)
    #expect(next(&machine) == "end awaiting [100, 101]")
  }

  // MARK: inputsStarted

  @Test func testInputsStarted_whenEndedBeforeTheTasksWereKnown_cancelsThemAndAwaitsThem() {
    var machine = Machine(mode: .zip, count: 2)
    _ = machine.next()
    _ = machine.inputEnded(0, failure: TestError())
    #expect(machine.inputsStarted([100, 101]) == [100, 101])
    #expect(next(&machine) == "failed awaiting [100, 101]")
  }

  // MARK: Impossible transitions

  @Test func testReceived_whenInitial_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = CombiningStateMachine<Never, Int, Int, Int>(mode: .zip, count: 2)
      _ = machine.received(0)
    }
  }

  @Test func testReceived_whenTheSlotIsParked_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = CombiningStateMachine<Never, Int, Int, Int>(mode: .zip, count: 2, readAhead: 1)
      _ = machine.next()
      _ = machine.received(0)
      _ = machine.received(0)
    }
  }
}
