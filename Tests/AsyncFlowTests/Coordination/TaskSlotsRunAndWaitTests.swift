import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `runAndWait`: a run its caller awaits, with the caller's cancellation passed on. Real threads,
/// no test clock: the runs' tasks are the app's. Each test forces its order with gates and
/// signals, so the order each asserts is the only one possible.
@Suite("TaskSlots.runAndWait", .hangGuard)
struct TaskSlotsRunAndWaitTests {
  private struct Offline: Error, Equatable {}

  @Test func returnsWhenItsRunHasEnded() async {
    let slots = TaskSlots<String>()
    let log = EventLog<String>()
    let refresh = Task {
      await slots.runAndWait("feed") {
        await Task.yield()
        log.append("written")
      }
      log.append("returned")
    }
    await bounded(refresh, "the refresh")
    #expect(log.all == ["written", "returned"])
    #expect(slots.runningCount == 0)
  }

  /// The screen leaves during the await: the run is cancelled, and the caller returns once the
  /// run has ended (its cleanup done), not at once.
  @Test func aCancelledCallerCancelsItsRunAndReturnsWhenTheRunHasEnded() async {
    let slots = TaskSlots<String>()
    let request = Gate()
    let cleanup = Signal()
    let log = EventLog<String>()
    let refresh = Task {
      await slots.runAndWait("feed") {
        await request.wait()  // returns once cancelled
        log.append("run cancelled: \(Task.isCancelled)")
        await cleanup.wait()  // cleanup that outlives the cancellation
        log.append("run ended")
      }
      log.append("returned")
    }
    await request.entered()
    refresh.cancel()
    #expect(await Reentry.eventually { log.all == ["run cancelled: true"] })
    cleanup.fire()
    await bounded(refresh, "the refresh")
    #expect(log.all == ["run cancelled: true", "run ended", "returned"])
  }

  /// A caller already cancelled when it calls: the run never begins, and the call returns.
  @Test func aCallerCancelledBeforeTheCallRunsNothing() async {
    let slots = TaskSlots<String>()
    let began = LockedState(false)
    await inCancelledTask { await slots.runAndWait("feed") { began.withLock { $0 = true } } }
    #expect(!began.withLock { $0 })
    #expect(slots.runningCount == 0)
  }

  /// The same, 300 times on real threads: the run's task starts on another thread at once and does
  /// not inherit its caller's cancellation, so unless the call checks before registering, the
  /// operation may begin before the caller's cancellation handler reaches it (once in two
  /// ThreadSanitizer runs of the whole suite; 300 rounds here make it show without the check).
  @Test func aCallerCancelledBeforeTheCallRunsNothingOnRealThreads() async {
    let slots = TaskSlots<Int>()
    let began = LockedState(0)
    for round in 0..<300 where !Task.isCancelled {
      await inCancelledTask { await slots.runAndWait(round) { began.withLock { $0 += 1 } } }
    }
    #expect(began.withLock { $0 } == 0)
    #expect(slots.runningCount == 0)
  }

  /// A cancelled caller changes nothing: the run in flight is not superseded and writes.
  @Test func aCallerCancelledBeforeTheCallLeavesTheRunInFlight() async {
    let slots = TaskSlots<String>()
    let request = Gate()
    let log = EventLog<String>()
    let inFlight = slots.run("feed") {
      await request.wait()
      log.append("in flight cancelled: \(Task.isCancelled)")
    }
    await request.entered()
    let answer = await inCancelledTask { await slots.runAndWait("feed") { () -> Int in log.append("began"); return 1 } }
    #expect(answer == .some(nil))
    request.release()
    await bounded(run: inFlight, "the run in flight")
    #expect(log.all == ["in flight cancelled: false"])
  }

