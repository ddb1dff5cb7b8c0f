import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `Flow.merge`'s logic as a plain value: a table of events and what follows each, with no
/// continuations. Each row's text is the event's answer, then `pull` (the inputs may pull),
/// `output` (the consumer has something) and `ending` (the end waits or was delivered).
@Suite("MergeLogic")
struct MergeLogicTests {
  private enum Step {
    case start
    case input(Int)
    /// An input's end: a finish, or a failure with this id.
    case end(failure: Int?)
    case next
  }

  private func check(_ logic: MergeLogic<Int, TestError>, _ table: [(Step, String)]) {
    var logic = logic
    let now = TimelessClock.Instant()
    for (row, (step, expected)) in table.enumerated() {
      var parts: [String]
      switch step {
      case .start:
        logic.start(at: now)
        parts = ["started"]
      case .input(let element):
        guard case .kept = logic.input(element, at: now) else {
          Issue.record("row \(row): a merge keeps every element")
          return
        }
        parts = ["kept"]
      case .end(let failure):
        #expect(logic.inputEnded(failure.map { TestError(id: $0) }, at: now) == nil)
        parts = ["ended"]
      case .next:
        switch logic.nextOutput(at: now) {
        case nil: parts = ["nothing"]
        case .element(let batch): parts = ["\(batch)"]
        case .end(nil): parts = ["finish"]
        case .end(let failure?): parts = ["fail \(failure.id)"]
        }
      }
      #expect(logic.deadline == nil)
      if logic.wantsInput { parts.append("pull") }
      if logic.hasOutput { parts.append("output") }
      if logic.isEnding { parts.append("ending") }
      #expect(parts.joined(separator: " ") == expected, "row \(row)")
    }
  }

  @Test func batch_takesEverythingBufferedInArrivalOrder() {
    check(
      MergeLogic(count: 2),
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
    var logic = MergeLogic<Int, TestError>(count: 2)
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
    check(
      MergeLogic(count: 2),
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
    check(
      MergeLogic(count: 3),
      [
        (.input(1), "kept pull output"),
        (.end(failure: 7), "ended pull output ending"),
        (.next, "[1] pull output ending"),
        (.next, "fail 7 pull ending"),
      ])
  }

  @Test func noInputs_finishesAtTheStart() {
    check(MergeLogic(count: 0), [(.start, "started pull output ending"), (.next, "finish pull ending")])
  }
}
