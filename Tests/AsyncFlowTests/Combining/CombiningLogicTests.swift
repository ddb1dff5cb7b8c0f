import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// combineLatest's, zip's and withLatestFrom's logic as a plain value: a table of events and what
/// follows each, with no continuations (`checkLogic` says how a row reads; `pull` lists the inputs
/// that may pull, and `failed` is the flag the consumer's batch checks). What the life cycle does
/// around it (cancellation, parking, waiting for the task) is `OperatorLifecycleTests`' grid.
@Suite("CombiningLogic")
struct CombiningLogicTests {
  private typealias Values = CombiningValuesArray<Int>
  private typealias Logic = CombiningLogic<Values, TestError>

  /// `rows 1`, `first 0,0,1`, `then 1`, `base 2`, then the elements the batch moved, per slot
  /// (`0:[1,2]`), and withLatestFrom's latest (`latest 10`).
  private func summary(_ output: CombiningOutput<Values>) -> String {
    var parts: [String]
    switch output.batch {
    case .rows(let rows): parts = ["rows \(rows)"]
    case .base(let count): parts = ["base \(count)"]
    case .arrivals(let order, let first):
      parts = [(first ? "first " : "then ") + order.map(String.init).joined(separator: ",")]
    }
    for (slot, pending) in output.values.pending.enumerated() where !pending.isEmpty {
      parts.append("\(slot):[\(pending.map(String.init).joined(separator: ","))]")
    }
    if let latest = output.values.latest.last, let latest { parts.append("latest \(latest)") }
    return parts.joined(separator: " ")
  }

  private func check(
    _ logic: Logic, _ table: [(LogicEvent, String)], sourceLocation: SourceLocation = #_sourceLocation
  ) {
    checkLogic(
      logic, table, inputs: logic.slots.count, output: summary, flags: { $0.failed.isSet ? ["failed"] : [] },
      sourceLocation: sourceLocation)
  }

  @Test func zip_takesTheCompleteRowsInOrder() {
    check(
      Logic(mode: .zip, count: 2, readAhead: 4),
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

  @Test func combineLatest_firstTakesEveryArrivalMarkedFirst_thenInArrivalOrder() {
    check(
      Logic(mode: .combineLatest, count: 2),
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

  @Test func withLatestFrom_refusesTheBaseBeforeTheOthersFirst_andSharesTheLatestWithEachBatch() {
    check(
      Logic(mode: .withLatestFrom, count: 2, readAhead: 2),
      [
        (.start, "started pull 0,1"),
        // Nothing to pair it with: handed back, released after the lock.
        (.input(1, slot: 0), "refused 1 pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        // The replaced latest leaves the lock too; the other is never bounded.
        (.input(11, slot: 1), "kept, displaced 10 pull 0,1"),
        (.input(2, slot: 0), "kept pull 0,1 output"),
        (.input(3, slot: 0), "kept pull 1 output"),
        (.input(12, slot: 1), "kept, displaced 11 pull 1 output"),
        (.next, "base 2 0:[2,3] latest 12 pull 0,1"),
        (.next, "nothing pull 0,1"),
      ])
  }

  @Test(arguments: [CombiningMode.zip, .combineLatest])
  func readAhead_boundsEachInput_untilTakenDownToHalf(_ mode: CombiningMode) {
    check(
      Logic(mode: mode, count: 2, readAhead: 4),
      [
        (.start, "started pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1"),
        (.input(2, slot: 0), "kept pull 0,1"),
        (.input(3, slot: 0), "kept pull 0,1"),
        // At the bound only this input stops: the other one still may complete a row.
        (.input(4, slot: 0), "kept pull 1"),
        (.input(10, slot: 1), "kept pull 1 output"),
        (.next, mode == .zip ? "rows 1 0:[1] 1:[10] pull 1" : "first 0,0,0,0,1 0:[1,2,3,4] 1:[10] pull 0,1"),
      ])
  }

  @Test func readAhead_zipWantsTheInputAgainAtHalf() {
    check(
      Logic(mode: .zip, count: 2, readAhead: 4),
      [
        (.start, "started pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1"),
        (.input(2, slot: 0), "kept pull 0,1"),
        (.input(3, slot: 0), "kept pull 0,1"),
        (.input(4, slot: 0), "kept pull 1"),
        (.input(10, slot: 1), "kept pull 1 output"),
        // Held 3 of 4: not yet.
        (.next, "rows 1 0:[1] 1:[10] pull 1"),
        (.input(11, slot: 1), "kept pull 1 output"),
        (.next, "rows 1 0:[2] 1:[11] pull 0,1"),
      ])
  }

  @Test(arguments: [CombiningMode.zip, .combineLatest, .withLatestFrom])
  func failure_endsAtOnceBeforeWhatIsHeld(_ mode: CombiningMode) {
    check(
      Logic(mode: mode, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1 output"),
        (.end(failure: 7, slot: 1), "ended pull 0,1 output ending failed"),
        (.next, "fail 7 pull 0,1 ending failed"),
        (.next, "nothing pull 0,1 ending failed"),
      ])
  }

  @Test func zip_endsWhenAFinishedInputHoldsNothing() {
    check(
      Logic(mode: .zip, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        (.end(failure: nil, slot: 0), "ended pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test func zip_whenTheFinishedInputStillHolds_endsWithTheBatchThatTakesItsLast() {
    check(
      Logic(mode: .zip, count: 2),
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

  @Test func combineLatest_anInputThatNeverProduced_endsAtOnce() {
    check(
      Logic(mode: .combineLatest, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1"),
        (.end(failure: nil, slot: 1), "ended pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test func combineLatest_endsOnceEveryInputFinishedAndWasTaken() {
    check(
      Logic(mode: .combineLatest, count: 2),
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

  @Test func withLatestFrom_onlyTheBaseEnds() {
    check(
      Logic(mode: .withLatestFrom, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(10, slot: 1), "kept pull 0,1"),
        (.end(failure: nil, slot: 1), "ended pull 0,1"),
        (.input(1, slot: 0), "kept pull 0,1 output"),
        (.end(failure: nil, slot: 0), "ended pull 0,1 output"),
        (.next, "base 1 0:[1] latest 10 pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test(arguments: [CombiningMode.zip, .combineLatest])
  func noInputs_endsAtOnce(_ mode: CombiningMode) {
    check(
      Logic(mode: mode, count: 0),
      [
        (.start, "started output ending"),
        (.next, "finish ending"),
        (.next, "nothing ending"),
      ])
  }
}

extension CombiningValuesArray.Input: LogicTableElement where Element == Int {
  init(tableValue: Int, slot: Int) { self.init(slot: slot, element: tableValue) }
  var tableText: String { "\(element)" }
}
