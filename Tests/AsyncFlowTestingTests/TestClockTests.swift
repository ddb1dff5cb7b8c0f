import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

private final class Log: Sendable {
  private let entries = LockedState<[String]>([])
  func append(_ entry: String) { entries.withLock { $0.append(entry) } }
  var all: [String] { entries.withLock { $0 } }
}

// Five minutes: under ThreadSanitizer on two cores its longest tests take most of one when idle.
@Suite("TestClock", .hangGuard)
struct TestClockTests {
  @Test func sleepersFireInDeadlineOrderAndWokenTasksRunBeforeLaterOnes() async throws {
    let clock = TestClock()
    let log = Log()
    clock.task {
      try? await clock.sleep(until: .init(offset: .seconds(1)))
      log.append("a@\(clock.now)")
      // Registered only after the first wake-up, yet earlier than b's deadline.
      try? await clock.sleep(until: .init(offset: .milliseconds(1500)))
      log.append("a'@\(clock.now)")
    }
    clock.task {
      try? await clock.sleep(until: .init(offset: .seconds(2)))
      log.append("b@\(clock.now)")
    }
    await clock.sleepers(count: 2)
    await clock.advance(by: .seconds(3))
    #expect(log.all == ["a@1.0 seconds", "a'@1.5 seconds", "b@2.0 seconds"])
    #expect(clock.now == .init(offset: .seconds(3)))
    #expect(clock.pendingSleepers == 0)
  }

