import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// The events of a ``Flow`` body's logic beyond an `emit` (a table's `input`) and the consumer's
/// `next`. Waiters are numbered; a waiter's token is its number.
private enum EmitterStep: CustomStringConvertible {
  /// An `emit` that found no room waits (`cancelled`: its task was cancelled first).
  case wait(Int, cancelled: Bool = false)
  /// The task of a waiting `emit` was cancelled.
  case cancelWaiter(Int)
  /// The body returned (`nil`) or threw the error with this id; its waiting emitters are let go.
  case bodyEnded(failure: Int?)
  /// The life cycle retired the logic (the consumer left); the waiters it still holds go on.
  case retire

  var description: String {
    switch self {
    case .wait(let waiter, let cancelled): "wait \(waiter)\(cancelled ? " cancelled" : "")"
    case .cancelWaiter(let waiter): "cancel waiter \(waiter)"
    case .bodyEnded(let failure): "body ended \(failure.map { "failure \($0)" } ?? "finish")"
    case .retire: "retire"
    }
  }
}

private typealias Logic = EmitterLogic<Int, TestError, NumberedWaiter>
private typealias Event = LogicTableEvent<EmitterStep>

extension LogicTableEvent where Step == EmitterStep {
  /// An `emit` of `element`: the body hands it to the logic.
  fileprivate static func emit(_ element: Int) -> Self { .input(element) }
  fileprivate static func wait(_ waiter: Int, cancelled: Bool = false) -> Self { .step(.wait(waiter, cancelled: cancelled)) }
  fileprivate static func cancelWaiter(_ waiter: Int) -> Self { .step(.cancelWaiter(waiter)) }
  fileprivate static func bodyEnded(failure: Int?) -> Self { .step(.bodyEnded(failure: failure)) }
  fileprivate static var retire: Self { .step(.retire) }
}

private func released(_ waiters: [NumberedWaiter]) -> String { waiters.isEmpty ? "" : " releases \(waiters)" }

/// Runs `table` through an ``EmitterLogic`` (`checkLogic` says how a row reads): a delivered batch
/// is written with the waiters it lets go, and the row ends with how many emitters wait.
private func check(bufferSize: Int, _ table: [(Event, String)], sourceLocation: SourceLocation = #_sourceLocation) {
  checkLogic(
    Logic(bufferSize: bufferSize), table, output: { "\($0.elements)\(released($0.released))" },
    flags: { $0.waiters.isEmpty ? [] : ["waiting \($0.waiters.count)"] },
    step: { logic, step in
      switch step {
      case .wait(let waiter, let cancelled):
        #expect(logic.makeToken() == waiter, "tokens count up", sourceLocation: sourceLocation)
        return logic.wait(NumberedWaiter(waiter), token: waiter, isCancelled: cancelled).map { "goes on \($0)" } ?? "waits"
      case .cancelWaiter(let waiter):
        return logic.waiterCancelled(token: waiter).map { "releases [\($0)]" } ?? "nothing"
      case .bodyEnded(let failure):
        _ = logic.inputEnded(failure.map { TestError(id: $0) }, from: 0, at: TimelessClock.Instant())
        return "ended\(released(logic.takeWaiters()))"
      case .retire:
        return "retired\(released(logic.retire()))"
      }
    }, sourceLocation: sourceLocation)
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

  /// The consumer left while emitters waited for room: the retired logic hands them out, and the
  /// storage resumes them after the lock (they find the iteration over). Without it they would wait
  /// forever.
  @Test func retiringTheLogicLetsEveryWaitingEmitterGo() {
    check(
      bufferSize: 0,
      [
        (.emit(1), "kept output"),
        (.wait(0), "waits output waiting 1"),
        (.wait(1), "waits output waiting 2"),
        (.retire, "retired releases [0, 1] output"),
      ])
  }
}