  /// Two pulls: the first caller returns when its superseded run has ended; the second's run goes
  /// on and writes.
  @Test func aSupersededCallerReturnsWhenItsRunHasEnded() async {
    let slots = TaskSlots<String>()
    let request = Gate()
    let log = EventLog<String>()
    let first = Task {
      await slots.runAndWait("feed") {
        await request.wait()
        log.append("first cancelled: \(Task.isCancelled)")
      }
      log.append("first returned")
    }
    await request.entered()
    let second = Task {
      await slots.runAndWait("feed") {
        await request.wait()
        log.append("second cancelled: \(Task.isCancelled)")
      }
      log.append("second returned")
    }
    await bounded(first, "the first refresh")
    #expect(log.all == ["first cancelled: true", "first returned"])
    await request.entered()
    request.release()
    await bounded(second, "the second refresh")
    #expect(log.all == ["first cancelled: true", "first returned", "second cancelled: false", "second returned"])
  }

  /// `firstWins` joins the run in flight: nothing starts, and the call returns when that run ends.
  @Test func anIgnoredFirstWinsCallWaitsForTheRunInFlight() async {
    let slots = TaskSlots<String>()
    let request = Gate()
    let log = EventLog<String>()
    let first = slots.run("submit", policy: .firstWins) {
      await request.wait()
      log.append("first ended")
    }
    await request.entered()
    let joined = Task {
      await slots.runAndWait("submit", policy: .firstWins) { log.append("second began") }
      log.append("joined returned")
    }
    #expect(await Reentry.eventually { slots.storage.state.withLock { $0.slots["submit"]?.joiners.isEmpty == false } })
    #expect(log.all.isEmpty)
    request.release()
    await bounded(joined, "the joined call")
    await bounded(run: first)
    #expect(log.all == ["first ended", "joined returned"])
  }

  /// A joined caller's cancellation returns at once and leaves the run it joined alone: the run
  /// is not its own.
  @Test func aCancelledJoinedCallerReturnsAtOnceAndLeavesTheRunInFlight() async {
    let slots = TaskSlots<String>()
    let request = Gate()
    let first = slots.run("submit", policy: .firstWins) { await request.wait() }!
    await request.entered()
    let joined = Task { await slots.runAndWait("submit", policy: .firstWins) {} }
    #expect(await Reentry.eventually { slots.storage.state.withLock { $0.slots["submit"]?.joiners.isEmpty == false } })
    joined.cancel()
    await bounded(joined, "the joined call")
    #expect(!first.isCancelled)
    #expect(slots.isRunning("submit"))
    request.release()
    await bounded(first, "the run in flight")
  }

  /// `queue` waits for its own run, after the one before it.
  @Test func aQueuedCallerWaitsForItsOwnRun() async {
    let slots = TaskSlots<String>()
    let request = Gate()
    let log = EventLog<String>()
    let first = slots.run("save", policy: .queue) {
      await request.wait()
      log.append("first ended")
    }
    await request.entered()
    let queued = Task {
      await slots.runAndWait("save", policy: .queue) { log.append("second ran") }
      log.append("second returned")
    }
    #expect(await Reentry.eventually { slots.runningCount == 2 })
    request.release()
    await bounded(queued, "the queued call")
    await bounded(run: first)
    #expect(log.all == ["first ended", "second ran", "second returned"])
  }

  /// A queued caller's cancellation drops its run from the queue: the call returns while the run
  /// before it still runs, and its operation never runs.
  @Test func aCancelledQueuedCallerLeavesTheQueueAtOnce() async {
    let slots = TaskSlots<String>()
    let request = Gate()
    let ran = LockedState(false)
    let first = slots.run("save", policy: .queue) { await request.wait() }!
    await request.entered()
    let queued = Task { await slots.runAndWait("save", policy: .queue) { ran.withLock { $0 = true } } }
    #expect(await Reentry.eventually { slots.runningCount == 2 })
    queued.cancel()
    await bounded(queued, "the queued call")
    #expect(slots.runningCount == 1)
    #expect(!first.isCancelled)
    request.release()
    await bounded(first, "the run before it")
    #expect(!ran.withLock { $0 })
  }