  /// The first failing run (or the one the time limit cut) ends the test with one issue.
  @Test func deterministicAcrossManyRuns() async throws {
    for run in 0..<200 where !Task.isCancelled {
      let clock = TestClock()
      let log = Log()
      for index in 0..<4 {
        clock.task {
          for step in 1...3 {
            try? await clock.sleep(until: clock.now.advanced(by: .seconds(index + 1)))
            log.append("\(index).\(step)@\(clock.now.offset.components.seconds)")
          }
        }
      }
      await clock.sleepers(count: 4)
      await clock.run()
      try #require(!Task.isCancelled, "cut (by the time limit?) in run \(run)")
      try #require(
        log.all == [
          // Equal deadlines fire in registration order: 1.1 slept before 0.2 did.
          "0.1@1", "1.1@2", "0.2@2", "2.1@3", "0.3@3", "3.1@4", "1.2@4", "2.2@6", "1.3@6", "3.2@8", "2.3@9",
          "3.3@12",
        ], "run \(run)")
      try #require(clock.pendingSleepers == 0, "run \(run)")
    }
  }

  /// Thousands of sleepers registered in a scrambled order, a third of them cancelled before they
  /// fire: the rest fire in deadline order, equal deadlines in registration order.
  @Test func manySleepersFireInDeadlineThenRegistrationOrderAroundCancellations() async {
    let clock = TestClock()
    let log = Log()
    let count = 3_000
    var sleepers: [Task<Void, Never>] = []
    for index in 0..<count {
      let deadline = TestClock.Instant(offset: .seconds(1 + (index * 7_919) % 500))  // 6 sleepers per deadline
      sleepers.append(
        clock.task {
          do {
            try await clock.sleep(until: deadline)
            log.append("\(deadline.offset.components.seconds).\(index)")
          } catch {}
        })
      await clock.sleepers(count: index + 1)  // registered in this order, so ids follow `index`
    }
    for index in stride(from: 0, to: count, by: 3) { sleepers[index].cancel() }
    await clock.runCurrent()
    #expect(clock.pendingSleepers == count - (count + 2) / 3)
    await clock.run()
    let expected = (0..<count).filter { $0 % 3 != 0 }
      .map { (seconds: 1 + ($0 * 7_919) % 500, index: $0) }
      .sorted { ($0.seconds, $0.index) < ($1.seconds, $1.index) }
      .map { "\($0.seconds).\($0.index)" }
    #expect(log.all == expected)
    #expect(clock.pendingSleepers == 0)
  }

  @Test func cancelledSleepThrowsAndRemovesItsSleeperAtOnce() async {
    let clock = TestClock()
    let sleeper = clock.task { () -> Bool in
      do {
        try await clock.sleep(until: .init(offset: .seconds(5)))
        return false
      } catch {
        return error is CancellationError
      }
    }
    await clock.sleepers(count: 1)
    sleeper.cancel()
    #expect(await bounded(sleeper, "sleeper") == true)
    #expect(clock.pendingSleepers == 0)
    #expect(clock.now == .init(offset: .zero))
  }

  @Test func sleepUntilThePastReturnsAtOnce() async throws {
    let clock = TestClock()
    await clock.advance(by: .seconds(1))
    try await clock.sleep(until: .init(offset: .zero))
    #expect(clock.pendingSleepers == 0)
  }

  /// A task on the clock may drive it too (as a helper that records a diagram might): its own
  /// resumptions on the clock's executor do not keep the clock from settling.
  @Test func aTaskOnTheClockCanDriveIt() async {
    let clock = TestClock()
    let log = Log()
    clock.task {
      try? await clock.sleep(until: .init(offset: .seconds(1)))
      log.append("slept@\(clock.now)")
    }
    let driver = clock.task {
      await clock.sleepers(count: 1)
      await clock.runCurrent()
      await clock.advance(by: .seconds(2))
      await clock.run()
    }
    await bounded(driver, "driver")
    #expect(log.all == ["slept@1.0 seconds"])
    #expect(clock.now == .init(offset: .seconds(2)))
  }

  // MARK: A plain Task instead of clock.task

  /// The mistake: the code under test in `Task { }`. The clock wakes it but cannot wait for its
  /// second sleep: whether that sleep is registered before `run()` returns (then `run()` wakes the
  /// plain task again and reports it a second time) or after (then a test waiting for what follows
  /// would wait forever) depends on the global executor. The clock says so at least once, naming
  /// the fix.
  @Test func wakingATaskThatIsNotOnTheClockRecordsAnIssueNamingTheFix() async {
    let clock = TestClock()
    let plain = Task {
      try? await clock.sleep(until: .init(offset: .seconds(1)))
      try? await clock.sleep(until: .init(offset: .seconds(2)))  // like a retry's second backoff
    }
    await clock.sleepers(count: 1)
    await withKnownIssue {
      await clock.run()
    } matching: { issue in
      issue.comments.contains { $0.rawValue.contains("Start the code under test with `clock.task { }`") }
    }
    plain.cancel()  // its second sleep throws: nothing is left hanging
    await bounded(plain, "plain")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func wakingTasksOnTheClockRecordsNoIssue() async {
    let clock = TestClock()
    let onClock = clock.task {
      try? await clock.sleep(until: .init(offset: .seconds(1)))
      // A child task inherits the executor: still on the schedule.
      async let child: Void = { try? await clock.sleep(until: .init(offset: .seconds(2))) }()
      await child
    }
    await clock.sleepers(count: 1)
    await clock.run()
    await bounded(onClock, "onClock")
    #expect(clock.now == .init(offset: .seconds(2)))
  }

  // MARK: Every wait honours cancellation

  @Test func aCancelledSleepersWaitReturnsAtOnce() async {
    let clock = TestClock()
    // Off the clock's scope: it only waits, until cancelled.
    let parked = Task { await clock.sleepers(count: 5) }
    parked.cancel()
    await bounded(parked, "parked")
    // Cancelled before it waits.
    let early = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      await clock.sleepers(count: 5)
    }
    await bounded(early, "early")
    #expect(clock.pendingSleepers == 0)
  }

  /// `run()` and `advance` driven by a timer that never runs out of sleepers: the timer cancels
  /// the driver from its 50th tick on, so the cancellation lands while the driver is firing.
  @Test(arguments: [false, true]) func aCancelledRunOrAdvanceReturnsThoughSleepersNeverRunOut(advances: Bool) async {
    let clock = TestClock()
    let driver = LockedState<Task<Void, Never>?>(nil)
    let ticker = clock.task {
      var ticks = 0
      while !Task.isCancelled {
        try? await clock.sleep(until: clock.now.advanced(by: .seconds(1)))
        ticks += 1
        if ticks >= 50 { driver.withLock { $0 }?.cancel() }
      }
    }
    await clock.sleepers(count: 1)
    let task = Task {
      if advances { await clock.advance(by: .seconds(1_000_000_000)) } else { await clock.run() }
    }
    driver.withLock { $0 = task }
    await bounded(task, "task")
    #expect(clock.now >= .init(offset: .seconds(50)))
    #expect(clock.now < .init(offset: .seconds(1_000_000_000)))
    ticker.cancel()
    await bounded(ticker, "ticker")
  }

  @Test func aCancelledRunCurrentReturnsThoughTheExecutorNeverIdles() async {
    let clock = TestClock()
    let waiter = LockedState<Task<Void, Never>?>(nil)
    let spinner = clock.task {
      var spins = 0
      while !Task.isCancelled {  // always runnable: the executor is never idle
        await Task.yield()
        spins += 1
        if spins >= 50 { waiter.withLock { $0 }?.cancel() }
      }
    }
    let task = Task { await clock.runCurrent() }
    waiter.withLock { $0 = task }
    #expect(await bounded(task, "the cancelled runCurrent()") != nil)
    #expect(task.isCancelled)
    spinner.cancel()
    #expect(await bounded(spinner, "the cancelled spinner") != nil)
  }

  /// A task on a main-actor clock that is always runnable (a loop of `Task.yield()`) does not
  /// keep the main actor for as long as it runs: the clock's drain hands the actor back every few
  /// hundred jobs, so other main-actor work gets its turn while the loop still spins. (When one
  /// drain ran every job, such a loop held the main actor until it ended, and on an eager clock a
  /// pool thread: a full suite run on two cores hung with a spinner on one thread.)
  @Test @MainActor func anAlwaysRunnableTaskLetsOtherMainActorWorkRun() async {
    let clock = TestClock()
    let otherRan = LockedState(false)
    let spinner = clock.task {
      for _ in 0..<20_000 {
        if otherRan.withLock({ $0 }) { return true }
        await Task.yield()
      }
      return false
    }
    let other = Task { @MainActor in otherRan.withLock { $0 = true } }
    #expect(await bounded(spinner, "the spinner") == true, "other main-actor work waited until the spinner ended")
    await bounded(other, "the other main-actor work")
  }

  @Test func advanceByNegativeDurationIsAProgrammerError() async {
    await #expect(processExitsWith: .failure) {
      await TestClock().advance(by: .seconds(-1))
    }
  }
}
