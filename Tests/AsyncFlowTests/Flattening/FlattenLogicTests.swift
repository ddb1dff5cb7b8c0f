import Testing

@testable import AsyncFlow

/// One event given to a ``FlattenLogic`` in a table: the events the ``FlattenStateMachine``
/// reports, with inners named by id and key.
enum FlattenLogicEvent: CustomStringConvertible {
  case outer(key: Int = 0)
  case started(Int, key: Int = 0)
  case offered(Int)
  case caughtUp(Int)
  case batchDelivered
  case workEnded(Int, key: Int = 0)
  case turnEnded(Int, key: Int = 0)

  var description: String {
    switch self {
    case .outer(let key): "outer element of key \(key)"
    case .started(let id, let key): "inner \(id) of key \(key) started"
    case .offered(let id): "inner \(id) offered"
    case .caughtUp(let id): "consumer caught up with inner \(id)"
    case .batchDelivered: "batch delivered"
    case .workEnded(let id, let key): "inner \(id) of key \(key) ended with elements waiting"
    case .turnEnded(let id, let key): "inner \(id) of key \(key) left its turn"
    }
  }
}

/// Runs `table` through `logic`, a plain value: each row is an event and what follows it, as text:
/// the event's answer (`start`, `supersede 3`, `hold`, `drop`; `freed` or `nothing` for a delivered
/// batch; `keeps turn` or `turn ends` for an inner's end), then whether the outer is wanted
/// (`wants`) and whether no inner holds a turn (`idle`).
func checkFlattenLogic<Logic: FlattenLogic<Int>>(
  _ logic: Logic, _ table: [(FlattenLogicEvent, String)], sourceLocation: SourceLocation = #_sourceLocation
) {
  var logic = logic
  for (row, (event, expected)) in table.enumerated() {
    var answer: [String] = []
    switch event {
    case .outer(let key):
      switch logic.outerElement(key: key) {
      case .start: answer.append("start")
      case .supersede(let id): answer.append("supersede \(id)")
      case .hold: answer.append("hold")
      case .drop: answer.append("drop")
      }
    case .started(let id, let key): logic.innerStarted(id, key: key)
    case .offered(let id): logic.offered(id)
    case .caughtUp(let id): logic.caughtUp(id)
    case .batchDelivered: answer.append(logic.batchDelivered() ? "freed" : "nothing")
    case .workEnded(let id, let key): answer.append(logic.workEnded(id, key: key) ? "keeps turn" : "turn ends")
    case .turnEnded(let id, let key): logic.turnEnded(id, key: key)
    }
    if logic.wantsOuter { answer.append("wants") }
    if logic.isIdle { answer.append("idle") }
    #expect(
      answer.joined(separator: " ") == expected, "row \(row): \(event)", sourceLocation: sourceLocation)
  }
}

@Suite("FlattenLogic", .hangGuard)
struct FlattenLogicTests {
  // MARK: switchToLatestFlow

  @Test func switch_aNewElementSupersedesTheCurrentInner() {
    checkFlattenLogic(
      FlattenSwitchLogic<Int>(),
      [
        (.outer(), "start wants idle"),
        (.started(0), "wants"),
        (.outer(), "supersede 0 wants"),
        // The machine supersedes 0 (or hands its unbegun task the new element) and starts 1.
        (.turnEnded(0), "wants idle"),
        (.started(1), "wants"),
        // An ended inner whose elements wait is still current: a newer element drops them.
        (.workEnded(1), "keeps turn wants"),
        (.outer(), "supersede 1 wants"),
        (.turnEnded(1), "wants idle"),
      ])
  }

  @Test func switch_countsNoBacklog() {
    // However far behind the consumer is, the outer is wanted: one inner runs at a time.
    checkFlattenLogic(
      FlattenSwitchLogic<Int>(),
      [
        (.started(0), "wants"),
        (.offered(0), "wants"),
        (.caughtUp(0), "wants"),
        (.batchDelivered, "nothing wants"),
      ])
  }

  // MARK: switchToLatestFlow(by:)

  @Test func keyedSwitch_supersedesOnlyTheInnerOfItsKey() {
    checkFlattenLogic(
      FlattenSwitchLogic<Int>(),
      [
        (.outer(key: 1), "start wants idle"),
        (.started(0, key: 1), "wants"),
        (.outer(key: 2), "start wants"),
        (.started(1, key: 2), "wants"),
        (.outer(key: 1), "supersede 0 wants"),
        (.turnEnded(0, key: 1), "wants"),
        (.started(2, key: 1), "wants"),
        (.turnEnded(1, key: 2), "wants"),
        (.turnEnded(2, key: 1), "wants idle"),
      ])
  }

