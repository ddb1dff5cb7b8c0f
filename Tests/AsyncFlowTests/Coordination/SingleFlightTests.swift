import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `SingleFlight` through its public API: joining, failures, cancellation, priority, the test
/// clock, lifetimes and re-entrant release.
@Suite("SingleFlight", .hangGuard)
struct SingleFlightTests {
  typealias Refresh = ControlledCalls<Int, Result<String, TestError>>

  /// `count` callers on the clock, each with its own operation that calls `calls` with its index;
  /// `called` counts the operations that ran.
  private func callers(
    _ count: Int, flight: SingleFlight<String, String, TestError>, calls: Refresh, clock: TestClock,
    called: LockedCounter
  ) -> [Task<Result<String?, TestError>, Never>] {
    (0..<count).map { index in
      clock.task {
        do throws(TestError) {
          return .success(
            try await flight.run("token") { () throws(TestError) -> String in
              called.increment()
              return try await calls.call(index).get()
            })
        } catch {
          return .failure(error)
        }
      }
    }
  }

  @Test func fiveCallersShareOneRunAndItsResult() async throws {
    let flight = SingleFlight<String, String, TestError>()
    let calls = Refresh()
    let clock = TestClock()
    let called = LockedCounter()
    let tasks = callers(5, flight: flight, calls: calls, clock: clock, called: called)
    await clock.runCurrent()
    #expect(calls.arguments.count == 1)  // one caller's operation, once
    #expect(flight.isRunning("token"))
    calls.respond(toCall: 0, with: .success("fresh"))
    for task in tasks { #expect(try await bounded(task, "task")?.get() == "fresh") }
    #expect(called.value == 1)
    #expect(!flight.isRunning("token"))
  }

  @Test func fiveCallersShareOneRunsFailure() async {
    let flight = SingleFlight<String, String, TestError>()
    let calls = Refresh()
    let clock = TestClock()
    let called = LockedCounter()
    let tasks = callers(5, flight: flight, calls: calls, clock: clock, called: called)
    await clock.runCurrent()
    calls.fail(call: 0, with: TestError(id: 401))
    for task in tasks {
      guard case .failure(let error)? = await bounded(task, "task") else {
        Issue.record("expected the run's failure")
        continue
      }
      #expect(error == TestError(id: 401))
    }
    #expect(called.value == 1)
  }

  /// The common case, an API that throws `any Error`: the closure needs no annotation.
  @Test func anUntypedFailureIsThrownToTheCaller() async {
    let flight = SingleFlight<String, Int, any Error>()
    let api: @Sendable () async throws -> Int = { throw TestError(id: 7) }
    do {
      _ = try await flight.run("id", operation: { try await api() })
      Issue.record("expected a failure")
    } catch {
      #expect(error as? TestError == TestError(id: 7))
    }
  }

  @Test func aRunThatEndedIsNotCached() async {
    let flight = SingleFlight<String, Int, Never>()
    let runs = LockedCounter()
    let first = await flight.run("id") { runs.increment() }
    let second = await flight.run("id") { runs.increment() }
    #expect(first == 1 && second == 2)
    #expect(runs.value == 2)
  }

  @Test func identitiesDoNotJoinEachOther() async {
    let flight = SingleFlight<Int, Int, Never>()
    let calls = ControlledCalls<Int, Int>()
    let clock = TestClock()
    let tasks = (0..<3).map { id in clock.task { await flight.run(id) { await calls.call(id) } } }
    await clock.runCurrent()
    #expect(Set(calls.arguments) == [0, 1, 2])
    for id in 0..<3 { calls.respond(to: id, with: id * 10) }
    for (id, task) in tasks.enumerated() { #expect(await bounded(task, "task") == id * 10) }
  }

  @Test func aCancelledCallerGetsNilAtOnceAndTheRunGoesOnForTheOthers() async throws {
    let flight = SingleFlight<String, String, TestError>()
    let calls = Refresh()
    let clock = TestClock()
    let called = LockedCounter()
    let tasks = callers(3, flight: flight, calls: calls, clock: clock, called: called)
    await clock.runCurrent()
    tasks[1].cancel()
    #expect(try await bounded(tasks[1], "tasks[1]")?.get() == nil)  // before the run has its result
    #expect(calls.log[0].wasCancelled == false)
    calls.respond(toCall: 0, with: .success("fresh"))
    #expect(try await bounded(tasks[0], "tasks[0]")?.get() == "fresh")
    #expect(try await bounded(tasks[2], "tasks[2]")?.get() == "fresh")
  }

  @Test func theFirstCallerCancelledLeavesTheRunToTheOthers() async throws {
    let flight = SingleFlight<String, String, TestError>()
    let calls = Refresh()
    let clock = TestClock()
    let called = LockedCounter()
    let tasks = callers(2, flight: flight, calls: calls, clock: clock, called: called)
    await clock.runCurrent()
    tasks[0].cancel()  // the caller whose operation runs
    #expect(try await bounded(tasks[0], "tasks[0]")?.get() == nil)
    calls.respond(toCall: 0, with: .success("fresh"))
    #expect(try await bounded(tasks[1], "tasks[1]")?.get() == "fresh")
    #expect(called.value == 1)
  }

  @Test func whenEveryCallerIsCancelledTheRunIsCancelledAndTheIdentityIsFreeAtOnce() async throws {
    let flight = SingleFlight<String, String, TestError>()
    let calls = Refresh()  // ignores cancellation, like a request on the wire
    let clock = TestClock()
    let called = LockedCounter()
    let tasks = callers(2, flight: flight, calls: calls, clock: clock, called: called)
    await clock.runCurrent()
    for task in tasks { task.cancel() }
    for task in tasks { #expect(try await bounded(task, "task")?.get() == nil) }
    #expect(!flight.isRunning("token"))  // free although the old call is still out
    await clock.runCurrent()
    #expect(calls.log[0].wasCancelled)
    #expect(!calls.log[0].isAnswered)
    let next = callers(1, flight: flight, calls: calls, clock: clock, called: called)
    await clock.runCurrent()
    #expect(calls.arguments == [0, 0])  // a new run, not the dying one
    calls.respond(toCall: 1, with: .success("new"))
    calls.respond(toCall: 0, with: .success("old"))  // the dying run's result reaches no one
    #expect(try await bounded(next[0], "next[0]")?.get() == "new")
  }

  @Test func aCallerCancelledBeforeItCallsStartsNothing() async {
    let flight = SingleFlight<String, Int, Never>()
    let runs = LockedCounter()
    let result = await inCancelledTask { await flight.run("id") { runs.increment() } }
    #expect(result.map { $0 == nil } == true)  // ended (not given up), with no value
    #expect(runs.value == 0)
    #expect(!flight.isRunning("id"))
  }

  @Test func theRunHasTheFirstCallersPriority() async {
    let log = RequestLog<String>()
    let flight = SingleFlight<String, TaskPriority, Never>(log: log)
    let gate = Gate()
    let first = Task(priority: .background) {
      await flight.run("id") {
        let priority = Task.currentPriority
        await gate.wait()
        return priority
      }
    }
    await gate.entered()
    let second = Task(priority: .high) { await flight.run("id") { .high } }
    #expect(await Reentry.eventually { log.entries.count == 2 })  // the second caller joined
    gate.release()
    guard let priority = await bounded(first, "first") else { return }
    #expect(priority == .background)
    #expect(await bounded(second, "second") == priority)
  }

  @Test func theRunIsEscalatedWhenAMoreUrgentCallerJoins() async {
    let log = RequestLog<String>()
    let flight = SingleFlight<String, [TaskPriority], Never>(log: log)
    let gate = Gate()
    let first = Task(priority: .background) {
      await flight.run("id") {
        let started = Task.currentPriority
        await gate.wait()
        return [started, Task.currentPriority]
      }
    }
    await gate.entered()
    let second = Task(priority: .high) { await flight.run("id") { [] } }
    #expect(await Reentry.eventually { log.entries.count == 2 })  // the second caller joined
    gate.release()
    guard let priorities = await bounded(first, "first") else { return }
    // Escalated, not restarted: the task began with the first caller's priority.
    #expect(priorities == [.background, .high])
    #expect(await bounded(second, "second") == priorities)
  }

  @Test func aWaitingCallersEscalationReachesTheRun() async {
    guard #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) else { return }
    let log = RequestLog<String>()
    let flight = SingleFlight<String, TaskPriority, Never>(log: log)
    let gate = Gate()
    let first = Task(priority: .background) {
      await flight.run("id") {
        await gate.wait()
        return Task.currentPriority
      }
    }
    await gate.entered()
    let second = Task(priority: .background) { await flight.run("id") { .background } }
    #expect(await Reentry.eventually { log.entries.count == 2 })  // the second caller waits too
    // As a `.high` task awaiting the second caller would: the caller waits on a continuation, so
    // only the flight can pass it on.
    second.escalatePriority(to: .high)
    gate.release()
    #expect(await bounded(first, "first") == .high)
    #expect(await bounded(second, "second") == .high)
  }

  @Test func aWaitingCallersEscalationReachesTheRun_onTheClock() async {
    guard #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) else { return }
    let flight = SingleFlight<String, [TaskPriority], Never>()
    let clock = TestClock()
    let callers = (0..<2).map { _ in
      clock.task {
        await flight.run("id") {
          let started = Task.currentPriority
          try? await clock.sleep(for: .seconds(5))
          return [started, Task.currentPriority]
        }
      }
    }
    await clock.runCurrent()
    #expect(clock.pendingSleepers == 1)  // one run sleeps, both callers wait for it
    let started = Task.currentPriority  // the clock's tasks inherit the test's
    callers[1].escalatePriority(to: .userInitiated)
    await clock.advance(by: .seconds(5))
    let results = await callers.asyncMap { await bounded($0, "caller") }
    #expect(results == [[started, .userInitiated], [started, .userInitiated]])
  }

  @Test func theRunFollowsATestClock() async {
    let flight = SingleFlight<String, String, Never>()
    let clock = TestClock()
    let tasks = (0..<3).map { index in
      clock.task {
        await flight.run("id") {
          try? await clock.sleep(for: .seconds(5))
          return "after 5 s (caller \(index))"
        }
      }
    }
    await clock.runCurrent()
    #expect(clock.pendingSleepers == 1)  // one run sleeps
    await clock.advance(by: .seconds(5))
    let results = Set(await tasks.asyncMap { await bounded($0, "caller") })
    #expect(results.count == 1)
    #expect(clock.pendingSleepers == 0)
  }

  // MARK: Lifetimes

  @Test func theOperationsCapturesAreFreedWhenItsCallersReturn() async {
    let log = RequestLog<String>()
    let flight = SingleFlight<String, Int, Never>(log: log)
    let gate = Gate()
    let freed = Reentry.Flag()
    let first = Task {
      // Owned by the operation alone, so that only the run can free it.
      _ = await flight.run("id") { [probe = ReleaseHook { freed.set() }] in
        _ = probe
        await gate.wait()
        return 1
      }
      return freed.isSet  // read as this caller returns
    }
    await gate.entered()
    let joiners = (0..<2).map { _ in
      Task { _ = await flight.run("id") { 2 } }
    }
    #expect(await Reentry.eventually { log.entries.count == 3 })  // both joined
    gate.release()
    #expect(await bounded(first, "first") == true)
    // A joiner may return before the first caller's frame lets go of the closure it passed (the
    // argument is the caller's until `run` returns): the captures are freed once every caller has.
    for joiner in joiners { await bounded(joiner, "joiner") }
    #expect(freed.isSet)
  }

  @Test func anAbandonedRunsCapturesAreFreedWhenItsOperationReturns() async throws {
    let flight = SingleFlight<String, String, TestError>()
    let calls = Refresh()
    let freed = Reentry.Flag()
    let caller = Task {
      try await flight.run("id") { [probe = ReleaseHook { freed.set() }] () throws(TestError) -> String in
        _ = probe
        return try await calls.call(0).get()
      }
    }
    await calls.parked(count: 1)
    caller.cancel()
    #expect(try await bounded(caller, "caller") == .some(nil))
    #expect(!freed.isSet)  // the request is still out: the run's task holds its operation
    calls.respond(toCall: 0, with: .success("late"))
    #expect(await Reentry.isSetSoon(freed))
  }

  @Test func theSingleFlightIsFreedWhenNoOneWaits() async {
    weak var weakFlight: SingleFlight<String, Int, Never>?
    do {
      let flight = SingleFlight<String, Int, Never>()
      weakFlight = flight
      #expect(await flight.run("id") { 1 } == 1)
    }
    #expect(weakFlight == nil)
  }

  // MARK: Re-entrant release

  @Test func resultsAndCapturesReleasedByTheRunMayCallBackIn() async {
    let flight = SingleFlight<String, ReleaseHook, TestError>()
    let called = Reentry.Flag()
    let freed = Reentry.Flag()
    do {
      let captured = ReleaseHook {
        _ = flight.isRunning("id")
        called.set()
      }
      let result = try? await flight.run("id") { [captured] in
        _ = captured
        return ReleaseHook {
          _ = flight.isRunning("id")
          freed.set()
        }
      }
      #expect(result != nil)
    }
    #expect(await Reentry.isSetSoon(called))
    #expect(await Reentry.isSetSoon(freed))
  }

  @Test func aFailureReleasedByTheRunMayCallBackIn() async {
    struct ProbeError: Error { let probe: ReleaseHook }
    let flight = SingleFlight<String, Int, ProbeError>()
    let called = Reentry.Flag()
    do {
      let result = try? await flight.run("id") { () throws(ProbeError) -> Int in
        throw ProbeError(
          probe: ReleaseHook {
            _ = flight.isRunning("id")
            called.set()
          })
      }
      #expect(result == nil)
    }
    #expect(await Reentry.isSetSoon(called))
  }

  /// The last caller's cancellation cancels the run's task, whose handlers run synchronously in
  /// that call: after the lock. The operation waits on a signal that cancellation does not end, so
  /// that a deadlocked cancellation blocks only its own thread, and the test fails instead of hanging.
  @Test func theRunsCancellationHandlerMayCallBackIn() async {
    let flight = SingleFlight<String, Int, Never>()
    let hold = Signal()
    let entered = Reentry.Flag()
    let called = Reentry.Flag()
    let cancelled = Reentry.Flag()
    let caller = Task {
      await flight.run("id") {
        await withTaskCancellationHandler {
          entered.set()
          await hold.wait()
        } onCancel: {
          _ = flight.isRunning("id")
          called.set()
        }
        return 1
      }
    }
    #expect(await Reentry.isSetSoon(entered))
    Reentry.onThread(setting: cancelled) { caller.cancel() }
    let unblocked = await Reentry.isSetSoon(cancelled)
    #expect(unblocked)
    #expect(called.isSet)
    guard unblocked else { return }  // the caller is never resumed: do not wait for it
    #expect(await bounded(caller, "caller") == .some(nil))
    hold.fire()
  }
}

/// A counter shared by tasks.
private final class LockedCounter: Sendable {
  private let count = LockedState(0)

  @discardableResult func increment() -> Int { count.withLock { $0 += 1; return $0 } }

  var value: Int { count.withLock { $0 } }
}

extension Sequence where Element: Sendable {
  fileprivate func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
    var results: [T] = []
    for element in self { results.append(await transform(element)) }
    return results
  }
}
