import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// One event given to a ``Flow`` body's logic. Waiters are numbered; a waiter's token is its number.
private enum EmitterStep: CustomStringConvertible {
  case emit(Int)
  /// An `emit` that found no room waits (`cancelled`: its task was cancelled first).
  case wait(Int, cancelled: Bool = false)
  /// The task of a waiting `emit` was cancelled.
  case cancelWaiter(Int)
  case next
  /// The body returned (`nil`) or threw the error with this id; its waiting emitters are let go.
  case bodyEnded(failure: Int?)

  var description: String {
    switch self {
    case .emit(let element): "emit \(element)"
    case .wait(let waiter, let cancelled): "wait \(waiter)\(cancelled ? " cancelled" : "")"
    case .cancelWaiter(let waiter): "cancel waiter \(waiter)"
    case .next: "next"
    case .bodyEnded(let failure): "body ended \(failure.map { "failure \($0)" } ?? "finish")"
    }
  }
}

/// Runs `table` through an ``EmitterLogic``: each row is an event and what follows it, as text:
/// the event's answer (the batch taken, the waiters let go), then whether an `emit` may return at
/// once (`pull`), the consumer has something (`output`), the end waits (`ending`), and how many
/// emitters wait.
private func check(bufferSize: Int, _ table: [(EmitterStep, String)], sourceLocation: SourceLocation = #_sourceLocation) {
  var logic = EmitterLogic<Int, TestError, Int>(bufferSize: bufferSize)
  let now = TimelessClock.Instant()
  func released(_ waiters: [Int]) -> String { waiters.isEmpty ? "" : " releases \(waiters)" }
  for (row, (step, expected)) in table.enumerated() {
    let answer: String
    switch step {
    case .emit(let element):
      guard case .kept = logic.input(element, at: now) else { preconditionFailure("EmitterLogic keeps every element") }
      answer = "kept"
    case .wait(let waiter, let cancelled):
      #expect(logic.makeToken() == waiter, "row \(row): tokens count up", sourceLocation: sourceLocation)
      answer = logic.wait(waiter, token: waiter, isCancelled: cancelled).map { "goes on \($0)" } ?? "waits"
    case .cancelWaiter(let waiter):
      answer = logic.waiterCancelled(token: waiter).map { "releases [\($0)]" } ?? "nothing"
    case .next:
      switch logic.nextOutput(at: now) {
      case nil: answer = "nothing"
      case .element(let batch): answer = "\(batch.elements)\(released(batch.released))"
      case .end(nil): answer = "finish"
      case .end(let failure?): answer = "fail \(failure.id)"
      }
    case .bodyEnded(let failure):
      _ = logic.inputEnded(failure.map { TestError(id: $0) }, from: 0, at: now)
      answer = "ended\(released(logic.takeWaiters()))"
    }
    var parts = [answer]
    if logic.wantsInput { parts.append("pull") }
    if logic.hasOutput { parts.append("output") }
    if logic.isEnding { parts.append("ending") }
    if !logic.waiters.isEmpty { parts.append("waiting \(logic.waiters.count)") }
    #expect(parts.joined(separator: " ") == expected, "row \(row): \(step)", sourceLocation: sourceLocation)
  }
}

/// The `Flow { emitter in }` hand-off as a plain value: a table of events and what follows each.
/// What the life cycle adds around it (start, cancellation, the end after the task) is
/// `OperatorLifecycleTests`' grid; the public behaviour is `FlowTests`'.
@Suite("Emitter logic")
struct EmitterLogicTests {
  @Test func rendezvous_theBodyRunsOnlyAsFarAsTheConsumerAsked() {
    check(
      bufferSize: 0,
      [
        (.next, "nothing pull"),  // the first demand: one element may come
        (.emit(1), "kept output"),
        (.wait(0), "waits output waiting 1"),
        // Taking the batch is no new demand: the emitter waits on.
        (.next, "[1] waiting 1"),
        // Asking again is: the waiter leaves in an empty batch.
        (.next, "[] releases [0] pull"),
        (.next, "nothing pull"),
        (.emit(2), "kept output"),
        (.next, "[2]"),
        (.bodyEnded(failure: nil), "ended output ending"),
        (.next, "finish ending"),
      ])
  }

  @Test func aBatchCountsAgainstTheBufferUntilTheConsumerAsksAgain() {
    check(
      bufferSize: 2,
      [
        (.emit(1), "kept pull output"),
        (.emit(2), "kept pull output"),
        (.emit(3), "kept output"),  // two ahead of the one asked for
        (.wait(0), "waits output waiting 1"),
        // The consumer holds two beyond the one it returned: still no room.
        (.next, "[1, 2, 3] waiting 1"),
        (.next, "[] releases [0] pull"),
        (.emit(4), "kept pull output"),
        // A small batch leaves room at once.
        (.next, "[4] pull"),
        (.emit(5), "kept pull output"),
        (.emit(6), "kept output"),
        (.next, "[5, 6] pull"),
      ])
  }

  @Test func everyWaitingEmitterIsLetGoAndACancelledOneAlone() {
    check(
      bufferSize: 1,
      [
        (.emit(1), "kept pull output"),
        (.emit(2), "kept output"),
        (.wait(0), "waits output waiting 1"),
        (.emit(3), "kept output waiting 1"),  // another child task, one more ahead
        (.wait(1), "waits output waiting 2"),
        (.emit(4), "kept output waiting 2"),
        (.wait(2), "waits output waiting 3"),
        (.cancelWaiter(1), "releases [1] output waiting 2"),
        (.cancelWaiter(1), "nothing output waiting 2"),  // already gone
        (.next, "[1, 2, 3, 4] waiting 2"),
        (.next, "[] releases [0, 2] pull"),
      ])
  }

  @Test func aWaiterGoesOnAtOnceWhenThereIsRoomOrNoReaderOrItIsCancelled() {
    check(
      bufferSize: 0,
      [
        (.wait(0), "goes on 0 pull"),  // the consumer took a batch since its element
        (.emit(1), "kept output"),
        (.wait(1, cancelled: true), "goes on 1 output"),
        (.bodyEnded(failure: nil), "ended output ending"),
        (.wait(2), "goes on 2 output ending"),
      ])
  }

  @Test func theFailureComesAfterTheElementsAndLetsTheWaitersGo() {
    check(
      bufferSize: 0,
      [
        (.emit(1), "kept output"),
        (.wait(0), "waits output waiting 1"),  // from a task the body left running
        (.bodyEnded(failure: 7), "ended releases [0] output ending"),
        (.next, "[1] output ending"),
        (.next, "fail 7 ending"),
      ])
  }
}
