import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The explorer on the seeds' two races: the naive models fail within the default budget with a
/// stale write in their timeline and an order that replays; the fixed models pass every order and
/// every cancellation point. Not `.onTestClock`: the explorer builds every run afresh on a
/// `TestClock` of its own (`ExplorationRun.clock`), so a clock for the whole test would go unused.
// Five minutes: under ThreadSanitizer on two cores its longest tests take most of one when idle.
@Suite("Exploration of the guide's models", .hangGuard)
@MainActor
struct ExplorationGuideTests {
  @Test func theNaiveArticlesListShowsAStaleQueryInSomeOrder() async throws {
    let exploration = articlesExploration(NaiveArticlesModel.self)
    let report = await exploration.explore()
    let failure = try #require(report.failure)
    #expect(failure.problems == [#"broken: shows the current query's articles; articles ["swift/"]"#])
    #expect(failure.order == "s0 s1 s2 s3 s4 fetch#0 fetch#2 fetch#3 fetch#4 fetch#1")
    #expect(failure.timeline.last?.isStale == true)
    #expect(report.orders == 10)
    #expect(await exploration.replay(failure.order).failure == failure)
  }

  @Test func theFixedArticlesListPassesEveryOrderAndCancellationPoint() async {
    let report = await articlesExploration(ArticlesModel.self).explore()
    #expect(report.passed, "\(report)")
    #expect(report.isExhaustive && report.orders == 16)
    #expect(report.cancellationPoints == 25)
  }

  @Test func theNaiveHistoryAppendsAStalePageAfterARefresh() async throws {
    let exploration = naiveHistoryExploration()
    let report = await exploration.explore()
    let failure = try #require(report.failure)
    #expect(failure.order == "s0 pages#0 s1 s2 pages#2 pages#1")
    #expect(failure.problems == [#"broken: one list, in order; items ["v2#0", "v2#1", "v1#2", "v1#3"] hasMore true"#])
    let stale = failure.timeline.filter(\.isStale)
    #expect(stale.map(\.action) == ["answered pages#1(2)"])
    #expect(await exploration.replay(failure.order).failure == failure)
  }

  @Test func theFixedHistoryPassesEveryOrderAndCancellationPoint() async {
    let report = await historyExploration().explore()
    #expect(report.passed, "\(report)")
    #expect(report.isExhaustive && report.orders == 8)
    #expect(report.cancellationPoints == 16)
  }

  @Test func theGuidesCheckOfTheFixedModelsRecordsNoIssue() async {
    await checkTheFixedModels()
  }

  /// `HistoryModel` fixes the order race with a `Generation` alone: every order passes. Leaving the
  /// screen while a load-more is in flight is another matter: the cancelled request fails, the
  /// generation is still current, and the failure switches paging off after the release.
  @Test func aGenerationAloneStillWritesAfterTheScreenIsLeft() async throws {
    let exploration = Exploration("history, HistoryModel") { run in
      let pages = Pages(whenCancelled: .failure(CancellationError()))
      answerFromAChangingFeed(pages, in: run)
      return HistoryModel(fetch: run.stub(pages))
    }
    .step("first load") { await $0.refresh() }
    .step("load more") { await $0.loadMore() }
    .step("pull to refresh") { await $0.refresh() }
    .state { "items \($0.items) hasMore \($0.hasMore)" }
    .invariant("one list, in order") { isOneListInOrder($0.items) }
    let report = await exploration.explore()
    let failure = try #require(report.failure)
    #expect(report.isExhaustive)  // every order passed; a cancellation point failed
    #expect(failure.order.hasSuffix("leave"))
    #expect(failure.problems.first?.hasPrefix("written after the release") == true, "\(failure)")
  }
}
