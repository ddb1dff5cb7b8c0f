import Testing

@testable import AsyncFlow

/// Runs `body` with a real continuation it can hand to the machine; resumed after `body` returns,
/// so the machine must not resume it itself (it only returns continuations in actions).
private func withConsumer(_ body: (UnsafeContinuation<Void, Never>) -> Void) async {
  await withUnsafeContinuation { continuation in
    body(continuation)
    continuation.resume()
  }
}

private func withInput(_ body: (UnsafeContinuation<Bool, Never>) -> Void) async {
  _ = await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
    body(continuation)
    continuation.resume(returning: true)
  }
}

private func same<C>(_ lhs: C?, _ rhs: C) -> Bool {
  guard let lhs else { return false }
  return unsafeBitCast(lhs, to: UnsafeRawPointer.self) == unsafeBitCast(rhs, to: UnsafeRawPointer.self)
}

private typealias Machine = CombiningStateMachine<TestError>

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
          case .holding(nil): "holding"
          case .holding(.some): "parked"
          case .finished: "finished"
          }
        }.joined(separator: ",") + ")"
    case .ended(let failure, _, let ready): (failure == nil ? "ended" : "failed") + (ready ? "+ready" : "")
    case .cancelled: "cancelled"
    case .finished: "finished"
    case .modifying: "modifying"
    }
  }
}

/// A machine whose inputs started, every slot pulling. With `readAhead: 1` (the default here) a
/// slot parks on its first held element, as every slot did before inputs read ahead.
private func running(_ mode: CombiningMode, count: Int = 2, readAhead: Int = 1) -> Machine {
  var machine = Machine(mode: mode, count: count, readAhead: readAhead)
  guard case .startInputs = machine.next() else { preconditionFailure("expected startInputs") }
  #expect(machine.inputsStarted([]).isEmpty)
  return machine
}

private func isHold(_ action: Machine.ReceiveAction) -> Bool {
  if case .hold = action { return true }
  return false
}

@Suite("CombiningStateMachine", .timeLimit(.minutes(1)))
struct CombiningStateMachineTests {
  // MARK: next

  @Test func testNext_whenInitial_startsTheInputs() {
    var machine = Machine(mode: .zip, count: 2)
    guard case .startInputs = machine.next() else {
      Issue.record("expected startInputs")
      return
    }
    #expect(machine.summary == "running(pulling,pulling)")
  }

  @Test func testNext_whenInitialWithoutInputs_ends() {
    var machine = Machine(mode: .combineLatest, count: 0)
    guard case .end(nil, let tasks) = machine.next(), tasks.isEmpty else {
      Issue.record("expected end")
      return
    }
    #expect(machine.summary == "finished")
  }

  @Test(arguments: [CombiningMode.zip, .combineLatest])
  func testNext_whenRunningAndNotEverySlotHolds_suspends(_ mode: CombiningMode) {
    var machine = running(mode)
    #expect(isHold(machine.received(0)))
    guard case .suspend = machine.next() else {
      Issue.record("expected suspend")
      return
    }
    #expect(machine.summary == "running(holding,pulling)")
  }

  @Test(arguments: [CombiningMode.zip, .combineLatest])
  func testNext_whenRunningAndEverySlotHolds_deliversAllAndResumesTheParkedInputs(_ mode: CombiningMode) async {
    var machine = running(mode)
    _ = machine.received(0)
    _ = machine.received(1)
    await withInput { parked in
      #expect(machine.suspendInput(0, parked) == .park)
      guard case .deliver(.all, let resume, _) = machine.next() else {
        Issue.record("expected deliver all")
        return
      }
      #expect(resume.count == 1 && same(resume.first, parked))
    }
    #expect(machine.summary == "running(pulling,pulling)")
  }

  @Test func testNext_whenCombineLatestHasEveryLatest_deliversOneSlotInArrivalOrder() {
    var machine = running(.combineLatest)
    _ = machine.received(0)
    _ = machine.received(1)
    guard case .deliver(.all, _, _) = machine.next() else {
      Issue.record("expected the first output")
      return
    }
    _ = machine.received(1)
    _ = machine.received(0)
    guard case .deliver(.one(1), _, _) = machine.next() else {
      Issue.record("expected slot 1 first")
      return
    }
    guard case .deliver(.one(0), _, _) = machine.next() else {
      Issue.record("expected slot 0 next")
      return
    }
    guard case .suspend = machine.next() else {
      Issue.record("expected suspend")
      return
    }
  }

