import AsyncFlow
import AsyncFlowTesting
import Testing

/// The request log, read as a user reads it: what happened to which run, in order.
@Suite("RequestLog", .hangGuard)
struct RequestLogTests {
  typealias Entry = RequestLog<String>.Entry

  @Test func theLogTellsThatRefreshSupersededLoadNumberThree() async {
    let log = RequestLog<String>()
    let slots = TaskSlots<String>(log: log)
    let gate = Gate()
    await bounded(run: slots.run("articles", trigger: "appear") {})  // #1
    await bounded(run: slots.run("articles", trigger: "category") {})  // #2
    let load = slots.run("articles", trigger: "load") { await gate.wait() }  // #3, returns once cancelled
    await gate.entered()
    let refresh = slots.run("articles", trigger: "refresh") { run in #expect(run.number == 4) }  // #4
    await bounded(run: load, "load")
    await bounded(run: refresh, "refresh")

    // "refresh superseded load #3"
    let superseding = log.entries.first { $0.run == 3 && $0.event != .started && $0.event != .cancelled }
    guard case .superseded(let successor)? = superseding?.event else {
      Issue.record("run #3 was not superseded: \(log)")
      return
    }
    #expect(superseding?.trigger == "load")
    #expect(log.entries.first { $0.run == successor }?.trigger == "refresh")
    #expect(log.entries(ofRun: 3).map(\.event) == [.started, .superseded(by: 4), .cancelled])
    #expect(log.entries(ofRun: 4).map(\.event) == [.started, .finished])
    #expect(log.description.contains("#3 articles [load] superseded by #4"))
    // In the order it happened: the old run leaves before its successor starts.
    let order = log.entries.map(\.description)
    #expect(
      order.firstIndex(of: "#3 articles [load] superseded by #4")! < order.firstIndex(
        of: "#4 articles [refresh] started")!)
    #expect(
      Array(order.prefix(4)) == [
        "#1 articles [appear] started", "#1 articles [appear] finished",
        "#2 articles [category] started", "#2 articles [category] finished",
      ])
  }

  @Test func everyPolicyReportsItsOutcomeThenExactlyOneEnd() async {
    let log = RequestLog<String>()
    let slots = TaskSlots<String>(log: log)
    let gate = Gate()
    let submit = slots.run("submit", policy: .firstWins, trigger: "tap") { await gate.wait() }  // #1
    await gate.entered()
    #expect(slots.run("submit", policy: .firstWins, trigger: "double tap") {} == nil)  // #2
    gate.release()
    await bounded(run: submit, "submit")
    let first = slots.run("save", policy: .queue) { await gate.wait() }  // #3
    await gate.entered()
    let second = slots.run("save", policy: .queue, trigger: "autosave") {}  // #4
    gate.release()
    await bounded(run: first, "first")
    await bounded(run: second, "second")
    let dropped = slots.run("save", policy: .queue) { await gate.wait() }  // #5
    await gate.entered()
    let never = slots.run("save", policy: .queue) {}  // #6, dropped by the cancel
    slots.cancel("save")
    await bounded(run: dropped, "dropped")
    await bounded(run: never, "never")

    #expect(log.entries(ofRun: 1).map(\.event) == [.started, .finished])
    #expect(log.entries(ofRun: 2) == [Entry(run: 2, id: "submit", trigger: "double tap", event: .ignored)])
    #expect(log.entries(ofRun: 4).map(\.event) == [.queued, .started, .finished])
    #expect(log.entries(ofRun: 5).map(\.event) == [.started, .cancelled])
    #expect(log.entries(ofRun: 6).map(\.event) == [.queued, .cancelled])
    for run in [1, 3, 4, 5, 6] {
      let ends = log.entries(ofRun: run).filter { $0.event == .finished || $0.event == .cancelled }
      #expect(ends.count == 1, "run #\(run)")
    }
  }

  @Test func aSingleFlightReportsJoinsToTheSameLog() async {
    let log = RequestLog<String>()
    let slots = TaskSlots<String>(log: log)
    let flight = SingleFlight<String, String, Never>(log: log)
    let gate = Gate()
    await bounded(run: slots.run("feed") {})  // #1: numbers are shared by everything writing to the log
    let first = Task {
      await flight.run("token", trigger: "401 /feed") {
        await gate.wait()
        return "t"
      }
    }  // #2
    await gate.entered()
    let joiner = Task { await flight.run("token", trigger: "401 /profile") { "unused" } }  // #3
    #expect(await Reentry.eventually { log.entries.count == 4 })  // the joiner joined
    gate.release()
    #expect(await bounded(first, "first") == "t")
    #expect(await bounded(joiner, "joiner") == "t")
    #expect(log.entries(ofRun: 2).map(\.event) == [.started, .finished])
    #expect(log.entries(ofRun: 3) == [Entry(run: 3, id: "token", trigger: "401 /profile", event: .joined(run: 2))])
  }

  @Test func aSingleFlightRunThatEveryCallerLeftIsReportedCancelled() async {
    let log = RequestLog<String>()
    let flight = SingleFlight<String, Int, Never>(log: log)
    let calls = ControlledCalls<Int, Int>()
    let caller = Task { await flight.run("token") { await calls.call(0) } }
    await calls.parked(count: 1)
    caller.cancel()
    #expect(await bounded(caller, "caller") == .some(nil))
    calls.respond(toCall: 0, with: 1)
    #expect(await Reentry.eventually { log.entries.count == 2 })
    #expect(log.entries(ofRun: 1).map(\.event) == [.started, .cancelled])
  }

  /// A failure is recorded as a failure, from `run`, `runAndWait` and `SingleFlight`; a superseded
  /// run's failure is its cancellation, recorded as `cancelled`.
  @Test func aRunThatThrowsIsReportedFailed() async {
    struct Offline: Error {}
    let log = RequestLog<String>()
    let slots = TaskSlots<String>(log: log)
    let flight = SingleFlight<String, Int, Offline>(log: log)
    await bounded(run: slots.run("save", trigger: "tap") { throw Offline() })  // #1
    let waited = Task { () async -> Bool in
      do { try await slots.runAndWait("save") { () throws(Offline) in throw Offline() } } catch { return true }  // #2
      return false
    }
    #expect(await bounded(waited, "runAndWait") == true)
    let flown = Task { () async -> Bool in
      // #3
      do { _ = try await flight.run("token") { () throws(Offline) -> Int in throw Offline() } } catch { return true }
      return false
    }
    #expect(await bounded(flown, "SingleFlight.run") == true)
    let gate = Gate()
    let superseded = slots.run("load") {  // #4
      await gate.wait()  // returns once cancelled
      throw Offline()
    }
    await gate.entered()
    await bounded(run: slots.run("load") {})  // #5
    await bounded(run: superseded, "superseded")
    #expect(log.entries(ofRun: 1).map(\.event) == [.started, .failed])
    #expect(log.entries(ofRun: 2).map(\.event) == [.started, .failed])
    #expect(log.entries(ofRun: 3).map(\.event) == [.started, .failed])
    #expect(log.entries(ofRun: 4).map(\.event) == [.started, .superseded(by: 5), .cancelled])
    #expect(log.entries(ofRun: 1).last?.description == "#1 save [tap] failed")
  }

  @Test func theLogKeepsTheLastEntriesOnly() async {
    let log = RequestLog<String>(capacity: 3)
    let slots = TaskSlots<String>(log: log)
    for _ in 0..<3 { await bounded(run: slots.run("id") {}) }
    #expect(log.entries.map(\.description) == ["#2 id finished", "#3 id started", "#3 id finished"])
  }

  @Test func aCapacityBelowOneIsAProgrammerError() async {
    await #expect(processExitsWith: .failure) {
      _ = RequestLog<String>(capacity: 0)
    }
  }

  @Test func withoutALogRunsAreStillNumberedFromOne() async {
    let slots = TaskSlots<String>()
    let numbers = EventLog<Int>()
    for _ in 0..<2 { await bounded(run: slots.run("id") { run in numbers.append(run.number) }) }
    #expect(numbers.all == [1, 2])
  }
}
