import Testing

@testable import AsyncFlow

/// The flattening machines tested directly as a grid of state × event, with plain tokens for
/// channels (the inner's id), continuations (`Int`) and tasks (`String`): no task, no continuation.
///
/// Shared machine: 4 states (idle, running, ending, finished) × 14 events = 56 cells, 15 of them
/// impossible (checked with exit tests in `impossibleTransitionsStop`, with 3 more impossible
/// events within the running state); the 41 possible ones have direct tests below. Each policy's
/// own decisions are tables of its logic (`FlattenLogicTests`).
/// Inner machine: 3 states (open, closed, dropped) × 5 events = 15 cells, 3 impossible.
typealias GridMachine<Logic: FlattenLogic> = FlattenStateMachine<Logic, String, Int, Int, String, TestError>
typealias GridMerge = GridMachine<FlattenMergeLogic<Int>>
typealias GridInner = FlattenInnerStateMachine<String, Int>

extension FlattenLogic where Self == FlattenSwitchLogic<Int> {
  static var latest: Self { Self() }
}

extension FlattenLogic where Self == FlattenMergeLogic<Int> {
  static func merge(maxConcurrent: Int) -> Self { Self(maxConcurrent: maxConcurrent) }
}

extension FlattenLogic where Self == FlattenExhaustLogic<Int> {
  static var exhaust: Self { Self() }
}

extension FlattenStateMachine
where OuterElement == String, Channel == Int, Waiter == Int, Handle == String, Failure == TestError, Key == Int {
  static func running(_ logic: Logic) -> Self {
    var machine = Self(logic: logic)
    guard case .start = machine.next() else { preconditionFailure("a new machine starts") }
    #expect(machine.outerStarted("outer") == nil)
    return machine
  }

  /// An outer element arrives, its task starts (registered as `"task<id>"`) and claims it.
  @discardableResult
  mutating func startInner(_ element: String, key: Int = 0) -> Int? {
    guard let id = outerElement(element, key: key, channel: { $0 }).startedInner else { return nil }
    #expect(innerStarted(id, task: "task\(id)") == nil)
    #expect(claim(id)?.element == element)
    return id
  }

  static func ending() -> GridMerge {
    var machine = GridMerge.running(.merge(maxConcurrent: 2))
    machine.startInner("a")
    _ = machine.cancel()
    return machine
  }

  static func finished() -> GridMerge {
    var machine = GridMerge.ending()
    _ = machine.next()
    return machine
  }

  var stateName: String {
    switch state {
    case .idle: "idle"
    case .running: "running"
    case .ending: "ending"
    case .finished: "finished"
    case .modifying: "modifying"
    }
  }
}

extension FlattenStateMachine.OuterElementAction {
  /// The inner it starts, if any.
  var startedInner: Int? {
    guard case .startInner(let id, _, _) = self else { return nil }
    return id
  }
}

extension FlattenStateMachine.InnerAction {
  var ending: FlattenStateMachine.Ending? {
    guard case .end(let ending) = self else { return nil }
    return ending
  }
}

@Suite("FlattenStateMachine", .hangGuard)
struct FlattenStateMachineTests {
  // MARK: next

  /// The running data cannot be read in another state: it is not there.
  @Test func theRunningDataIsThereOnlyWhileRunning() {
    var machine = GridMachine(logic: .latest)
    #expect(machine.running == nil)
    _ = machine.next()
    #expect(machine.running != nil)
    machine.startInner("a")
    _ = machine.cancel()
    #expect(machine.stateName == "ending" && machine.running == nil)
    _ = machine.next()
    #expect(machine.stateName == "finished" && machine.running == nil)
  }

  @Test func testNext_whenIdle_starts() {
    var machine = GridMachine(logic: .latest)
    guard case .start = machine.next() else {
      Issue.record("expected start")
      return
    }
    #expect(machine.stateName == "running")
  }

  @Test func testNext_whenRunningAndNothingReady_suspends() {
    var machine = GridMachine.running(.latest)
    machine.startInner("a")
    guard case .suspend = machine.next() else {
      Issue.record("expected suspend")
      return
    }
  }