  @Test func testNext_whenZipHasOnlyOneNewElement_suspends() {
    var machine = running(.zip)
    _ = machine.received(0)
    _ = machine.received(1)
    _ = machine.next()
    _ = machine.received(0)
    guard case .suspend = machine.next() else {
      Issue.record("zip needs a new element from every slot")
      return
    }
  }

  @Test func testNext_whenEnded_endsWithTheFailureOnce() {
    var machine = running(.zip)
    _ = machine.inputFailed(1, TestError(id: 1))
    guard case .end(TestError(id: 1)?, _) = machine.next() else {
      Issue.record("expected the failure")
      return
    }
    guard case .end(nil, _) = machine.next() else {
      Issue.record("expected nil forever after")
      return
    }
    #expect(machine.summary == "finished")
  }

  @Test func testNext_whenCancelled_endsWithoutFailureAwaitingTheTasks() {
    var machine = Machine(mode: .zip, count: 2)
    _ = machine.next()
    let task = Task<Void, Never> {}
    _ = machine.inputsStarted([task])
    _ = machine.consumerCancelled()
    guard case .end(nil, let tasks) = machine.next(), tasks.count == 1 else {
      Issue.record("expected end")
      return
    }
  }

  // MARK: suspendConsumer

  @Test func testSuspendConsumer_whenNothingDeliverable_parksAndTheCompletingElementHandsTheOutputOver() async {
    var machine = running(.zip)
    await withConsumer { consumer in
      _ = machine.next()
      #expect(machine.suspendConsumer(consumer) == nil)
      #expect(isHold(machine.received(0)))  // one slot is not enough
      // Slot 1 completes the pair: the output is made for the consumer at once, and slot 1's own
      // task pulls on without parking. (Slot 0's task has not parked yet, so none is resumed.)
      guard case .handOff(.all, let resumed, let inputs, _, _) = machine.received(1), inputs.isEmpty else {
        Issue.record("expected handOff")
        return
      }
      #expect(same(resumed, consumer))
    }
    await withInput { input in
      // Slot 0's element was taken before its task parked: it pulls on at once.
      #expect(machine.suspendInput(0, input) == .resume(pullAgain: true))
    }
    #expect(machine.summary == "running(pulling,pulling)")
    guard case .deliverReady = machine.next() else {
      Issue.record("expected the handed-over output")
      return
    }
    guard case .suspend = machine.next() else {
      Issue.record("expected suspend: the output was returned once")
      return
    }
  }

  @Test func testReceived_whenCombineLatestConsumerWaits_handsOverOneOutputPerElement() async {
    var machine = running(.combineLatest)
    _ = machine.received(0)
    _ = machine.received(1)
    _ = machine.next()
    await withConsumer { consumer in
      guard case .suspend = machine.next() else {
        Issue.record("expected suspend")
        return
      }
      #expect(machine.suspendConsumer(consumer) == nil)
      guard case .handOff(.one(1), _, let inputs, _, _) = machine.received(1), inputs.isEmpty else {
        Issue.record("expected handOff of slot 1")
        return
      }
    }
    #expect(isHold(machine.received(1)))  // the consumer is not waiting: slot 1 holds its next
    guard case .deliverReady = machine.next() else {
      Issue.record("expected the handed-over output first")
      return
    }
    guard case .deliver(.one(1), _, _) = machine.next() else {
      Issue.record("then the held one")
      return
    }
  }

  @Test func testInputFinished_whenAnOutputIsReady_deliversItBeforeTheEnd() async {
    var machine = running(.zip)
    await withConsumer { consumer in
      _ = machine.next()
      _ = machine.suspendConsumer(consumer)
      _ = machine.received(0)
      _ = machine.received(1)
    }
    _ = machine.inputFinished(1)  // slot 1 pulled on after the hand-off, and ended
    #expect(machine.summary == "ended+ready")
    guard case .deliverReady = machine.next() else {
      Issue.record("the output made before the end comes first")
      return
    }
    guard case .end(nil, _) = machine.next() else {
      Issue.record("then the end")
      return
    }
  }