  @Test func keyedSwitch_runsAnInnerForEveryKeyAtOnce() {
    // A list loads every row it shows: no bound across keys.
    var table: [(FlattenLogicEvent, String)] = []
    for key in 0..<(FlattenBacklog.defaultLimit * 2) {
      table.append((.outer(key: key), key == 0 ? "start wants idle" : "start wants"))
      table.append((.started(key, key: key), "wants"))
    }
    checkFlattenLogic(FlattenSwitchLogic<Int>(), table)
  }

  // MARK: mergeFlow

  @Test func merge_holdsAnElementWhileEverySlotIsBusy() {
    checkFlattenLogic(
      FlattenMergeLogic<Int>(maxConcurrent: 2),
      [
        (.outer(), "start wants idle"),
        (.started(0), "wants"),
        (.outer(), "start wants"),
        (.started(1), ""),
        (.outer(), "hold"),
        // An ended inner holds its slot until the consumer took its last element.
        (.workEnded(0), "keeps turn"),
        (.turnEnded(0), "wants"),
        (.outer(), "start wants"),
        (.started(2), ""),
        (.turnEnded(1), "wants"),
        (.turnEnded(2), "wants idle"),
      ])
  }

  @Test func merge_aStalledConsumerStopsTheOuterOnceItIsBehindTheLimit() {
    var table: [(FlattenLogicEvent, String)] = []
    for id in 0..<FlattenBacklog.defaultLimit {
      table.append((.started(id), id < FlattenBacklog.defaultLimit - 1 ? "wants" : ""))
    }
    table += [
      (.outer(), "hold"),
      // Caught up with one: its elements are in the consumer's batch, which still counts.
      (.caughtUp(0), ""),
      (.batchDelivered, "freed wants"),
      // It offers again: the consumer is behind it again.
      (.offered(0), ""),
      (.caughtUp(0), ""),
      (.batchDelivered, "freed wants"),
      (.batchDelivered, "nothing wants"),
      // One that leaves is no longer behind.
      (.offered(0), ""),
      (.turnEnded(1), "wants"),
    ]
    checkFlattenLogic(FlattenMergeLogic<Int>(maxConcurrent: .max), table)
  }

  @Test func merge_anExplicitLimitAboveTheDefaultRunsThatMany() {
    var table: [(FlattenLogicEvent, String)] = []
    for id in 0..<20 { table.append((.started(id), id < 19 ? "wants" : "")) }
    table.append((.outer(), "hold"))
    checkFlattenLogic(FlattenMergeLogic<Int>(maxConcurrent: 20), table)
  }

  // MARK: concatFlow (mergeFlow with maxConcurrent 1)

  @Test func concat_runsOneInnerAtATimeInTheOuterOrder() {
    checkFlattenLogic(
      FlattenMergeLogic<Int>(maxConcurrent: 1),
      [
        (.outer(), "start wants idle"),
        (.started(0), ""),
        (.outer(), "hold"),
        (.offered(0), ""),
        // Its work ended, its elements wait: the next inner starts only once they are taken.
        (.workEnded(0), "keeps turn"),
        (.caughtUp(0), ""),
        (.turnEnded(0), "wants idle"),
        (.started(1), ""),
        (.turnEnded(1), "wants idle"),
      ])
  }

  // MARK: exhaustFlow

  @Test func exhaust_dropsWhatComesWhileAnInnerRuns() {
    checkFlattenLogic(
      FlattenExhaustLogic<Int>(),
      [
        (.outer(), "start wants idle"),
        (.started(0), "wants"),
        (.outer(), "drop wants"),
        (.turnEnded(0), "wants idle"),
        (.outer(), "start wants idle"),
        (.started(1), "wants"),
        // Its turn ends with its work, while its elements still wait for the consumer.
        (.offered(1), "wants"),
        (.workEnded(1), "turn ends wants idle"),
        (.outer(), "start wants idle"),
        (.started(2), "wants"),
        // An inner that is not the current one leaves its turn: the current one keeps it.
        (.turnEnded(1), "wants"),
        (.outer(), "drop wants"),
      ])
  }

  @Test func exhaust_dropsWhatComesWhileTheConsumerIsBehindTheLimit() {
    var table: [(FlattenLogicEvent, String)] = []
    for id in 0..<FlattenBacklog.defaultLimit {
      table += [(.started(id), "wants"), (.offered(id), "wants"), (.workEnded(id), "turn ends wants idle")]
    }
    table += [
      (.outer(), "drop wants idle"),
      (.caughtUp(0), "wants idle"),
      (.outer(), "drop wants idle"),  // its elements are in the consumer's batch: they count
      (.batchDelivered, "freed wants idle"),
      (.outer(), "start wants idle"),
    ]
    checkFlattenLogic(FlattenExhaustLogic<Int>(), table)
  }
}