  @Test func testNext_whenRunningAndAnInnerIsReady_takesFromItsChannel() {
    func check(_ machine: inout GridMachine<some FlattenLogic<Int>>) {
      let id = machine.startInner("a")!
      #expect(machine.listReady(id, channel: id) == nil)
      guard case .take(id, id) = machine.next() else { return #expect(Bool(false)) }
    }
    var latest = GridMachine.running(.latest)
    check(&latest)
    var merge = GridMachine.running(.merge(maxConcurrent: 2))
    check(&merge)
    var exhaust = GridMachine.running(.exhaust)
    check(&exhaust)
    // A superseding policy takes one element at a time; the others take all an inner holds.
    #expect(!FlattenSwitchLogic<Int>.takesBatches && FlattenMergeLogic<Int>.takesBatches)
    #expect(FlattenExhaustLogic<Int>.takesBatches)
  }

  @Test func testNext_whenRunningAndTheReadyInnerWasSuperseded_discardsWhatWasTakenFromIt() {
    var machine = GridMachine.running(.latest)
    let first = machine.startInner("a")!
    #expect(machine.listReady(first, channel: first) == nil)
    let action = machine.outerElement("b", key: 0, channel: { $0 })
    // "a"'s element was listed before "b" arrived: its channel is dropped after the lock, so the
    // take that follows may still take from it, and what it took is stale.
    #expect(action == .startInner(1, superseding: first, cancelling: "task0"))
    guard case .take(first, first) = machine.next() else { return #expect(Bool(false)) }
    #expect(machine.taken(first, isDrained: true, retires: false) == .discard)
    guard case .suspend = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testNext_whenEnding_endsWithTheFailureAndTheOuterTask() {
    var machine = GridMachine.running(.latest)
    _ = machine.outerEnded(TestError(id: 1))
    guard case .end(let failure, let outer) = machine.next() else {
      Issue.record("expected end")
      return
    }
    #expect(failure == TestError(id: 1) && outer == "outer")
    #expect(machine.stateName == "finished")
  }

  @Test func testNext_whenFinished_endsWithNothingToAwait() {
    var machine = GridMerge.finished()
    guard case .end(nil, nil) = machine.next() else {
      Issue.record("expected a plain end")
      return
    }
  }

  // MARK: taken

  @Test func testTaken_whenRunningAndElementsRemain_requeuesBehindTheOthers() {
    var machine = GridMachine.running(.latest)
    let first = machine.startInner("a", key: 1)!
    let second = machine.startInner("b", key: 2)!
    _ = machine.listReady(first, channel: first)
    _ = machine.listReady(second, channel: second)
    guard case .take(first, _) = machine.next() else { return #expect(Bool(false)) }
    let result = machine.taken(first, isDrained: false, retires: false)
    // The channel's waiting producer is the storage's to resume: the machine goes on taking.
    #expect(result == .none)
    // One key's backlog does not hold back the other's.
    guard case .take(second, _) = machine.next() else { return #expect(Bool(false)) }
    _ = machine.taken(second, isDrained: true, retires: false)
    guard case .take(first, _) = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testTaken_whenRunningAndADrainingInnerRetires_finishesIfTheOuterEnded() {
    var machine = GridMachine.running(.merge(maxConcurrent: 1))
    let id = machine.startInner("a")!
    _ = machine.listReady(id, channel: id)
    _ = machine.outerEnded(nil)
    #expect(machine.innerEnded(id, GridInner.EndAction.retireWhenDrained(needsListing: false), failure: nil) == .none)
    guard case .take = machine.next() else { return #expect(Bool(false)) }
    let result = machine.taken(id, isDrained: true, retires: true)
    #expect(result.ending?.cancel == ["outer"])
    guard case .end(nil, "outer") = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testTaken_whenRunningAndTheBusyInnerKeepsItsPlace_keepsTheReadyQueueBounded() {
    var machine = GridMachine.running(.latest)
    let id = machine.startInner("a")!
    _ = machine.listReady(id, channel: id)
    var longest = 0
    for _ in 0..<1_000 {
      guard case .take = machine.next() else { return #expect(Bool(false)) }
      _ = machine.taken(id, isDrained: false, retires: false)
      longest = max(longest, machine.readyQueueLength)
    }
    #expect(longest <= 64)
  }

  @Test func testTaken_whenRunningAndTheLastIsTakenBeforeTheEndIsReported_retiresAtTheReport() {
    var machine = GridMachine.running(.merge(maxConcurrent: 1))
    let id = machine.startInner("a")!
    _ = machine.listReady(id, channel: id)
    _ = machine.outerEnded(nil)
    // Its channel closed (the task's last answer) and the consumer took the rest before the
    // task's report came: it keeps its slot until then.
    guard case .take = machine.next() else { return #expect(Bool(false)) }
    #expect(machine.taken(id, isDrained: true, retires: true) == .none)
    guard case .suspend = machine.next() else { return #expect(Bool(false)) }
    let action = machine.innerEnded(id, GridInner.EndAction.retireWhenDrained(needsListing: false), failure: nil)
    guard case .end(let ending) = action else { return #expect(Bool(false)) }
    #expect(ending.cancel == ["outer"])
  }

  /// A switch's consumer took an inner's last element from its open channel; the inner's task then
  /// ended and found the channel empty before the consumer's report. That element is delivered,
  /// not discarded as stale, and the inner retires at the report (before, it retired at its end,
  /// and the report found it gone: the element was lost, and a consumer waiting for it to send the
  /// next outer element hung, in 1 of 2 to 13 runs of `--scaling --quick --filter W3.innerSize`).
  /// Whether the outer ended or goes on.
  @Test(arguments: [false, true])
  func testTaken_whenRunningSwitchAndTheInnerEndedDuringTheTake_deliversItsLastElement(outerEnded: Bool) {
    var machine = GridMachine.running(.latest)
    let id = machine.startInner("a")!
    _ = machine.listReady(id, channel: id)
    if outerEnded { _ = machine.outerEnded(nil) }
    guard case .take = machine.next() else { return #expect(Bool(false)) }
    #expect(machine.innerEnded(id, GridInner.EndAction.retire, failure: nil) == .none)
    let result = machine.taken(id, isDrained: true, retires: false)
    if outerEnded {
      #expect(result.ending?.cancel == ["outer"])
    } else {
      #expect(result == .none)
      // Its turn ended: the next inner starts superseding nothing.
      guard case .startInner(_, nil, nil) = machine.outerElement("b", key: 0, channel: { $0 }) else {
        return #expect(Bool(false))
      }
    }
  }

  @Test func testTaken_whenEnding_discardsAllButTheFailingInnersElements() {
    var machine = GridMachine.running(.merge(maxConcurrent: 3))
    let failing = machine.startInner("a")!
    let other = machine.startInner("b")!
    _ = machine.listReady(other, channel: other)
    _ = machine.listReady(failing, channel: failing)
    guard case .take(other, _) = machine.next() else { return #expect(Bool(false)) }
    guard case .end = machine.innerEnded(
      failing, GridInner.EndAction.retireWhenDrained(needsListing: false), failure: TestError(id: 3))
    else { return #expect(Bool(false)) }
    // Taken from the other after the end: discarded. From the failing one: delivered, before the
    // failure, and once it is drained there is nothing left to drain.
    #expect(machine.taken(other, isDrained: true, retires: false) == .discard)
    #expect(machine.taken(failing, isDrained: true, retires: true) == .none)
    guard case .end(TestError(id: 3), _) = machine.next() else { return #expect(Bool(false)) }
    // Once finished, a take is stale too.
    #expect(machine.taken(failing, isDrained: true, retires: false) == .discard)
  }

  // MARK: suspendConsumer

  @Test func testSuspendConsumer_whenRunningAndNothingReady_registersIt() {
    var machine = GridMachine.running(.latest)
    let id = machine.startInner("a")!
    #expect(machine.suspendConsumer(5) == nil)
    // The next listing resumes it.
    #expect(machine.listReady(id, channel: id) == 5)
  }

  @Test func testSuspendConsumer_whenRunningAndSomethingWasListedMeanwhile_returnsItAtOnce() {
    var machine = GridMachine.running(.latest)
    let id = machine.startInner("a")!
    _ = machine.listReady(id, channel: id)
    #expect(machine.suspendConsumer(5) == 5)
  }

  @Test func testSuspendConsumer_whenEndingOrFinished_returnsItAtOnce() {
    var ending = GridMerge.ending()
    #expect(ending.suspendConsumer(5) == 5)
    var finished = GridMerge.finished()
    #expect(finished.suspendConsumer(6) == 6)
  }

  // MARK: cancel

  @Test func testCancel_whenIdle_finishesWithNothingToDo() {
    var machine = GridMachine(logic: .latest)
    #expect(machine.cancel() == nil)
    #expect(machine.stateName == "finished")
  }

  @Test func testCancel_whenRunning_dropsEveryInnerCancelsEveryTaskAndResumesEveryWaiter() {
    var machine = GridMachine.running(.merge(maxConcurrent: 1))
    let id = machine.startInner("a")!
    #expect(machine.outerElement("b", key: 0, channel: { $0 }) == .none)  // held: no slot
    let result1 = machine.pumpStep(channel: { $0 })
    #expect(result1 == .wait)
    let result2 = machine.pumpWait(8)
    #expect(result2)
    #expect(machine.suspendConsumer(9) == nil)
    let ending = machine.cancel()
    #expect(ending?.drop == [id])
    #expect(Set(ending?.cancel ?? []) == ["task0", "outer"])
    #expect(ending?.outer == 8)  // resumed with `false`
    #expect(ending?.consumer == 9)
    guard case .end(nil, "outer") = machine.next() else { return #expect(Bool(false)) }
    #expect(machine.remainingInnerTasks() == ["task0"])
  }

  @Test func testCancel_whenEndingOrFinished_doesNothing() {
    var ending = GridMerge.ending()
    #expect(ending.cancel() == nil)
    var finished = GridMerge.finished()
    #expect(finished.cancel() == nil)
  }

  @Test func testCancel_whenEndingWithAFailureAndElementsToDrain_finishesWithoutEither() {
    var machine = GridMachine.running(.merge(maxConcurrent: 2))
    let id = machine.startInner("a")!
    _ = machine.innerEnded(id, GridInner.EndAction.retireWhenDrained(needsListing: false), failure: TestError(id: 1))
    // A cancelled consumer finishes (it does not throw) and takes no element afterwards.
    #expect(machine.cancel()?.drop == [id])
    guard case .end(nil, _) = machine.next() else { return #expect(Bool(false)) }
  }

  // MARK: outerStarted

  @Test func testOuterStarted_whenRunning_keepsIt() {
    var machine = GridMachine(logic: .latest)
    _ = machine.next()
    #expect(machine.outerStarted("outer") == nil)
    #expect(machine.cancel()?.cancel == ["outer"])
  }

  @Test func testOuterStarted_whenEnding_returnsItToCancelAndAwaitsIt() {
    var machine = GridMachine(logic: .latest)
    _ = machine.next()
    _ = machine.cancel()
    #expect(machine.outerStarted("outer") == "outer")
    guard case .end(nil, "outer") = machine.next() else { return #expect(Bool(false)) }
  }

  // MARK: pumpStep and pumpWait

  @Test func testPumpStep_whenRunningWithNothingHeld_pulls() {
    var machine = GridMachine.running(.merge(maxConcurrent: 1))
    machine.startInner("a")
    // Every slot is busy, yet the outer is pulled once more: its failure or end is seen at once.
    let step = machine.pumpStep(channel: { $0 })
    #expect(step == .pull)
  }

  @Test func testPumpStep_whenRunningWithAnElementHeldAndEverySlotBusy_waitsForARetiringInner() {
    var machine = GridMachine.running(.merge(maxConcurrent: 1))
    let id = machine.startInner("a")!
    #expect(machine.outerElement("b", key: 0, channel: { $0 }) == .none)
    let result3 = machine.pumpStep(channel: { $0 })
    #expect(result3 == .wait)
    let result4 = machine.pumpWait(4)
    #expect(result4)
    let action = machine.innerEnded(id, GridInner.EndAction.retire, failure: nil)
    #expect(action == .resume(4))
    let result5 = machine.pumpStep(channel: { $0 })
    #expect(result5 == .startInner(1))
    #expect(machine.claim(1)?.element == "b")
  }

  @Test func testPumpWait_whenRunningAndASlotFreedMeanwhile_asksAgainAtOnce() {
    var machine = GridMachine.running(.merge(maxConcurrent: 1))
    let id = machine.startInner("a")!
    _ = machine.outerElement("b", key: 0, channel: { $0 })
    _ = machine.innerEnded(id, GridInner.EndAction.retire, failure: nil)
    let result6 = machine.pumpWait(4)
    #expect(!result6)
  }

  @Test func testPumpStep_whenRunningAndTheOuterEnded_stopsOnceNothingIsHeld() {
    var machine = GridMachine.running(.merge(maxConcurrent: 1))
    let id = machine.startInner("a")!
    _ = machine.outerElement("b", key: 0, channel: { $0 })
    #expect(machine.outerEnded(nil) == nil)  // "b" is still to run
    _ = machine.innerEnded(id, GridInner.EndAction.retire, failure: nil)
    let result7 = machine.pumpStep(channel: { $0 })
    #expect(result7 == .startInner(1))
    let result8 = machine.pumpStep(channel: { $0 })
    #expect(result8 == .stop)
  }

  @Test func testPumpStepAndPumpWait_whenEndingOrFinished_stop() {
    var ending = GridMerge.ending()
    let endingStep = ending.pumpStep(channel: { $0 })
    let endingWaits = ending.pumpWait(1)
    #expect(endingStep == .stop && !endingWaits)
    var finished = GridMerge.finished()
    let finishedStep = finished.pumpStep(channel: { $0 })
    let finishedWaits = finished.pumpWait(1)
    #expect(finishedStep == .stop && !finishedWaits)
  }

  // MARK: outerElement

  @Test func testOuterElement_whenRunningMerge_startsAnInnerPerElement() {
    var machine = GridMachine.running(.merge(maxConcurrent: 2))
    #expect(machine.outerElement("a", key: 0, channel: { $0 }).startedInner == 0)
    #expect(machine.outerElement("b", key: 0, channel: { $0 }).startedInner == 1)
  }

  @Test func testOuterElement_whenRunningMergeAndTheLimitOfInnersHoldElements_holdsIt() {
    var machine = GridMachine.running(.merge(maxConcurrent: .max))
    for index in 0..<FlattenBacklog.defaultLimit {
      let id = machine.startInner("e\(index)")!
      _ = machine.listReady(id, channel: id)
    }
    // A stalled consumer stops the outer: the element waits, and so does the pump.
    #expect(machine.outerElement("late", key: 0, channel: { $0 }) == .none)
    let step = machine.pumpStep(channel: { $0 })
    #expect(step == .wait)
    let waits = machine.pumpWait(7)
    #expect(waits)
    // The consumer takes from one inner: what it took is in its batch, which still counts.
    guard case .take(let id, _) = machine.next() else { return #expect(Bool(false)) }
    #expect(machine.taken(id, isDrained: true, retires: false) == .none)
    // It asks again, so the batch was delivered: the pump may go on.
    #expect(machine.batchDelivered() == 7)
    let next = machine.pumpStep(channel: { $0 })
    #expect(next == .startInner(FlattenBacklog.defaultLimit))
  }

  @Test func testOuterElement_whenRunningMergeAndTheLimitOfInnersHaveNotDelivered_holdsIt() {
    var machine = GridMachine.running(.merge(maxConcurrent: .max))
    // Started, nothing offered yet: each may be about to (a short inner offers and ends at once).
    for index in 0..<FlattenBacklog.defaultLimit { _ = machine.startInner("e\(index)")! }
    #expect(machine.outerElement("late", key: 0, channel: { $0 }) == .none)
    #expect(machine.pumpStep(channel: { $0 }) == .wait)
    // One ends without an element: the consumer is no longer behind it.
    let action = machine.innerEnded(0, GridInner.EndAction.retire, failure: nil)
    #expect(action == .none)  // the pump has not registered its wait
    #expect(machine.pumpStep(channel: { $0 }) == .startInner(FlattenBacklog.defaultLimit))
  }

  @Test func testOuterElement_whenRunningMergeWithAnExplicitLimitAboveTheDefault_startsThatMany() {
    var machine = GridMachine.running(.merge(maxConcurrent: 20))
    for index in 0..<20 { #expect(machine.outerElement("e\(index)", key: 0, channel: { $0 }).startedInner == index) }
    #expect(machine.outerElement("late", key: 0, channel: { $0 }) == .none)
  }

  @Test func testOuterElement_whenRunningKeyedLatestWithManyKeys_startsAnInnerForEach() {
    var machine = GridMachine.running(.latest)
    // One inner per key, however many keys: a list loads every row it shows at once.
    for key in 0..<(FlattenBacklog.defaultLimit * 2) {
      #expect(machine.outerElement("e\(key)", key: key, channel: { $0 }).startedInner == key)
    }
  }

  @Test func testOuterElement_whenRunningLatestAndTheInnersTaskHasNotBegun_handsThatTaskTheNewElement() {
    var machine = GridMachine.running(.latest)
    let id = machine.outerElement("a", key: 0, channel: { $0 }).startedInner!
    // Nothing to cancel and nothing new to start: the waiting task begins with "b", and "a" is
    // never transformed; it leaves with the action, to be released after the lock.
    #expect(machine.outerElement("b", key: 0, channel: { $0 }) == .release("a"))
    #expect(machine.claim(id)?.element == "b")
  }

  @Test func testCancel_whenRunningWithAnElementHeldAndAnInnerNotBegun_releasesBothWithTheEffects() {
    var machine = GridMachine.running(.merge(maxConcurrent: 1))
    #expect(machine.outerElement("a", key: 0, channel: { $0 }).startedInner == 0)  // its task has not begun
    #expect(machine.outerElement("b", key: 0, channel: { $0 }) == .none)  // held: no slot
    // Neither is released with the machine's state, under the lock: both leave with the action.
    #expect(machine.cancel()?.release.sorted() == ["a", "b"])
  }

  @Test func testOuterElement_whenRunningLatestAndTheCurrentInnerIsDraining_dropsItsElements() {
    var machine = GridMachine.running(.latest)
    let id = machine.startInner("a")!
    _ = machine.listReady(id, channel: id)
    _ = machine.innerEnded(id, GridInner.EndAction.retireWhenDrained(needsListing: false), failure: nil)
    #expect(machine.outerElement("b", key: 0, channel: { $0 }) == .startInner(1, superseding: id, cancelling: nil))
  }

  @Test func testOuterElement_whenRunningKeyedLatest_supersedesOnlyItsKey() {
    var machine = GridMachine.running(.latest)
    let first = machine.startInner("a", key: 1)!
    machine.startInner("b", key: 2)
    let action = machine.outerElement("c", key: 1, channel: { $0 })
    #expect(action == .startInner(2, superseding: first, cancelling: "task\(first)"))
  }

  @Test func testOuterElement_whenRunningExhaustAndAnInnerRuns_dropsTheElement() {
    var machine = GridMachine.running(.exhaust)
    let id = machine.startInner("a")!
    #expect(machine.outerElement("b", key: 0, channel: { $0 }) == .none)
    _ = machine.innerEnded(id, GridInner.EndAction.retire, failure: nil)
    #expect(machine.startInner("c") == 1)
  }

  @Test func testOuterElement_whenEndingOrFinished_isDiscarded() {
    var ending = GridMerge.ending()
    #expect(ending.outerElement("x", key: 0, channel: { $0 }) == .none)
    var finished = GridMerge.finished()
    #expect(finished.outerElement("x", key: 0, channel: { $0 }) == .none)
  }

  // MARK: outerEnded

  @Test func testOuterEnded_whenRunningWithoutInners_finishes() {
    var machine = GridMachine.running(.latest)
    #expect(machine.outerEnded(nil)?.cancel == ["outer"])
    guard case .end(nil, "outer") = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testOuterEnded_whenRunningWithInners_finishesOnlyAfterTheLastEnds() {
    var machine = GridMachine.running(.merge(maxConcurrent: 2))
    let first = machine.startInner("a")!
    let second = machine.startInner("b")!
    #expect(machine.outerEnded(nil) == nil)
    _ = machine.innerEnded(first, GridInner.EndAction.retire, failure: nil)
    guard case .suspend = machine.next() else { return #expect(Bool(false)) }
    _ = machine.innerEnded(second, GridInner.EndAction.retire, failure: nil)
    guard case .end(nil, _) = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testOuterEnded_whenRunningWithAFailure_endsWithIt() {
    var machine = GridMachine.running(.merge(maxConcurrent: 2))
    let id = machine.startInner("a")!
    let ending = machine.outerEnded(TestError(id: 4))
    #expect(ending?.drop == [id] && Set(ending?.cancel ?? []) == ["task0", "outer"])
    guard case .end(TestError(id: 4), _) = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testOuterEnded_whenEndingOrFinished_isIgnored() {
    var ending = GridMerge.ending()
    #expect(ending.outerEnded(TestError(id: 1)) == nil)
    guard case .end(nil, _) = ending.next() else { return #expect(Bool(false)) }
    var finished = GridMerge.finished()
    #expect(finished.outerEnded(nil) == nil)
  }

  // MARK: innerStarted

  @Test func testInnerStarted_whenRunning_keepsTheTask() {
    var machine = GridMachine.running(.merge(maxConcurrent: 2))
    let id = machine.outerElement("a", key: 0, channel: { $0 }).startedInner!
    #expect(machine.innerStarted(id, task: "t") == nil)
    #expect(machine.cancel()?.cancel.contains("t") == true)
  }

  @Test func testInnerStarted_whenRunningAndSupersededMeanwhile_returnsItToCancel() {
    var machine = GridMachine.running(.latest)
    let id = machine.outerElement("a", key: 0, channel: { $0 }).startedInner!
    _ = machine.claim(id)
    _ = machine.outerElement("b", key: 0, channel: { $0 })
    #expect(machine.innerStarted(id, task: "t") == "t")
  }

  @Test func testInnerStarted_whenRunningAndTheTaskEndedAlready_isIgnored() {
    var machine = GridMachine.running(.merge(maxConcurrent: 2))
    let id = machine.outerElement("a", key: 0, channel: { $0 }).startedInner!
    _ = machine.claim(id)
    _ = machine.innerEnded(id, GridInner.EndAction.retire, failure: nil)
    #expect(machine.innerStarted(id, task: "t") == nil)
  }

  @Test func testInnerStarted_whenEndingOrFinished_returnsItToCancelAndAwaitsIt() {
    var machine = GridMachine.running(.merge(maxConcurrent: 2))
    let id = machine.outerElement("a", key: 0, channel: { $0 }).startedInner!
    _ = machine.cancel()
    #expect(machine.innerStarted(id, task: "t") == "t")
    _ = machine.next()
    #expect(machine.remainingInnerTasks() == ["t"])
    var finished = GridMerge.finished()
    #expect(finished.innerStarted(99, task: "x") == nil)
  }

  // MARK: claim

  @Test func testClaim_whenRunning_handsOverTheChannelAndTheElement() {
    var machine = GridMachine.running(.merge(maxConcurrent: 2))
    let id = machine.outerElement("a", key: 0, channel: { $0 }).startedInner!
    guard let claimed = machine.claim(id) else { return #expect(Bool(false)) }
    #expect(claimed.channel == id && claimed.element == "a")
  }

  @Test func testClaim_whenEndingOrFinished_isNilAndTheTaskIsNotAwaited() {
    var machine = GridMachine.running(.merge(maxConcurrent: 2))
    let id = machine.outerElement("a", key: 0, channel: { $0 }).startedInner!
    _ = machine.cancel()
    #expect(machine.claim(id) == nil)
    _ = machine.next()
    #expect(machine.remainingInnerTasks().isEmpty)
    var finished = GridMerge.finished()
    #expect(finished.claim(0) == nil)
  }

  // MARK: listReady

  @Test func testListReady_whenRunning_listsItAndWakesTheConsumer() {
    var machine = GridMachine.running(.merge(maxConcurrent: 2))
    let first = machine.startInner("a")!
    let second = machine.startInner("b")!
    #expect(machine.suspendConsumer(3) == nil)
    #expect(machine.listReady(second, channel: second) == 3)
    #expect(machine.listReady(first, channel: first) == nil)
    guard case .take(second, _) = machine.next() else { return #expect(Bool(false)) }
    _ = machine.taken(second, isDrained: true, retires: false)
    guard case .take(first, _) = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testListReady_whenEndingOrFinished_isIgnored() {
    var ending = GridMerge.ending()
    #expect(ending.listReady(0, channel: 0) == nil)
    var finished = GridMerge.finished()
    #expect(finished.listReady(0, channel: 0) == nil)
  }

  // MARK: innerEnded

  @Test func testInnerEnded_whenRunningAndSuperseded_discardsItsFailure() {
    var machine = GridMachine.running(.latest)
    let id = machine.startInner("a")!
    machine.startInner("b")
    #expect(machine.innerEnded(id, GridInner.EndAction.retire, failure: TestError(id: 1)) == .none)
    guard case .suspend = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testInnerEnded_whenRunningWithNothingLeft_retiresAtOnceAndItsFailureEnds() {
    var machine = GridMachine.running(.latest)
    let id = machine.startInner("a")!
    _ = machine.innerEnded(id, GridInner.EndAction.retire, failure: TestError(id: 2))
    // It retired at once, so a newer outer element cannot swallow its failure.
    #expect(machine.outerElement("b", key: 0, channel: { $0 }).startedInner == nil)
    guard case .end(TestError(id: 2), _) = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testInnerEnded_whenRunningWithElementsLeft_drainsFirstAndListsItIfNeeded() {
    var machine = GridMachine.running(.merge(maxConcurrent: 1))
    let id = machine.startInner("a")!
    #expect(machine.suspendConsumer(3) == nil)
    let action = machine.innerEnded(id, GridInner.EndAction.retireWhenDrained(needsListing: true), failure: nil)
    #expect(action == .resume(3))
    guard case .take(id, _) = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testInnerEnded_whenRunningFailsWithElementsLeft_endsAtOnceDeliveringThoseFirst() {
    var machine = GridMachine.running(.merge(maxConcurrent: 3))
    let failing = machine.startInner("a")!
    let other = machine.startInner("b")!
    _ = machine.listReady(other, channel: other)
    _ = machine.listReady(failing, channel: failing)
    let action = machine.innerEnded(
      failing, GridInner.EndAction.retireWhenDrained(needsListing: false), failure: TestError(id: 3))
    // The other inner stops and its waiting elements are discarded; the failing one's come first.
    guard case .end(let ending) = action else { return #expect(Bool(false)) }
    #expect(ending.drop == [other] && Set(ending.cancel) == ["task\(other)", "outer"])
    guard case .drain(failing) = machine.next() else { return #expect(Bool(false)) }
    guard case .end(TestError(id: 3), _) = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testInnerEnded_whenRunningExhaustWithElementsLeft_endsItsTurnButNotTheOperator() {
    var machine = GridMachine.running(.exhaust)
    let first = machine.startInner("a")!
    _ = machine.listReady(first, channel: first)
    _ = machine.innerEnded(first, GridInner.EndAction.retireWhenDrained(needsListing: false), failure: nil)
    // Its turn ended with its work: the next outer element starts an inner at once.
    let second = machine.startInner("b")
    #expect(second == 1)
    _ = machine.innerEnded(1, GridInner.EndAction.retire, failure: nil)
    _ = machine.outerEnded(nil)
    // The first inner's elements are still to be taken: the operator has not finished.
    guard case .take(first, _) = machine.next() else { return #expect(Bool(false)) }
    let result = machine.taken(first, isDrained: true, retires: true)
    #expect(result.ending != nil)  // what was taken is delivered before the end
    guard case .end(nil, _) = machine.next() else { return #expect(Bool(false)) }
  }

  @Test func testOuterElement_whenRunningExhaustAndTheLimitOfEndedInnersWait_dropsIt() {
    var machine = GridMachine.running(.exhaust)
    for index in 0..<FlattenBacklog.defaultLimit {
      let id = machine.startInner("e\(index)")!
      _ = machine.listReady(id, channel: id)
      _ = machine.innerEnded(id, GridInner.EndAction.retireWhenDrained(needsListing: false), failure: nil)
    }
    // The consumer is that many ended inners behind: a new element is dropped, as while one runs.
    #expect(machine.outerElement("late", key: 0, channel: { $0 }) == .none)
    guard case .take(let id, _) = machine.next() else { return #expect(Bool(false)) }
    _ = machine.taken(id, isDrained: true, retires: true)
    // Its elements are in the consumer's batch: they count until it asks again.
    #expect(machine.outerElement("later", key: 0, channel: { $0 }) == .none)
    _ = machine.batchDelivered()
    #expect(machine.outerElement("latest", key: 0, channel: { $0 }).startedInner != nil)
  }

  @Test func testInnerEnded_whenEndingOrFinished_forgetsTheTask() {
    var machine = GridMerge.ending()
    #expect(machine.innerEnded(0, GridInner.EndAction.stale, failure: TestError()) == .none)
    _ = machine.next()
    #expect(machine.remainingInnerTasks().isEmpty)
    var finished = GridMerge.finished()
    #expect(finished.innerEnded(0, GridInner.EndAction.stale, failure: nil) == .none)
    #expect(finished.remainingInnerTasks().isEmpty)
  }

  // MARK: remainingInnerTasks

  @Test func testRemainingInnerTasks_whenFinished_areTheTasksThatHaveNotReportedTheirEnd() {
    var machine = GridMachine.running(.merge(maxConcurrent: 3))
    machine.startInner("a")
    let second = machine.startInner("b")!
    _ = machine.cancel()
    _ = machine.innerEnded(second, GridInner.EndAction.stale, failure: nil)
    _ = machine.next()
    #expect(machine.remainingInnerTasks() == ["task0"])
  }

  // MARK: Impossible transitions

  static let impossibleCells: [String] = {
    let events = [
      "next", "taken", "suspendConsumer", "cancel", "outerStarted", "pumpStep", "pumpWait", "outerElement",
      "outerEnded",
      "innerStarted", "claim", "listReady", "innerEnded", "remainingInnerTasks",
    ]
    var cells = events.filter { !["next", "cancel"].contains($0) }.map { "idle.\($0)" }
    cells += ["running.remainingInnerTasks", "ending.remainingInnerTasks", "finished.outerStarted"]
    // Within running: events that contradict what the machine knows of an inner.
    cells += ["running.claimTwice", "running.innerEndedStaleWhileCurrent", "running.innerEndedEmptyOnceDrained"]
    return cells
  }()

  @Test func theGridCountsEveryImpossibleCell() {
    #expect(Self.impossibleCells.count == 15 + 3)
  }

  @Test(arguments: impossibleCells)
  func impossibleTransitionsStop(cell: String) async {
    await #expect(processExitsWith: .failure) { [cell] in
      let parts = cell.split(separator: ".").map(String.init)
      var machine: GridMerge
      switch parts[0] {
      case "idle": machine = GridMerge(logic: .merge(maxConcurrent: 2))
      case "running": machine = .running(.merge(maxConcurrent: 2))
      case "ending": machine = .ending()
      case "finished": machine = .finished()
      default: return  // exits with success: the expectation fails on a misspelt cell
      }
      switch parts[1] {
      case "next": _ = machine.next()
      case "taken": _ = machine.taken(0, isDrained: true, retires: false)
      case "suspendConsumer": _ = machine.suspendConsumer(1)
      case "cancel": _ = machine.cancel()
      case "outerStarted": _ = machine.outerStarted("o")
      case "pumpStep": _ = machine.pumpStep(channel: { $0 })
      case "pumpWait": _ = machine.pumpWait(1)
      case "outerElement": _ = machine.outerElement("x", key: 0, channel: { $0 })
      case "outerEnded": _ = machine.outerEnded(nil)
      case "innerStarted": _ = machine.innerStarted(0, task: "t")
      case "claim": _ = machine.claim(0)
      case "listReady": _ = machine.listReady(0, channel: 0)
      case "innerEnded": _ = machine.innerEnded(0, GridInner.EndAction.retire, failure: nil)
      case "remainingInnerTasks": _ = machine.remainingInnerTasks()
      case "claimTwice":
        let id = machine.startInner("a")!
        _ = machine.claim(id)
      case "innerEndedStaleWhileCurrent":
        let id = machine.startInner("a")!
        _ = machine.innerEnded(id, GridInner.EndAction.stale, failure: nil)
      case "innerEndedEmptyOnceDrained":
        let id = machine.startInner("a")!
        _ = machine.listReady(id, channel: id)
        _ = machine.next()
        _ = machine.taken(id, isDrained: true, retires: true)
        _ = machine.innerEnded(id, GridInner.EndAction.retire, failure: nil)
      default: return  // exits with success: the expectation fails on a misspelt cell
      }
    }
  }
}

@Suite("FlattenInnerStateMachine", .hangGuard)
struct FlattenInnerStateMachineTests {
  private func open(holding count: Int, limit: Int = 4) -> GridInner {
    var machine = GridInner(bufferLimit: limit)
    for index in 0..<count { _ = machine.offer("e\(index)") }
    return machine
  }

  private func closed(holding count: Int) -> GridInner {
    var machine = open(holding: count)
    #expect(machine.end() == .retireWhenDrained(needsListing: false))
    return machine
  }

  private func dropped() -> GridInner {
    var machine = open(holding: 1)
    _ = machine.drop()
    return machine
  }

  // offer
  @Test func testOffer_whenOpen_asksForAListingOnlyWhenItWasEmpty() {
    var machine = open(holding: 0)
    #expect(machine.offer("a") == .accepted(needsListing: true))
    #expect(machine.offer("b") == .accepted(needsListing: false))
  }

  @Test func testOffer_whenOpenAndFull_isFull() {
    var machine = open(holding: 4)
    #expect(machine.offer("x") == .full)
  }

  @Test func testOffer_whenDropped_isDropped() {
    var machine = dropped()
    #expect(machine.offer("x") == .dropped)
  }

  // waitForRoom
  @Test func testWaitForRoom_whenOpenAndFull_registersTheProducerUntilHalfIsTaken() {
    var machine = open(holding: 4)
    #expect(machine.waitForRoom(7) == nil)
    var elements: [String] = []
    #expect(machine.take(all: false, into: &elements).producer == nil)  // 3 left: above half
    #expect(machine.take(all: false, into: &elements).producer == 7)  // 2 left: half free
    #expect(elements == ["e0", "e1"])
  }

  @Test func testWaitForRoom_whenOpenWithRoomAgain_answersAtOnce() {
    var machine = open(holding: 3)
    #expect(machine.waitForRoom(7) == true)
  }

  @Test func testWaitForRoom_whenDropped_answersStop() {
    var machine = dropped()
    #expect(machine.waitForRoom(7) == false)
  }

  // end
  @Test func testEnd_whenOpenAndEmpty_retiresAtOnce() {
    var machine = open(holding: 0)
    #expect(machine.end() == .retire)
    #expect(machine.offer("x") == .dropped)
  }

  @Test func testEnd_whenOpenWithElements_retiresWhenDrained() {
    var machine = open(holding: 2)
    #expect(machine.end() == .retireWhenDrained(needsListing: false))
  }

  @Test func testEnd_whenDropped_isStale() {
    var machine = dropped()
    #expect(machine.end() == .stale)
  }

  // take
  @Test func testTake_whenOpen_takesOneOrAll() {
    var machine = open(holding: 3)
    var elements: [String] = []
    let one = machine.take(all: false, into: &elements)
    #expect(elements == ["e0"] && !one.isDrained && !one.retires)
    let all = machine.take(all: true, into: &elements)
    #expect(elements == ["e0", "e1", "e2"] && all.isDrained && !all.retires)
    // Drained: the next offer lists it again.
    #expect(machine.offer("x") == .accepted(needsListing: true))
  }

  @Test func testTake_whenClosed_retiresWithTheLastElement() {
    var machine = closed(holding: 2)
    var elements: [String] = []
    let first = machine.take(all: false, into: &elements)
    #expect(!first.isDrained && !first.retires)
    let last = machine.take(all: false, into: &elements)
    #expect(last.isDrained && last.retires && elements == ["e0", "e1"])
    #expect(machine.end() == .stale)
  }

  @Test func testTake_whenDropped_takesNothing() {
    var machine = dropped()
    var elements: [String] = []
    let nothing = machine.take(all: true, into: &elements)
    #expect(elements.isEmpty && nothing.isDrained && !nothing.retires && nothing.producer == nil)
  }

  // drop
  @Test func testDrop_whenOpen_discardsTheElementsAndReturnsTheWaitingProducer() {
    var machine = open(holding: 4)
    _ = machine.waitForRoom(7)
    #expect(machine.drop().producer == 7)
    #expect(machine.offer("x") == .dropped)
  }

  @Test func testDrop_whenClosedOrDropped_hasNobodyToResume() {
    var closed = closed(holding: 1)
    #expect(closed.drop().producer == nil)
    #expect(closed.drop().producer == nil)
  }

  static let impossibleCells = ["closed.offer", "closed.waitForRoom", "closed.end"]

  @Test(arguments: impossibleCells)
  func impossibleTransitionsStop(cell: String) async {
    await #expect(processExitsWith: .failure) { [cell] in
      let parts = cell.split(separator: ".").map(String.init)
      var machine = GridInner(bufferLimit: 4)
      _ = machine.offer("a")
      switch parts[0] {
      case "closed": _ = machine.end()
      case "dropped": _ = machine.drop()
      default: return  // exits with success: the expectation fails on a misspelt cell
      }
      var elements: [String] = []
      switch parts[1] {
      case "offer": _ = machine.offer("x")
      case "waitForRoom": _ = machine.waitForRoom(1)
      case "end": _ = machine.end()
      case "take": _ = machine.take(all: true, into: &elements)
      case "drop": _ = machine.drop()
      default: return  // exits with success: the expectation fails on a misspelt cell
      }
    }
  }
}