  @Test func testConsumerCancelled_whenAnOutputIsReady_dropsIt() async {
    var machine = running(.zip)
    await withConsumer { consumer in
      _ = machine.next()
      _ = machine.suspendConsumer(consumer)
      _ = machine.received(0)
      _ = machine.received(1)
    }
    _ = machine.consumerCancelled()
    guard case .end(nil, _) = machine.next() else {
      Issue.record("a cancelled consumer gets no output")
      return
    }
  }

  @Test func testSuspendConsumer_whenDeliverableMeanwhile_resumesAtOnce() async {
    var machine = running(.zip)
    _ = machine.next()
    _ = machine.received(0)
    _ = machine.received(1)
    await withConsumer { consumer in
      #expect(same(machine.suspendConsumer(consumer), consumer))
    }
  }

  @Test func testSuspendConsumer_whenEnded_resumesAtOnce() async {
    var machine = running(.zip)
    _ = machine.inputFinished(0)
    await withConsumer { consumer in
      #expect(same(machine.suspendConsumer(consumer), consumer))
    }
  }

  // MARK: received

  @Test func testReceived_whenWithLatestFromOtherHasNoLatest_dropsTheBasesElement() {
    var machine = running(.withLatestFrom)
    guard case .drop(pullAgain: true) = machine.received(0) else {
      Issue.record("expected drop")
      return
    }
    #expect(machine.summary == "running(pulling,pulling)")
  }

  @Test func testReceived_whenWithLatestFromOther_replacesTheLatestAndPullsOn() {
    var machine = running(.withLatestFrom)
    guard case .replaceLatest = machine.received(1) else {
      Issue.record("expected replaceLatest")
      return
    }
    guard case .replaceLatest = machine.received(1) else {
      Issue.record("expected replaceLatest")
      return
    }
    #expect(isHold(machine.received(0)))
    guard case .deliver(.one(0), _, _) = machine.next() else {
      Issue.record("expected the base's element")
      return
    }
  }

  @Test func testReceived_whenEndedOrCancelled_dropsAndStopsTheInput() {
    var ended = running(.combineLatest)
    _ = ended.inputFailed(0, TestError())
    guard case .drop(pullAgain: false) = ended.received(1) else {
      Issue.record("expected drop")
      return
    }
    var cancelled = running(.combineLatest)
    _ = cancelled.consumerCancelled()
    guard case .drop(pullAgain: false) = cancelled.received(1) else {
      Issue.record("expected drop")
      return
    }
  }

  // MARK: suspendInput

  @Test func testSuspendInput_whenHolding_parks() async {
    var machine = running(.zip)
    _ = machine.received(0)
    await withInput { input in
      #expect(machine.suspendInput(0, input) == .park)
      #expect(machine.summary == "running(parked,pulling)")
    }
  }

  @Test func testSuspendInput_whenTakenMeanwhile_pullsAgainAtOnce() async {
    var machine = running(.zip)
    _ = machine.received(0)
    _ = machine.received(1)
    _ = machine.next()
    await withInput { input in
      #expect(machine.suspendInput(0, input) == .resume(pullAgain: true))
    }
  }

  @Test func testSuspendInput_whenEnded_stops() async {
    var machine = running(.zip)
    _ = machine.received(0)
    _ = machine.inputFinished(1)
    await withInput { input in
      #expect(machine.suspendInput(0, input) == .resume(pullAgain: false))
    }
  }

  // MARK: inputFinished

  @Test func testInputFinished_whenZip_endsAndStopsTheParkedInputs() async {
    var machine = running(.zip)
    _ = machine.received(0)
    await withInput { parked in
      _ = machine.suspendInput(0, parked)
      let action = machine.inputFinished(1)
      #expect(action.stopInputs.count == 1 && same(action.stopInputs.first, parked))
    }
    #expect(machine.summary == "ended")
  }

  @Test func testInputFinished_whenCombineLatestSlotNeverProduced_ends() {
    var machine = running(.combineLatest)
    _ = machine.received(0)
    _ = machine.inputFinished(1)
    #expect(machine.summary == "ended")
  }

  @Test func testInputFinished_whenCombineLatestSlotProduced_endsOnlyWithTheLast() {
    var machine = running(.combineLatest)
    _ = machine.received(0)
    _ = machine.received(1)
    _ = machine.next()
    #expect(machine.inputFinished(0).isEmpty)
    #expect(machine.summary == "running(finished,pulling)")
    _ = machine.received(1)
    guard case .deliver(.one(1), _, _) = machine.next() else {
      Issue.record("expected delivery")
      return
    }
    _ = machine.inputFinished(1)
    #expect(machine.summary == "ended")
  }

