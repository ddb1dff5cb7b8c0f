import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// combineLatest's, zip's and withLatestFrom's logics as plain values: each a table of events and
/// what follows each, with no continuations (`checkLogic` says how a row reads; `pull` lists the
/// inputs that may pull, and `drops` says that the end drops what the consumer's batch still
/// holds). What the life cycle does around them (cancellation, parking, waiting for the task,
/// handing `drops` to the consumer) is `OperatorLifecycleTests`' grid.
private typealias Values = CombiningValuesArray<Int>

/// The elements a batch moved, per slot (`0:[1,2]`).
private func slots(_ values: Values) -> [String] {
  values.pending.enumerated().filter { !$0.element.isEmpty }.map { slot, pending in
    "\(slot):[\(pending.map(String.init).joined(separator: ","))]"
  }
}

/// `rows 1 0:[1] 1:[10]`.
private func summary(_ batch: CombiningRows<Values>) -> String {
  (["rows \(batch.count)"] + slots(batch.values)).joined(separator: " ")
}

/// `first 0,0,1 0:[1,2] 1:[10]`, `then 1,0 …`: the arrival order, marked first for the first batch.
private func summary(_ batch: CombineLatestBatch<Values>) -> String {
  let order = (batch.first ? "first " : "then ") + batch.order.map(String.init).joined(separator: ",")
  return ([order] + slots(batch.values)).joined(separator: " ")
}

private func check<Logic: CombiningLogic>(
  _ logic: Logic, _ table: [(LogicEvent, String)], output: @escaping (Logic.Output) -> String,
  sourceLocation: SourceLocation = #_sourceLocation
) where Logic.Values == Values, Logic.Failure == TestError {
  checkLogic(
    logic, table, inputs: logic.held.slots.count, output: output,
    flags: { $0.isEnding && $0.dropsTakenOutputs ? ["drops"] : [] }, sourceLocation: sourceLocation)
}

@Suite("ZipLogic")
struct ZipLogicTests {
  private typealias Logic = ZipLogic<Values, TestError>

