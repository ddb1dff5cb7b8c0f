import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// combineLatest's, zip's and withLatestFrom's logic as a plain value: a table of events and what
/// follows each, with no continuations. Each row's text is the event's answer, then `pull` and the
/// inputs that may pull, `output` (the consumer has something), `ending` (the end waits or was
/// delivered) and `failed` (the flag the consumer's batch checks). What the life cycle does around
/// it (cancellation, parking, waiting for the task) is `OperatorLifecycleTests`' grid.
@Suite("CombiningLogic")
struct CombiningLogicTests {
  private typealias Values = CombiningValuesArray<Int>
  private typealias Logic = CombiningLogic<Values, TestError>

  private enum Step {
    case start
    /// An element of a slot.
    case input(slot: Int, Int)
    /// A slot's end: a finish, or a failure with this id.
    case end(slot: Int, failure: Int?)
    case next
  }

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

  private func check(_ logic: Logic, _ table: [(Step, String)]) {
    var logic = logic
    let now = TimelessClock.Instant()
    for (row, (step, expected)) in table.enumerated() {
      var parts: [String]
      switch step {
      case .start:
        logic.start(at: now)
        parts = ["started"]
      case .input(let slot, let element):
        switch logic.input(Values.Input(slot: slot, element: element), at: now) {
        case .kept: parts = ["kept"]
        case .keptDisplacing(let displaced): parts = ["kept displacing \(displaced.element)"]
        case .refused(let refused): parts = ["refused \(refused.element)"]
        }
      case .end(let slot, let failure):
        #expect(logic.inputEnded(failure.map { TestError(id: $0) }, from: slot, at: now) == nil)
        parts = ["ended"]
      case .next:
        switch logic.nextOutput(at: now) {
        case nil: parts = ["nothing"]
        case .element(let output): parts = [summary(output)]
        case .end(nil): parts = ["finish"]
        case .end(let failure?): parts = ["fail \(failure.id)"]
        }
      }
      #expect(logic.deadline == nil)
      let wanted = logic.slots.indices.filter { logic.wantsInput(from: $0) }
      #expect(logic.wantsInput == !wanted.isEmpty, "row \(row)")
      if !wanted.isEmpty { parts.append("pull " + wanted.map(String.init).joined(separator: ",")) }
      if logic.hasOutput { parts.append("output") }
      if logic.isEnding { parts.append("ending") }
      if logic.failed.isSet { parts.append("failed") }
      #expect(parts.joined(separator: " ") == expected, "row \(row)")
    }
  }

  @Test func zip_takesTheCompleteRowsInOrder() {
    check(
      Logic(mode: .zip, count: 2, readAhead: 4),
      [
        (.start, "started pull 0,1"),
        (.next, "nothing pull 0,1"),
        (.input(slot: 0, 1), "kept pull 0,1"),
        (.input(slot: 0, 2), "kept pull 0,1"),
        (.input(slot: 0, 3), "kept pull 0,1"),
        (.input(slot: 1, 10), "kept pull 0,1 output"),
        (.next, "rows 1 0:[1] 1:[10] pull 0,1"),
        (.input(slot: 1, 11), "kept pull 0,1 output"),
        (.input(slot: 1, 12), "kept pull 0,1 output"),
        (.next, "rows 2 0:[2,3] 1:[11,12] pull 0,1"),
        (.next, "nothing pull 0,1"),
      ])
  }