  @Test func testInputFinished_whenWithLatestFrom_onlyTheBaseEnds() {
    var machine = running(.withLatestFrom)
    _ = machine.received(1)
    #expect(machine.inputFinished(1).isEmpty)
    #expect(machine.summary == "running(pulling,finished)")
    _ = machine.inputFinished(0)
    #expect(machine.summary == "ended")
  }

  @Test func testInputFinished_whenCancelled_doesNothing() {
    var machine = running(.zip)
    _ = machine.consumerCancelled()
    #expect(machine.inputFinished(0).isEmpty)
    #expect(machine.summary == "cancelled")
  }

  // MARK: inputFailed

  @Test(arguments: [CombiningMode.zip, .combineLatest, .withLatestFrom])
  func testInputFailed_whenRunning_endsWithItAndCancelsEveryTask(_ mode: CombiningMode) async {
    var machine = Machine(mode: mode, count: 2)
    _ = machine.next()
    let tasks = [Task<Void, Never> {}, Task<Void, Never> {}]
    _ = machine.inputsStarted(tasks)
    await withConsumer { consumer in
      #expect(machine.suspendConsumer(consumer) == nil)
      let action = machine.inputFailed(1, TestError(id: 9))
      #expect(action.cancelTasks.count == 2)
      #expect(same(action.resumeConsumer, consumer))
    }
    #expect(machine.summary == "failed")
  }

  @Test func testInputFailed_whenAlreadyEnded_keepsTheFirstFailure() {
    var machine = running(.zip)
    _ = machine.inputFailed(0, TestError(id: 1))
    #expect(machine.inputFailed(1, TestError(id: 2)).isEmpty)
    guard case .end(TestError(id: 1)?, _) = machine.next() else {
      Issue.record("expected the first")
      return
    }
  }

  // MARK: consumerCancelled

  @Test func testConsumerCancelled_whenInitial_finishes() {
    var machine = Machine(mode: .zip, count: 2)
    #expect(machine.consumerCancelled().isEmpty)
    #expect(machine.summary == "finished")
  }

  @Test func testConsumerCancelled_whenRunning_cancelsTasksAndStopsParkedInputs() async {
    var machine = Machine(mode: .combineLatest, count: 2, readAhead: 1)
    _ = machine.next()
    _ = machine.inputsStarted([Task<Void, Never> {}])
    _ = machine.received(1)
    await withInput { parked in
      _ = machine.suspendInput(1, parked)
      let action = machine.consumerCancelled()
      #expect(action.cancelTasks.count == 1)
      #expect(action.stopInputs.count == 1 && same(action.stopInputs.first, parked))
    }
    #expect(machine.summary == "cancelled")
  }

  @Test func testConsumerCancelled_whenEnded_dropsTheFailure() {
    var machine = running(.zip)
    _ = machine.inputFailed(0, TestError())
    _ = machine.consumerCancelled()
    guard case .end(nil, _) = machine.next() else {
      Issue.record("a cancelled consumer does not throw")
      return
    }
  }

  // MARK: inputsStarted

  @Test func testInputsStarted_whenEndedBeforeTheTasksWereKnown_cancelsThemAndAwaitsThem() {
    var machine = Machine(mode: .zip, count: 2)
    _ = machine.next()
    _ = machine.inputFinished(0)  // an input task may end before `inputsStarted` runs
    let tasks = [Task<Void, Never> {}, Task<Void, Never> {}]
    #expect(machine.inputsStarted(tasks).count == 2)
    guard case .end(nil, let awaiting) = machine.next(), awaiting.count == 2 else {
      Issue.record("expected end")
      return
    }
  }

  // MARK: Impossible transitions