  private func check(_ logic: Logic, _ table: [(LogicEvent, String)], sourceLocation: SourceLocation = #_sourceLocation)
  {
    AsyncFlowTests.check(logic, table, output: summary, sourceLocation: sourceLocation)
  }

  @Test func takesTheCompleteRowsInOrder() {
    check(
      Logic(count: 2, readAhead: 4),
      [
        (.start, "started pull 0,1"),
        (.next, "nothing pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1"),
        (.input(2, slot: 0), "kept pull 0,1"),
        (.input(3, slot: 0), "kept pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1 output"),
        (.next, "rows 1 0:[1] 1:[10] pull 0,1"),
        (.input(11, slot: 1), "kept pull 0,1 output"),
        (.input(12, slot: 1), "kept pull 0,1 output"),
        (.next, "rows 2 0:[2,3] 1:[11,12] pull 0,1"),
        (.next, "nothing pull 0,1"),
      ])
  }

  @Test func readAhead_boundsEachInput_untilTakenDownToHalf() {
    check(
      Logic(count: 2, readAhead: 4),
      [
        (.start, "started pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1"),
        (.input(2, slot: 0), "kept pull 0,1"),
        (.input(3, slot: 0), "kept pull 0,1"),
        // At the bound only this input stops: the other one still may complete a row.
        (.input(4, slot: 0), "kept pull 1"),
        (.input(10, slot: 1), "kept pull 1 output"),
        // Held 3 of 4: not yet.
        (.next, "rows 1 0:[1] 1:[10] pull 1"),
        (.input(11, slot: 1), "kept pull 1 output"),
        (.next, "rows 1 0:[2] 1:[11] pull 0,1"),
      ])
  }

  @Test func failure_endsAtOnceBeforeWhatIsHeld_andDropsTheTakenBatch() {
    check(
      Logic(count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1 output"),
        (.end(failure: 7, slot: 1), "ended pull 0,1 output ending drops"),
        (.next, "fail 7 pull 0,1 ending"),
        (.next, "nothing pull 0,1 ending"),
      ])
  }

  @Test func endsWhenAFinishedInputHoldsNothing() {
    check(
      Logic(count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        (.end(failure: nil, slot: 0), "ended pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test func whenTheFinishedInputStillHolds_endsWithTheBatchThatTakesItsLast() {
    check(
      Logic(count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1"),
        (.input(2, slot: 0), "kept pull 0,1"),
        (.end(failure: nil, slot: 0), "ended pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1 output"),
        (.next, "rows 1 0:[1] 1:[10] pull 0,1"),
        (.input(11, slot: 1), "kept pull 0,1 output"),
        (.next, "rows 1 0:[2] 1:[11] pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test func noInputs_endsAtOnce() {
    check(Logic(count: 0), [(.start, "started output ending"), (.next, "finish ending"), (.next, "nothing ending")])
  }
}

@Suite("CombineLatestLogic")
struct CombineLatestLogicTests {
  private typealias Logic = CombineLatestLogic<Values, TestError>

  private func check(_ logic: Logic, _ table: [(LogicEvent, String)], sourceLocation: SourceLocation = #_sourceLocation)
  {
    AsyncFlowTests.check(logic, table, output: summary, sourceLocation: sourceLocation)
  }

  @Test func firstTakesEveryArrivalMarkedFirst_thenInArrivalOrder() {
    check(
      Logic(count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1"),
        (.input(2, slot: 0), "kept pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1 output"),
        (.next, "first 0,0,1 0:[1,2] 1:[10] pull 0,1"),
        (.next, "nothing pull 0,1"),
        // From then on every element makes an output, in the order they arrived.
        (.input(11, slot: 1), "kept pull 0,1 output"),
        (.input(3, slot: 0), "kept pull 0,1 output"),
        (.next, "then 1,0 0:[3] 1:[11] pull 0,1"),
      ])
  }

  @Test func readAhead_boundsEachInput_untilTakenDownToHalf() {
    check(
      Logic(count: 2, readAhead: 4),
      [
        (.start, "started pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1"),
        (.input(2, slot: 0), "kept pull 0,1"),
        (.input(3, slot: 0), "kept pull 0,1"),
        (.input(4, slot: 0), "kept pull 1"),
        (.input(10, slot: 1), "kept pull 1 output"),
        // Every held element goes: both are wanted again.
        (.next, "first 0,0,0,0,1 0:[1,2,3,4] 1:[10] pull 0,1"),
      ])
  }

  @Test func failure_endsAtOnceBeforeWhatIsHeld_andDropsTheTakenBatch() {
    check(
      Logic(count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1 output"),
        (.end(failure: 7, slot: 0), "ended pull 0,1 output ending drops"),
        (.next, "fail 7 pull 0,1 ending"),
      ])
  }

  @Test func anInputThatNeverProduced_endsAtOnce() {
    check(
      Logic(count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1"),
        (.end(failure: nil, slot: 1), "ended pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test func endsOnceEveryInputFinishedAndWasTaken() {
    check(
      Logic(count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1 output"),
        (.end(failure: nil, slot: 0), "ended pull 0,1 output"),
        (.input(11, slot: 1), "kept pull 0,1 output"),
        (.end(failure: nil, slot: 1), "ended pull 0,1 output"),
        (.next, "first 0,1,1 0:[1] 1:[10,11] pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test func noInputs_endsAtOnce() {
    check(Logic(count: 0), [(.start, "started output ending"), (.next, "finish ending"), (.next, "nothing ending")])
  }
}

@Suite("WithLatestFromLogic")
struct WithLatestFromLogicTests {
  private typealias Logic = WithLatestFromLogic<Values, TestError>

  private func check(_ logic: Logic, _ table: [(LogicEvent, String)], sourceLocation: SourceLocation = #_sourceLocation)
  {
    AsyncFlowTests.check(logic, table, output: summary, sourceLocation: sourceLocation)
  }

  @Test func theOtherIsStartedFirst() {
    #expect(Logic.inputStartedFirst == 1)
    #expect(ZipLogic<Values, TestError>.inputStartedFirst == nil)
    #expect(CombineLatestLogic<Values, TestError>.inputStartedFirst == nil)
  }

  /// Each base element takes a copy of the other's latest as it is read: 2 and 3 keep 11 after 12
  /// replaced it (the batch's second slot holds those copies), 4 takes 12.
  @Test func eachBaseElementPairsWithTheLatestAsOfItsRead() {
    check(
      Logic(count: 2),
      [
        (.start, "started pull 0,1"),
        // Nothing to pair it with: handed back, released after the lock.
        (.input(1, slot: 0), "refused 1 pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        // The replaced latest leaves the lock too.
        (.input(11, slot: 1), "kept, displaced 10 pull 0,1"),
        (.input(2, slot: 0), "kept pull 0,1 output"),
        (.input(3, slot: 0), "kept pull 0,1 output"),
        (.input(12, slot: 1), "kept, displaced 11 pull 0,1 output"),
        (.input(4, slot: 0), "kept pull 0,1 output"),
        (.next, "rows 3 0:[2,3,4] 1:[11,11,12] pull 0,1"),
        (.next, "nothing pull 0,1"),
        (.input(5, slot: 0), "kept pull 0,1 output"),
        (.next, "rows 1 0:[5] 1:[12] pull 0,1"),
      ])
  }

  @Test func readAhead_boundsTheBase_neverTheOther() {
    check(
      Logic(count: 2, readAhead: 2),
      [
        (.start, "started pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1 output"),
        (.input(2, slot: 0), "kept pull 1 output"),
        (.input(11, slot: 1), "kept, displaced 10 pull 1 output"),
        (.next, "rows 2 0:[1,2] 1:[10,10] pull 0,1"),
      ])
  }

  @Test(arguments: [0, 1])
  func failureOfEither_endsAtOnceBeforeWhatIsHeld_andDropsTheTakenBatch(_ slot: Int) {
    check(
      Logic(count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1 output"),
        (.end(failure: 7, slot: slot), "ended pull 0,1 output ending drops"),
        (.next, "fail 7 pull 0,1 ending"),
        (.next, "nothing pull 0,1 ending"),
      ])
  }

  @Test func onlyTheBaseEnds_onceItsPairsAreTaken() {
    check(
      Logic(count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        (.end(failure: nil, slot: 1), "ended pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1 output"),
        (.end(failure: nil, slot: 0), "ended pull 0,1 output"),
        (.next, "rows 1 0:[1] 1:[10] pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }
}

extension CombiningValuesArray.Input: LogicTableElement where Element == Int {
  init(tableValue: Int, slot: Int) { self.init(slot: slot, element: tableValue) }
  var tableText: String { "\(element)" }
}
