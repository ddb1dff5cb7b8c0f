import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The Observation guide's search model, tested on the test clock: no sleeps, no polling, no
/// helper of our own; `runCurrent()` and `advance` wait for the main actor too.
@Suite("Observed search model", .onTestClock, .hangGuard)
@MainActor
struct ObservedSearchTests {
  typealias Answer = Result<[String], SearchServiceError>

  /// A model whose searches wait for the test's answer.
  private func makeModel(_ clock: TestClock) async -> (ObservedSearchModel, ControlledCalls<String, Answer>) {
    let calls = ControlledCalls<String, Answer>()
    let model = ObservedSearchModel(clock: clock) { query throws(SearchServiceError) in
      try await calls.call(query).get()
    }
    // The pipeline's tasks start on the clock's schedule, so the clock can wait for them.
    model.start()
    await clock.runCurrent()
    return (model, calls)
  }

  @Test func typingSearchesOnceTheTypingPausesAndShowsTheStates() async {
    let clock = TestClock.current
    let (model, calls) = await makeModel(clock)
    model.query = "s"
    await clock.advance(by: .milliseconds(100))
    model.query = "sw"
    await clock.advance(by: .milliseconds(299))
    #expect(calls.arguments == [])  // still typing
    await clock.advance(by: .milliseconds(1))
    #expect(calls.arguments == ["sw"])
    #expect(model.results == .loading)
    calls.respond(to: "sw", with: .success(["swift", "swiftui"]))
    await clock.runCurrent()
    #expect(model.results == .loaded(["swift", "swiftui"]))
  }

  @Test func aSlowResponseForAnOldQueryNeverOverwritesANewerOne() async {
    let clock = TestClock.current
    let (model, calls) = await makeModel(clock)
    model.query = "sw"
    await clock.advance(by: .milliseconds(300))
    model.query = "swift"
    await clock.advance(by: .milliseconds(300))
    await calls.parked(count: 2)  // both requests are in flight: "sw" was superseded, not answered
    calls.respond(to: "swift", with: .success(["swift"]))
    await clock.runCurrent()
    #expect(model.results == .loaded(["swift"]))
    calls.respond(to: "sw", with: .success(["sw", "swift", "swiftui"]))  // the old answer, last
    await clock.runCurrent()
    #expect(model.results == .loaded(["swift"]))
    #expect(calls.log.map(\.wasCancelled) == [true, false])
  }

  @Test func aFailedSearchIsAStateAndTheNextQuerySearchesAgain() async {
    let clock = TestClock.current
    let (model, calls) = await makeModel(clock)
    model.query = "swi"
    await clock.advance(by: .milliseconds(300))
    calls.fail("swi", with: SearchServiceError())
    await clock.runCurrent()
    #expect(model.results == .failed(SearchServiceError()))
    model.query = "swift"
    await clock.advance(by: .milliseconds(300))
    calls.respond(to: "swift", with: .success(["swift"]))
    await clock.runCurrent()
    #expect(model.results == .loaded(["swift"]))
  }

  @Test func repeatsAndEmptyTextDoNotSearch() async {
    let clock = TestClock.current
    let (model, calls) = await makeModel(clock)
    model.query = "sw"
    await clock.advance(by: .milliseconds(300))
    calls.respond(to: "sw", with: .success(["swift"]))
    model.query = "swi"
    model.query = "sw"  // back to the same text before the pause: no new search
    await clock.advance(by: .milliseconds(300))
    model.query = ""
    await clock.advance(by: .milliseconds(300))
    #expect(calls.arguments == ["sw"])
  }

  @Test func aReleasedModelIsDeinitialisedAndItsPipelineEnds() async {
    let clock = TestClock.current
    var (model, calls): (ObservedSearchModel?, ControlledCalls<String, Answer>) = await makeModel(clock)
    weak let released = model
    model?.query = "sw"
    await clock.advance(by: .milliseconds(300))
    await calls.parked(count: 1)
    model = nil
    #expect(released == nil)  // the pipeline does not keep its model alive
    await clock.runCurrent()
    #expect(calls.log.first?.wasCancelled == true)  // and releasing it cancelled the search
    calls.respond(to: "sw", with: .success(["late"]))
    await clock.run()
    #expect(clock.pendingSleepers == 0)
  }
}