  @Test func testReceived_whenInitial_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = CombiningStateMachine<Never>(mode: .zip, count: 2)
      _ = machine.received(0)
    }
  }

  @Test func testReceived_whenTheSlotAlreadyHolds_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = CombiningStateMachine<Never>(mode: .zip, count: 2, readAhead: 1)
      _ = machine.next()
      _ = machine.received(0)
      _ = machine.received(0)
    }
  }

  // MARK: Reading ahead

  private func isStore(_ action: Machine.ReceiveAction) -> Bool {
    if case .store = action { return true }
    return false
  }

  @Test(arguments: [CombiningMode.zip, .combineLatest])
  func testReceived_whenItsElementWaitsForAnother_readsAheadUpToTheLimit(_ mode: CombiningMode) {
    var machine = running(mode, readAhead: 3)
    #expect(isStore(machine.received(0)))
    #expect(isStore(machine.received(0)))
    #expect(isHold(machine.received(0)))  // the third: at the limit, it parks
    #expect(machine.summary == "running(holding,pulling)")
  }

  @Test func testReceived_whenZipsOutputIsComplete_parks() {
    var machine = running(.zip, readAhead: 3)
    #expect(isStore(machine.received(0)))
    #expect(isHold(machine.received(1)))  // its element makes the first pair: it waits for the consumer
    #expect(isStore(machine.received(0)))  // slot 0's second waits for slot 1's second
    guard case .deliver(.all, _, _) = machine.next() else {
      Issue.record("expected the first pair")
      return
    }
    #expect(isHold(machine.received(1)))  // (a2, b2) is complete: slot 1 waits for the consumer
  }

  @Test func testReceived_whenCombineLatestMadeItsFirstOutput_parksOnEachElement() {
    var machine = running(.combineLatest, readAhead: 3)
    _ = machine.received(0)
    _ = machine.received(1)
    _ = machine.next()
    #expect(isHold(machine.received(0)))
  }

  @Test func testNext_whenASlotReadAhead_takesItsElementsInArrivalOrderAndWakesItOnceEmpty() async {
    var machine = running(.combineLatest, readAhead: 2)
    _ = machine.received(0)
    #expect(isHold(machine.received(0)))  // a1, a2: at the limit
    await withInput { parked in
      #expect(machine.suspendInput(0, parked) == .park)
      #expect(isHold(machine.received(1)))  // b1 completes the first output
      guard case .deliver(.all, let resume, _) = machine.next(), resume.isEmpty else {
        Issue.record("expected (a1, b1), slot 0 still holding a2")
        return
      }
      guard case .deliver(.one(0), let resume, _) = machine.next() else {
        Issue.record("expected (a2, b1)")
        return
      }
      #expect(resume.count == 1 && same(resume.first, parked))
    }
    #expect(machine.summary == "running(pulling,pulling)")
  }

  @Test func testInputFinished_whenZipsFinishedSlotStillHolds_endsOnceItsElementsAreTaken() {
    var machine = running(.zip, readAhead: 3)
    _ = machine.received(0)
    _ = machine.received(0)
    #expect(machine.inputFinished(0).isEmpty)  // two elements left to pair
    _ = machine.received(1)
    guard case .deliver(.all, _, let end) = machine.next(), end.isEmpty else {
      Issue.record("expected the first pair, the result going on")
      return
    }
    _ = machine.received(1)
    guard case .deliver(.all, _, _) = machine.next() else {
      Issue.record("expected the second pair")
      return
    }
    #expect(machine.summary == "ended")  // slot 0 finished and holds nothing: no pair can be made
  }

  @Test func testInputFinished_whenCombineLatestSlotsFinishedHolding_endsOnceEveryElementIsTaken() {
    var machine = running(.combineLatest, readAhead: 3)
    _ = machine.received(0)
    _ = machine.received(0)
    _ = machine.inputFinished(0)
    _ = machine.received(1)
    guard case .deliver(.all, _, _) = machine.next() else {
      Issue.record("expected (a1, b1)")
      return
    }
    _ = machine.inputFinished(1)
    #expect(machine.summary == "running(finished,finished)")  // a2 is left to take
    guard case .deliver(.one(0), _, _) = machine.next() else {
      Issue.record("expected (a2, b1)")
      return
    }
    #expect(machine.summary == "ended")
  }

}

@Suite("MergeStateMachine", .timeLimit(.minutes(1)))
struct MergeStateMachineTests {
  typealias Merge = MergeStateMachine<Int, TestError>

  private func running(count: Int = 2, limit: Int = 2) -> Merge {
    var machine = Merge(count: count, bufferLimit: limit)
    var batch: [Int] = []
    guard case .startInputs = machine.next(swapping: &batch) else { preconditionFailure("expected startInputs") }
    _ = machine.inputsStarted([])
    return machine
  }

