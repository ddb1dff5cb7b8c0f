import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// One event given to an ``OperatorLogic`` in a table, at a whole number of seconds (ignored by a
/// logic that measures no time); `slot` is the input, for a logic that tells its inputs apart.
/// `step` is an event of the logic's own, beyond the protocol's (a `Flow` body's waiting
/// emitters); most tables have none (``LogicEvent``).
enum LogicTableEvent<Step>: CustomStringConvertible {
  case start(at: Int = 0)
  case input(Int, slot: Int = 0, at: Int = 0)
  /// An input's end: a finish, or a failure with this id.
  case end(failure: Int?, slot: Int = 0, at: Int = 0)
  case timer(at: Int)
  case next(at: Int = 0)
  case step(Step)

  static var start: Self { .start() }
  static var next: Self { .next() }

  var description: String {
    switch self {
    case .start(let at): "start at \(at)"
    case .input(let element, let slot, let at): "input \(element) to \(slot) at \(at)"
    case .end(let failure, let slot, let at): "end \(failure.map { "failure \($0)" } ?? "finish") of \(slot) at \(at)"
    case .timer(let at): "timer at \(at)"
    case .next(let at): "next at \(at)"
    case .step(let step): "\(step)"
    }
  }
}

/// An event of a table whose logic has no events of its own.
typealias LogicEvent = LogicTableEvent<Never>

/// An instant that a table names by a whole number of seconds.
protocol LogicTableInstant: InstantProtocol {
  init(tableSecond: Int)
  var tableSecond: Int64 { get }
}

extension TestClock.Instant: LogicTableInstant {
  init(tableSecond: Int) { self.init(offset: .seconds(tableSecond)) }
  var tableSecond: Int64 { offset.components.seconds }
}

extension TimelessClock.Instant: LogicTableInstant {
  init(tableSecond: Int) { self.init() }
  var tableSecond: Int64 { 0 }
}

/// A logic's element as a table makes it from an event's number and slot, and writes it.
protocol LogicTableElement {
  init(tableValue: Int, slot: Int)
  var tableText: String { get }
}

extension Int: LogicTableElement {
  init(tableValue: Int, slot: Int) { self = tableValue }
  var tableText: String { "\(self)" }
}

/// Runs `table` through `logic`, a plain value: each row is an event and what follows it, as text:
/// the event's answer (what was kept, displaced, delivered: `output` writes a delivered element;
/// `step` runs one of the logic's own events and answers it), then the deadline (`@3`), whether
/// the input is wanted (`pull`; given `inputs`, which of them: `pull 0,1`, and `wantsInput` must
/// say whether any is), whether the consumer has something (`output`), whether the end waits or
/// was delivered (`ending`), then what `flags` adds.
func checkLogic<Logic: OperatorLogic, Step>(
  _ logic: Logic, _ table: [(LogicTableEvent<Step>, String)], inputs: Int? = nil,
  output: (Logic.Output) -> String = { "\($0)" }, flags: (Logic) -> [String] = { _ in [] },
  step: (inout Logic, Step) -> String, sourceLocation: SourceLocation = #_sourceLocation
) where Logic.Element: LogicTableElement, Logic.InputFailure == TestError, Logic.Instant: LogicTableInstant {
  var logic = logic
  for (row, (event, expected)) in table.enumerated() {
    let answer: String
    switch event {
    case .start(let at):
      logic.start(at: .init(tableSecond: at))
      answer = "started"
    case .input(let value, let slot, let at):
      switch logic.input(Logic.Element(tableValue: value, slot: slot), at: .init(tableSecond: at)) {
      case .kept: answer = "kept"
      case .keptDisplacing(let displaced): answer = "kept, displaced \(displaced.tableText)"
      case .refused(let refused): answer = "refused \(refused.tableText)"
      }
    case .end(let failure, let slot, let at):
      let displaced = logic.inputEnded(failure.map { TestError(id: $0) }, from: slot, at: .init(tableSecond: at))
      answer = displaced.map { "displaced \($0.tableText)" } ?? "ended"
    case .timer(let at):
      answer = logic.timerFired(at: .init(tableSecond: at)).map { "fired, displaced \($0.tableText)" } ?? "fired"
    case .next(let at):
      switch logic.nextOutput(at: .init(tableSecond: at)) {
      case nil: answer = "nothing"
      case .element(let element): answer = output(element)
      case .end(nil): answer = "finish"
      case .end(let failure?): answer = "fail \((failure as? TestError).map { "\($0.id)" } ?? "\(failure)")"
      }
    case .step(let event):
      answer = step(&logic, event)
    }
    var parts = [answer]
    if let deadline = logic.deadline { parts.append("@\(deadline.tableSecond)") }
    if let inputs {
      let wanted = (0..<inputs).filter { logic.wantsInput(from: $0) }
      #expect(logic.wantsInput == !wanted.isEmpty, "row \(row): \(event)", sourceLocation: sourceLocation)
      if !wanted.isEmpty { parts.append("pull " + wanted.map(String.init).joined(separator: ",")) }
    } else if logic.wantsInput {
      parts.append("pull")
    }
    if logic.hasOutput { parts.append("output") }
    if logic.isEnding { parts.append("ending") }
    parts += flags(logic)
    #expect(parts.joined(separator: " ") == expected, "row \(row): \(event)", sourceLocation: sourceLocation)
  }
}

/// ``checkLogic(_:_:inputs:output:flags:step:sourceLocation:)`` for a logic with no events of its own.
func checkLogic<Logic: OperatorLogic>(
  _ logic: Logic, _ table: [(LogicEvent, String)], inputs: Int? = nil,
  output: (Logic.Output) -> String = { "\($0)" }, flags: (Logic) -> [String] = { _ in [] },
  sourceLocation: SourceLocation = #_sourceLocation
) where Logic.Element: LogicTableElement, Logic.InputFailure == TestError, Logic.Instant: LogicTableInstant {
  checkLogic(logic, table, inputs: inputs, output: output, flags: flags, step: noStep, sourceLocation: sourceLocation)
}

/// The `step` of a table with no steps (a closure with a `Never` parameter draws a warning).
private func noStep<Logic>(_: inout Logic, _ never: Never) -> String {}
