import AsyncFlow
import AsyncFlowTesting
import Synchronization
import Testing

// The Testing guide's tests, as it shows them. They are Swift Testing tests: compiled with the
// package, and run with the `GuideExamplesTests` that link this module.

// region: testing-statements
/// Nothing moves between two statements: the sink's closure, which runs on the clock, runs only
/// once the test awaits.
@Test(.onTestClock) @MainActor func nothingMovesBetweenTwoStatements() async {
  let clock = TestClock.current
  let taps = PassthroughFlow<Int, Never>()
  let counted = Mutex(0)
  let subscription = taps.sink { _ in counted.withLock { $0 += 1 } }
  await clock.runCurrent()  // subscribed
  taps.send(1)
  #expect(counted.withLock { $0 } == 0)  // not yet: the test has not awaited
  taps.send(2)
  await clock.runCurrent()  // the clock runs while the test awaits
  #expect(counted.withLock { $0 } == 2)
  subscription.cancel()
}

/// Two entry points in one main-actor turn: the first load is superseded before the test awaits,
/// so it never begins, and one request is sent. No `runCurrent()` between the two calls.
@Test(.onTestClock) @MainActor func twoEntryPointsInOneTurnSendOneRequest() async {
  let fetches = ControlledCalls<ArticlesQuery, Result<[String], any Error>>()
  let model = ArticlesModel { query in await fetches.call(query) }
  model.categoryChanged("swift")
  model.retry()
  await TestClock.current.runCurrent()
  #expect(fetches.arguments == [ArticlesQuery(category: "swift")])  // one request, not two
}
// endregion: testing-statements

// region: testing-on-test-clock
/// The whole test on the clock, in one word: the screen's entry points are called directly, and
/// the tasks they start in its `TaskSlots` run on the clock's schedule, so `runCurrent()` returns
/// once the screen has handled every answer.
@Test(.onTestClock) @MainActor func theNewestSearchWinsWhateverOrderTheAnswersArriveIn() async {
  let clock = TestClock.current
  let searches = ControlledCalls<String, [String]>()
  let screen = SearchScreen(
    search: { query in await searches.call(query) }, loadDetails: { _, _ in "" }, submit: { _ in })
  screen.queryChanged("sw")
  await searches.calls(count: 1)  // the first search is on the wire...
  screen.queryChanged("swift")  // ...when the query changes
  await searches.parked(count: 2)
  searches.respond(to: "swift", with: ["swift results"])
  searches.respond(to: "sw", with: ["sw results"])  // the stale answer, last
  await clock.runCurrent()
  #expect(screen.results == ["swift results"])
}
// endregion: testing-on-test-clock

// region: testing-value-of
/// A wait that cannot hang: the refresh's value once the clock's schedule is idle; if it has not
/// ended by then, `nil` and a test issue naming what it waits in (say, "call 0 (0) waits for its
/// answer"), instead of a test process that never exits.
@Test(.onTestClock) @MainActor func aRefreshEndsOnceItsPageArrives() async {
  let clock = TestClock.current
  let pages = ControlledCalls<Int, Result<[String], any Error>>()
  let model = HistoryModel { offset in await pages.call(offset) }
  let refresh = clock.task { await model.refresh() }
  await pages.calls(count: 1)
  pages.respond(to: 0, with: .success(["1", "2"]))
  #expect(await clock.value(of: refresh) != nil)
  #expect(model.items == ["1", "2"])
}
// endregion: testing-value-of
