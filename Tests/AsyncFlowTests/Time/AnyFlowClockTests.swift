import AsyncFlowTesting
import Testing

@testable import AsyncFlow

@Suite("AnyFlowClock", .hangGuard)
struct AnyFlowClockTests {
  /// A model that keeps its clock as an existential, as injected code often does.
  struct Model {
    let clock: any Clock<Duration>
    func debounced(_ text: Flow<String, Never>) -> AsyncDebounceFlowSequence<Flow<String, Never>, AnyFlowClock> {
      text.debounceFlow(for: .seconds(1), clock: AnyFlowClock(clock))
    }
  }

  @Test func anExistentialClockDrivesATimeOperatorOnTheTestClock() async {
    let clock = TestClock()
    let model = Model(clock: clock)
    let text = Flow<String, Never> { emitter in
      await emitter.emit("s")
      try? await clock.sleep(for: .milliseconds(500))
      await emitter.emit("sw")
      try? await clock.sleep(for: .seconds(5))
    }
    let seen = clock.task { await collect(model.debounced(text).prefix(1)).elements }
    await clock.advance(by: .milliseconds(1400))
    await clock.advance(by: .milliseconds(200))
    #expect(await bounded(seen, "seen") == ["sw"])
  }

  @Test func itsInstantsCountFromWhenItWasMade() async {
    let test = TestClock()
    await test.advance(by: .seconds(5))
    let clock = AnyFlowClock(test)
    #expect(clock.now.offset == .zero)
    let sleeper = test.task { try? await clock.sleep(until: clock.now.advanced(by: .seconds(2))) }
    await test.advance(by: .seconds(2))
    await bounded(sleeper, "sleeper")
    #expect(clock.now.offset == .seconds(2))
    #expect(clock.minimumResolution == test.minimumResolution)
  }
}
