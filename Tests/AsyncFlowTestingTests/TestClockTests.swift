import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

private final class Log: Sendable {
  private let entries = LockedState<[String]>([])
  func append(_ entry: String) { entries.withLock { $0.append(entry) } }
  var all: [String] { entries.withLock { $0 } }
}

@Suite("TestClock", .timeLimit(.minutes(1)))
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

  @Test func deterministicAcrossManyRuns() async {
    for _ in 0..<200 {
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
      #expect(
        log.all == [
          // Equal deadlines fire in registration order: 1.1 slept before 0.2 did.
          "0.1@1", "1.1@2", "0.2@2", "2.1@3", "0.3@3", "3.1@4", "1.2@4", "2.2@6", "1.3@6", "3.2@8", "2.3@9",
          "3.3@12",
        ])
      #expect(clock.pendingSleepers == 0)
    }
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
    #expect(await sleeper.value)
    #expect(clock.pendingSleepers == 0)
    #expect(clock.now == .init(offset: .zero))
  }

  @Test func sleepUntilThePastReturnsAtOnce() async throws {
    let clock = TestClock()
    await clock.advance(by: .seconds(1))
    try await clock.sleep(until: .init(offset: .zero))
    #expect(clock.pendingSleepers == 0)
  }

  @Test func advanceByNegativeDurationIsAProgrammerError() async {
    await #expect(processExitsWith: .failure) {
      await TestClock().advance(by: .seconds(-1))
    }
  }
}
