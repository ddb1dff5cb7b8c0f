import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `Flow.merge`'s logic as a plain value: a table of events and what follows each, with no
/// continuations (`checkLogic` says how a row reads).
@Suite("MergeLogic")
struct MergeLogicTests {
  private typealias Logic = MergeLogic<Int, TestError>

  @Test func batch_takesEverythingBufferedInArrivalOrder() {
    checkLogic(
      Logic(count: 2),
      [
        (.start, "started pull"),
        (.next, "nothing pull"),
        (.input(1), "kept pull output"),
        (.input(2), "kept pull output"),
        (.next, "[1, 2] pull"),
        (.next, "nothing pull"),
      ])
  }

  @Test func limit_isSixtyFourPerInput_andTheBatchFreesIt() {
    var logic = Logic(count: 2)
    for element in 0..<127 { _ = logic.input(element, at: TimelessClock.Instant()) }
    #expect(logic.wantsInput)
    _ = logic.input(127, at: TimelessClock.Instant())
    #expect(!logic.wantsInput)  // the inputs park until the consumer takes the buffer
    guard case .element(let batch) = logic.nextOutput(at: TimelessClock.Instant()) else {
      Issue.record("expected the batch")
      return
    }
    #expect(batch == Array(0..<128))
    #expect(logic.wantsInput)
  }

  @Test func finish_comesWithTheLastInput_afterWhatIsBuffered() {
    checkLogic(
      Logic(count: 2),
      [
        (.input(1), "kept pull output"),
        (.end(failure: nil), "ended pull output"),
        (.input(2), "kept pull output"),
        (.end(failure: nil), "ended pull output ending"),
        (.next, "[1, 2] pull output ending"),
        (.next, "finish pull ending"),
        (.next, "nothing pull ending"),
      ])
  }

  @Test func failure_endsAtOnce_afterWhatIsBuffered() {
    checkLogic(
      Logic(count: 3),
      [
        (.input(1), "kept pull output"),
        (.end(failure: 7), "ended pull output ending"),
        (.next, "[1] pull output ending"),
        (.next, "fail 7 pull ending"),
      ])
  }

  @Test func noInputs_finishesAtTheStart() {
    checkLogic(Logic(count: 0), [(.start, "started pull output ending"), (.next, "finish pull ending")])
  }
}
