import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// The synchronous overload's closure is called from the drain, which runs on the closure's
/// isolation: it runs on that isolation, in order, and on the scheduling executor.
@Suite("sink on hot sources: the synchronous closure's isolation", .hangGuard)
struct SynchronousSinkIsolationTests {
  @Test func aClosureOnAnotherGlobalActorRunsOnItInOrder() async {
    let box = SinkTestActorBox()
    await sendOneToFiveHundred { subject, completed in
      let subscription = subject.sink { _ in
        completed.fire()
      } receiveValue: { @SinkTestActor value in
        SinkTestActor.preconditionIsolated("a synchronous @SinkTestActor sink ran off its actor")
        box.received.append(value)
      }
      #expect(SynchronousSinkTests.isSynchronous(subscription) == true)
      return subscription
    }
    #expect(await box.received == Array(1...500))
  }

  /// A nonisolated closure runs where the drain runs: on the test clock's executor, so that the
  /// values sent in the clock's scope are all delivered once `runCurrent()` returns.
  @Test func aNonisolatedClosureRunsOnTheSchedulingExecutor() async {
    let clock = TestClock()
    let subject = PassthroughFlow<Int, Never>()
    let log = SinkLog()
    let subscription = subject.sink { value in log.append(.value(value)) }
    #expect(SynchronousSinkTests.isSynchronous(subscription) == true)
    await clock.onSchedule {
      for value in 1...10 { subject.send(value) }
    }
    await clock.runCurrent()
    #expect(log.values == Array(1...10))
    withExtendedLifetime(subscription) {}
  }
}
