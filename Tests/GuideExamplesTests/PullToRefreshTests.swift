import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The pull-to-refresh feed of Coordination.md: `refresh()` is what `.refreshable` awaits. Each
/// test runs the fixed model and the naive one in the same order; the naive one shows the bug.
@Suite("Pull to refresh", .onTestClock, .hangGuard)
@MainActor
struct PullToRefreshTests {
  private struct Offline: Error {}

  /// The screen leaves while `refresh()` awaits: the caller's task is cancelled, then the request
  /// on the wire answers. The fixed model writes nothing and its `refresh()` returns once the run
  /// has ended; the naive one writes the page after leaving.
  private func leaveDuringTheRefresh<Feed: RefreshableFeed>(_ feed: Feed.Type) async -> (
    items: [String], returned: Bool
  ) {
    let clock = TestClock.current
    let pages = Pages()
    let model = Feed { offset in await pages.call(offset) }
    let pull = clock.task { @MainActor in await model.refresh() }
    await pages.calls(count: 1)
    pull.cancel()  // the screen left
    await clock.runCurrent()
    pages.respond(toCall: 0, with: .success(["late"]))
    let returned = await clock.value(of: pull) != nil
    return (model.items, returned)
  }

  @Test func leavingDuringARefreshWritesNothing() async {
    let fixed = await leaveDuringTheRefresh(RefreshableFeedModel.self)
    #expect(fixed.items.isEmpty && fixed.returned)
    let naive = await leaveDuringTheRefresh(NaiveRefreshableFeedModel.self)
    #expect(naive.items == ["late"])  // the bug: written after the screen left
  }

  /// `refresh()` returns when the load has ended, with the page shown: the spinner's whole life.
  @Test func aRefreshReturnsOnceThePageIsShown() async {
    let clock = TestClock.current
    let pages = Pages()
    let model = RefreshableFeedModel { offset in await pages.call(offset) }
    let pull = clock.task { @MainActor in await model.refresh() }
    await pages.calls(count: 1)
    await clock.runCurrent()
    #expect(model.items.isEmpty)  // still loading: the spinner is on
    pages.respond(toCall: 0, with: .success(["1", "2"]))
    #expect(await clock.value(of: pull) != nil)
    #expect(model.items == ["1", "2"])
  }

  /// A second pull replaces the first: the first `refresh()` returns once its cancelled run has
  /// ended, without writing its late page; the second writes its own.
  @Test func aSecondPullReplacesTheFirst() async {
    let clock = TestClock.current
    let pages = Pages()
    let model = RefreshableFeedModel { offset in await pages.call(offset) }
    let first = clock.task { @MainActor in await model.refresh() }
    await pages.calls(count: 1)
    let second = clock.task { @MainActor in await model.refresh() }
    await pages.calls(count: 2)
    #expect(pages.log.map(\.wasCancelled) == [true, false])
    pages.respond(toCall: 1, with: .success(["new"]))
    #expect(await clock.value(of: second) != nil)
    pages.respond(toCall: 0, with: .success(["old"]))
    #expect(await clock.value(of: first) != nil)
    #expect(model.items == ["new"])
  }

  @Test func aFailedRefreshKeepsThePageAndSaysWhy() async {
    let clock = TestClock.current
    let pages = Pages()
    let model = RefreshableFeedModel { offset in await pages.call(offset) }
    let pull = clock.task { @MainActor in await model.refresh() }
    await pages.calls(count: 1)
    pages.respond(toCall: 0, with: .success(["1"]))
    _ = await clock.value(of: pull)
    let again = clock.task { @MainActor in await model.refresh() }
    await pages.calls(count: 2)
    pages.respond(toCall: 1, with: .failure(Offline()))
    _ = await clock.value(of: again)
    #expect(model.items == ["1"])
    #expect(model.failure == "Offline()")
  }

  /// A stale failure is never written: the first pull's request fails after a second pull
  /// superseded it, and the model, which writes whatever `runAndWait` hands it, gets `nil`; the
  /// second pull's page is shown and no failure.
  @Test func aSupersededPullsFailureIsNeverWritten() async {
    let clock = TestClock.current
    let pages = Pages()
    let model = RefreshableFeedModel { offset in await pages.call(offset) }
    let first = clock.task { @MainActor in await model.refresh() }
    await pages.calls(count: 1)
    let second = clock.task { @MainActor in await model.refresh() }
    await pages.calls(count: 2)
    pages.respond(toCall: 0, with: .failure(Offline()))  // late: its run was superseded
    #expect(await clock.value(of: first) != nil)
    #expect(model.failure == nil)
    pages.respond(toCall: 1, with: .success(["new"]))
    #expect(await clock.value(of: second) != nil)
    #expect(model.items == ["new"] && model.failure == nil)
  }
}

/// The explorer on the same two models: every order of the three entry points' answers, and the
/// screen leaving at every point while they await.
@Suite("Exploration of pull to refresh", .hangGuard)
@MainActor
struct PullToRefreshExplorationTests {
  @Test func theNaiveFeedWritesAfterTheScreenLeft() async throws {
    let exploration = pullToRefreshExploration(NaiveRefreshableFeedModel.self)
    let report = await exploration.explore()
    let failure = try #require(report.failure)
    #expect(failure.order.hasSuffix("leave"))
    #expect(failure.problems.first?.hasPrefix("written after the release") == true, "\(failure)")
    #expect(await exploration.replay(failure.order).failure == failure)
  }

  @Test func theFixedFeedPassesEveryOrderAndCancellationPoint() async {
    let report = await pullToRefreshExploration(RefreshableFeedModel.self).explore()
    #expect(report.passed, "\(report)")
    #expect(report.isExhaustive && report.orders == 15)
    #expect(report.cancellationPoints == 18)
  }
}
