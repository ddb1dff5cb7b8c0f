import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The Coordination guide's keyword search: appear, retry and the debounced keyword through one
/// latest-wins identity. On the test clock, with a search that answers only when told; each race
/// test runs the naive model too, in the same order, and checks that it goes wrong there.
@Suite("Keyword search in the one load path", .onTestClock, .hangGuard)
@MainActor
struct KeywordSearchTests {
  typealias Answer = Result<[String], SearchServiceError>

  /// A screen that has appeared: its appear load ("") is in flight.
  private func appeared<Screen: KeywordSearchScreen>(
    _ screen: Screen.Type, _ clock: TestClock
  ) async -> (Screen, ControlledCalls<String, Answer>) {
    let calls = ControlledCalls<String, Answer>()
    let model = Screen(clock: clock) { keyword throws(SearchServiceError) in try await calls.call(keyword).get() }
    model.onAppear()
    await clock.runCurrent()
    return (model, calls)
  }

  @Test func aTypedKeywordSupersedesTheAppearLoad() async {
    let clock = TestClock.current
    let (model, calls) = await appeared(KeywordSearchModel.self, clock)
    model.keyword = "swift"
    await clock.advance(by: .milliseconds(300))
    #expect(calls.arguments == ["", "swift"])
    #expect(calls.log.map(\.wasCancelled) == [true, false])  // the appear load was superseded
    calls.respond(to: "swift", with: .success(["swift"]))
    await clock.runCurrent()
    calls.respond(to: "", with: .success(["everything"]))  // the appear load's answer, last
    await clock.runCurrent()
    #expect(model.results == .loaded(["swift"]))
  }

  @Test func theNaiveModelShowsTheAppearLoadsLateAnswer() async {
    let clock = TestClock.current
    let (model, calls) = await appeared(NaiveKeywordSearchModel.self, clock)
    model.keyword = "swift"
    await clock.advance(by: .milliseconds(300))
    #expect(calls.log.map(\.wasCancelled) == [false, false])  // two load paths: nothing superseded
    calls.respond(to: "swift", with: .success(["swift"]))
    await clock.runCurrent()
    calls.respond(to: "", with: .success(["everything"]))
    await clock.runCurrent()
    #expect(model.results == .loaded(["everything"]))  // an older request's answer, shown
  }

  @Test func aDebouncedKeywordEqualToTheLastRequestLoadsNothing() async {
    let clock = TestClock.current
    let (model, calls) = await appeared(KeywordSearchModel.self, clock)
    calls.respond(to: "", with: .success(["everything"]))
    await clock.advance(by: .milliseconds(300))  // the observed "" comes through the debounce
    #expect(calls.arguments == [""])
    model.keyword = "swift"
    await clock.advance(by: .milliseconds(300))
    calls.respond(to: "swift", with: .success(["swift"]))
    model.keyword = "swif"
    await clock.advance(by: .milliseconds(100))
    model.keyword = "swift"  // back to the last request before the pause
    await clock.advance(by: .milliseconds(300))
    #expect(calls.arguments == ["", "swift"])
    #expect(model.results == .loaded(["swift"]))
  }

  @Test func theNaiveModelLoadsTheAppearKeywordAgain() async {
    let clock = TestClock.current
    let (model, calls) = await appeared(NaiveKeywordSearchModel.self, clock)
    calls.respond(to: "", with: .success(["everything"]))
    await clock.advance(by: .milliseconds(300))
    #expect(calls.arguments == ["", ""])  // its pipeline never saw appear's request
    calls.respond(toCall: 1, with: .success(["everything"]))
    await clock.runCurrent()
    #expect(model.results == .loaded(["everything"]))
  }

  /// A failed request stays the last one: typing it again loads nothing; the retry button loads it.
  @Test func retryAfterAFailureLoadsAgainWithTheSameKeyword() async {
    let clock = TestClock.current
    let (model, calls) = await appeared(KeywordSearchModel.self, clock)
    calls.respond(to: "", with: .success(["everything"]))
    model.keyword = "swift"
    await clock.advance(by: .milliseconds(300))
    calls.fail("swift", with: SearchServiceError())
    await clock.runCurrent()
    #expect(model.results == .failed(SearchServiceError()))
    model.keyword = "swif"
    await clock.advance(by: .milliseconds(100))
    model.keyword = "swift"
    await clock.advance(by: .milliseconds(300))
    #expect(calls.arguments == ["", "swift"])
    model.retry()
    await clock.runCurrent()
    #expect(calls.arguments == ["", "swift", "swift"])
    #expect(model.results == .loading)
    calls.respond(toCall: 2, with: .success(["swift"]))
    await clock.runCurrent()
    #expect(model.results == .loaded(["swift"]))
  }

  /// Released with a typed load in flight and the feeding waiting for the next keyword: the model
  /// goes at once, its load is cancelled, and nothing is left on the clock.
  @Test func nothingOutlivesTheModel() async {
    let clock = TestClock.current
    var (model, calls): (KeywordSearchModel?, ControlledCalls<String, Answer>) = await appeared(
      KeywordSearchModel.self, clock)
    weak let released = model
    model?.keyword = "swift"
    await clock.advance(by: .milliseconds(300))
    await calls.parked(count: 2)
    model = nil
    #expect(released == nil)
    await clock.runCurrent()
    #expect(calls.log.map(\.wasCancelled) == [true, true])
    calls.respond(to: "", with: .success(["late"]))
    calls.respond(to: "swift", with: .success(["late"]))
    await clock.run()
    #expect(clock.pendingSleepers == 0)
  }
}