  @Test func combineLatest_firstTakesEveryArrivalMarkedFirst_thenInArrivalOrder() {
    check(
      Logic(mode: .combineLatest, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(slot: 0, 1), "kept pull 0,1"),
        (.input(slot: 0, 2), "kept pull 0,1"),
        (.input(slot: 1, 10), "kept pull 0,1 output"),
        (.next, "first 0,0,1 0:[1,2] 1:[10] pull 0,1"),
        (.next, "nothing pull 0,1"),
        // From then on every element makes an output, in the order they arrived.
        (.input(slot: 1, 11), "kept pull 0,1 output"),
        (.input(slot: 0, 3), "kept pull 0,1 output"),
        (.next, "then 1,0 0:[3] 1:[11] pull 0,1"),
      ])
  }

  @Test func withLatestFrom_refusesTheBaseBeforeTheOthersFirst_andSharesTheLatestWithEachBatch() {
    check(
      Logic(mode: .withLatestFrom, count: 2, readAhead: 2),
      [
        (.start, "started pull 0,1"),
        // Nothing to pair it with: handed back, released after the lock.
        (.input(slot: 0, 1), "refused 1 pull 0,1"),
        (.input(slot: 1, 10), "kept pull 0,1"),
        // The replaced latest leaves the lock too; the other is never bounded.
        (.input(slot: 1, 11), "kept displacing 10 pull 0,1"),
        (.input(slot: 0, 2), "kept pull 0,1 output"),
        (.input(slot: 0, 3), "kept pull 1 output"),
        (.input(slot: 1, 12), "kept displacing 11 pull 1 output"),
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
        (.input(slot: 0, 1), "kept pull 0,1"),
        (.input(slot: 0, 2), "kept pull 0,1"),
        (.input(slot: 0, 3), "kept pull 0,1"),
        // At the bound only this input stops: the other one still may complete a row.
        (.input(slot: 0, 4), "kept pull 1"),
        (.input(slot: 1, 10), "kept pull 1 output"),
        (.next, mode == .zip ? "rows 1 0:[1] 1:[10] pull 1" : "first 0,0,0,0,1 0:[1,2,3,4] 1:[10] pull 0,1"),
      ])
  }

  @Test func readAhead_zipWantsTheInputAgainAtHalf() {
    check(
      Logic(mode: .zip, count: 2, readAhead: 4),
      [
        (.start, "started pull 0,1"),
        (.input(slot: 0, 1), "kept pull 0,1"),
        (.input(slot: 0, 2), "kept pull 0,1"),
        (.input(slot: 0, 3), "kept pull 0,1"),
        (.input(slot: 0, 4), "kept pull 1"),
        (.input(slot: 1, 10), "kept pull 1 output"),
        // Held 3 of 4: not yet.
        (.next, "rows 1 0:[1] 1:[10] pull 1"),
        (.input(slot: 1, 11), "kept pull 1 output"),
        (.next, "rows 1 0:[2] 1:[11] pull 0,1"),
      ])
  }

  @Test(arguments: [CombiningMode.zip, .combineLatest, .withLatestFrom])
  func failure_endsAtOnceBeforeWhatIsHeld(_ mode: CombiningMode) {
    check(
      Logic(mode: mode, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(slot: 1, 10), "kept pull 0,1"),
        (.input(slot: 0, 1), "kept pull 0,1 output"),
        (.end(slot: 1, failure: 7), "ended pull 0,1 output ending failed"),
        (.next, "fail 7 pull 0,1 ending failed"),
        (.next, "nothing pull 0,1 ending failed"),
      ])
  }

  @Test func zip_endsWhenAFinishedInputHoldsNothing() {
    check(
      Logic(mode: .zip, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(slot: 1, 10), "kept pull 0,1"),
        (.end(slot: 0, failure: nil), "ended pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test func zip_whenTheFinishedInputStillHolds_endsWithTheBatchThatTakesItsLast() {
    check(
      Logic(mode: .zip, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(slot: 0, 1), "kept pull 0,1"),
        (.input(slot: 0, 2), "kept pull 0,1"),
        (.end(slot: 0, failure: nil), "ended pull 0,1"),
        (.input(slot: 1, 10), "kept pull 0,1 output"),
        (.next, "rows 1 0:[1] 1:[10] pull 0,1"),
        (.input(slot: 1, 11), "kept pull 0,1 output"),
        (.next, "rows 1 0:[2] 1:[11] pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test func combineLatest_anInputThatNeverProduced_endsAtOnce() {
    check(
      Logic(mode: .combineLatest, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(slot: 0, 1), "kept pull 0,1"),
        (.end(slot: 1, failure: nil), "ended pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test func combineLatest_endsOnceEveryInputFinishedAndWasTaken() {
    check(
      Logic(mode: .combineLatest, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(slot: 0, 1), "kept pull 0,1"),
        (.input(slot: 1, 10), "kept pull 0,1 output"),
        (.end(slot: 0, failure: nil), "ended pull 0,1 output"),
        (.input(slot: 1, 11), "kept pull 0,1 output"),
        (.end(slot: 1, failure: nil), "ended pull 0,1 output"),
        (.next, "first 0,1,1 0:[1] 1:[10,11] pull 0,1 output ending"),
        (.next, "finish pull 0,1 ending"),
      ])
  }

  @Test func withLatestFrom_onlyTheBaseEnds() {
    check(
      Logic(mode: .withLatestFrom, count: 2),
      [
        (.start, "started pull 0,1"),
        (.input(slot: 1, 10), "kept pull 0,1"),
        (.end(slot: 1, failure: nil), "ended pull 0,1"),
        (.input(slot: 0, 1), "kept pull 0,1 output"),
        (.end(slot: 0, failure: nil), "ended pull 0,1 output"),
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