  @Test func testNext_whenInitialWithoutInputs_ends() {
    var machine = Merge(count: 0, bufferLimit: 1)
    var batch: [Int] = []
    guard case .end(nil, _) = machine.next(swapping: &batch) else {
      Issue.record("expected end")
      return
    }
  }

  @Test func testOffer_whenBelowTheLimit_proceedsAndAtTheLimitWaits() {
    var machine = running(limit: 2)
    guard case .proceed(nil) = machine.offer(1) else {
      Issue.record("expected proceed")
      return
    }
    guard case .wait(nil) = machine.offer(2) else {
      Issue.record("expected wait at the limit")
      return
    }
  }

  @Test func testNext_whenBuffered_takesEverythingInArrivalOrderAndResumesParkedInputs() async {
    var machine = running(limit: 2)
    _ = machine.offer(1)
    _ = machine.offer(2)
    await withInput { parked in
      #expect(machine.suspendProducer(parked) == nil)
      var batch: [Int] = []
      guard case .deliver(let resume) = machine.next(swapping: &batch) else {
        Issue.record("expected deliver")
        return
      }
      #expect(batch == [1, 2])
      #expect(resume.count == 1 && same(resume.first, parked))
    }
  }

  @Test func testSuspendProducer_whenTakenMeanwhile_goesOn() async {
    var machine = running(limit: 1)
    _ = machine.offer(1)
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)
    await withInput { input in #expect(machine.suspendProducer(input) == true) }
  }

  @Test func testSuspendConsumer_whenEmpty_parksAndTheNextOfferResumesIt() async {
    var machine = running()
    await withConsumer { consumer in
      var batch: [Int] = []
      guard case .suspend = machine.next(swapping: &batch) else {
        Issue.record("expected suspend")
        return
      }
      #expect(machine.suspendConsumer(consumer) == nil)
      guard case .proceed(let resumed) = machine.offer(5) else {
        Issue.record("expected proceed")
        return
      }
      #expect(same(resumed, consumer))
    }
  }

  @Test func testInputFinished_whenTheLastFinishes_drainsThenEnds() {
    var machine = running(limit: 4)
    _ = machine.offer(1)
    _ = machine.inputFinished()
    var batch: [Int] = []
    _ = machine.inputFinished()
    guard case .deliver = machine.next(swapping: &batch), batch == [1] else {
      Issue.record("expected drain")
      return
    }
    guard case .end(nil, _) = machine.next(swapping: &batch) else {
      Issue.record("expected end")
      return
    }
    guard case .end(nil, _) = machine.next(swapping: &batch) else {
      Issue.record("nil forever")
      return
    }
  }

  @Test func testInputFailed_whenRunning_cancelsTheOthersDrainsThenThrows() async {
    var machine = Merge(count: 2, bufferLimit: 1)
    var batch: [Int] = []
    _ = machine.next(swapping: &batch)
    _ = machine.inputsStarted([Task<Void, Never> {}, Task<Void, Never> {}])
    _ = machine.offer(1)
    await withInput { parked in
      _ = machine.suspendProducer(parked)
      let action = machine.inputFailed(TestError(id: 3))
      #expect(action.cancelTasks.count == 2)
      #expect(action.stopInputs.count == 1 && same(action.stopInputs.first, parked))
    }
    guard case .stop = machine.offer(2) else {
      Issue.record("nothing is buffered after the end")
      return
    }
    guard case .deliver = machine.next(swapping: &batch), batch == [1] else {
      Issue.record("expected drain")
      return
    }
    guard case .end(TestError(id: 3)?, _) = machine.next(swapping: &batch) else {
      Issue.record("expected it")
      return
    }
  }

  @Test func testConsumerCancelled_whenDraining_endsWithoutFailure() {
    var machine = running()
    _ = machine.offer(1)
    _ = machine.inputFailed(TestError())
    _ = machine.consumerCancelled()
    var batch: [Int] = []
    guard case .end(nil, _) = machine.next(swapping: &batch), batch.isEmpty else {
      Issue.record("expected end")
      return
    }
  }

  @Test func testOffer_whenInitial_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = MergeStateMachine<Int, Never>(count: 1, bufferLimit: 1)
      _ = machine.offer(1)
    }
  }
}