  /// A throwing operation's typed failure reaches the caller; the non-throwing form needs no `try`.
  @Test func aThrowingOperationsFailureReachesItsCaller() async {
    let slots = TaskSlots<String>()
    let saved = Task { () async -> Offline? in
      do throws(Offline) {
        try await slots.runAndWait("save") { () throws(Offline) in throw Offline() }
        return nil
      } catch {
        return error
      }
    }
    #expect(await bounded(saved, "the save") == Offline())
    let untyped = Task { () async -> Bool in
      do {
        try await slots.runAndWait("save") { throw Offline() }
        return false
      } catch {
        return error is Offline
      }
    }
    #expect(await bounded(untyped, "the untyped save") == true)
  }

  /// A superseded run's failure (the cancellation its request threw) reaches no one: its caller
  /// gets `nil`, and the run that superseded it its own value.
  @Test func aSupersededRunsFailureReachesNoOne() async {
    let slots = TaskSlots<String>()
    let request = Gate()
    let first = Task { () async -> String in
      do {
        let page = try await slots.runAndWait("feed") { () async throws -> String in
          await request.wait()
          try Task.checkCancellation()
          return "old"
        }
        return page ?? "nil"
      } catch {
        return "threw \(error)"
      }
    }
    await request.entered()
    let second = Task { try? await slots.runAndWait("feed") { () async throws -> String in "new" } }
    #expect(await bounded(first, "the first refresh") == "nil")
    #expect(await bounded(second, "the second refresh") == .some("new"))
  }

  @Test func returnsTheOperationsValue() async {
    let slots = TaskSlots<String>()
    let page = Task { await slots.runAndWait("feed") { @MainActor in [1, 2] } }
    #expect(await bounded(page, "the load") == .some([1, 2]))
  }

  /// Cancelled, a run that returns anyway (a request on the wire answers) gives its caller `nil`.
  @Test func aCancelledCallerGetsNilThoughItsOperationReturned() async {
    let slots = TaskSlots<String>()
    let request = Gate()
    let load = Task {
      await slots.runAndWait("feed") { () async -> String in
        await request.wait()  // returns once cancelled
        return "late"
      }
    }
    await request.entered()
    load.cancel()
    #expect(await bounded(load, "the load") == .some(nil))
  }

  /// A joined `firstWins` caller gets `nil`: the value of the run it joined is that run's caller's.
  @Test func aJoinedFirstWinsCallerGetsNil() async {
    let slots = TaskSlots<String>()
    let request = Gate()
    let first = Task {
      await slots.runAndWait("submit", policy: .firstWins) { () async -> Int in
        await request.wait()
        return 1
      }
    }
    await request.entered()
    let joined = Task { await slots.runAndWait("submit", policy: .firstWins) { () async -> Int in 2 } }
    #expect(await Reentry.eventually { slots.storage.state.withLock { $0.slots["submit"]?.joiners.isEmpty == false } })
    request.release()
    #expect(await bounded(first, "the first submit") == .some(1))
    #expect(await bounded(joined, "the joined call") == .some(nil))
  }
}

/// The same promises on the test clock, with a main-actor model's stub.
@Suite("TaskSlots.runAndWait on the clock", .onTestClock, .hangGuard)
@MainActor
struct TaskSlotsRunAndWaitOnClockTests {
  @Test func aSupersededPullReturnsWhenItsRunHasEndedAndWritesNothing() async {
    let clock = TestClock.current
    let pages = ControlledCalls<Int, [String]>()
    let slots = TaskSlots<String>()
    let shown = LockedState<[String]>([])
    func refresh(_ pull: Int) -> Task<Void, Never> {
      clock.task {
        await slots.runAndWait("feed") { @MainActor in
          let page = await pages.call(pull)
          guard !Task.isCancelled else { return }
          shown.withLock { $0 = page }
        }
      }
    }
    let first = refresh(1)
    await pages.calls(count: 1)
    let second = refresh(2)
    await pages.calls(count: 2)
    pages.respond(to: 2, with: ["new"])
    #expect(await clock.value(of: second) != nil)
    pages.respond(to: 1, with: ["old"])
    #expect(await clock.value(of: first) != nil)
    #expect(shown.withLock { $0 } == ["new"])
  }
}
