import AsyncFlow
import AsyncFlowTesting

/// The request log shows queries as `category/keyword`.
extension ArticlesQuery: CustomStringConvertible {
  public var description: String { "\(category)/\(keyword)" }
}

/// The articles screens of Coordination/ArticlesList.swift, naive and fixed, as one scenario sees
/// them.
@MainActor
public protocol ArticlesScreen: AnyObject {
  init(fetch: @escaping FetchArticles)
  var articles: [String] { get }
  var query: ArticlesQuery { get }
  func onAppear()
  func refresh()
  func retry()
  func categoryChanged(_ category: String)
  func keywordChanged(_ keyword: String)
}

extension NaiveArticlesModel: ArticlesScreen {}
extension ArticlesModel: ArticlesScreen {}

// region: explore-articles
/// The five entry points of the articles screen, in the order a user could trigger them, and what
/// must hold once every request was answered: the list shows the current query's articles.
public func articlesExploration<Screen: ArticlesScreen>(_ screen: Screen.Type) -> Exploration<Screen> {
  Exploration("articles list, \(Screen.self)") { run in
    // A cancelled request returns at once, as URLSession's do.
    let fetches = ControlledCalls<ArticlesQuery, Result<[String], any Error>>(
      whenCancelled: .failure(CancellationError()))
    run.answer(fetches, as: "fetch") { query in .success(["\(query)"]) }
    return Screen(fetch: run.stub(fetches))
  }
  .step("appear") { $0.onAppear() }
  .step("category swift") { $0.categoryChanged("swift") }
  .step("keyword async") { $0.keywordChanged("async") }
  .step("pull to refresh") { $0.refresh() }
  .step("retry") { $0.retry() }
  .state { "articles \($0.articles)" }
  .invariant("shows the current query's articles") { $0.articles == ["\($0.query)"] }
}
// endregion: explore-articles

public typealias Pages = ControlledCalls<Int, Result<[String], any Error>>

// region: explore-history-pages
/// A feed that changes between two refreshes (recently played tracks): each first-page request
/// sees a new version, and a page says which version and which offsets it holds (`v2#0`).
@MainActor
public func answerFromAChangingFeed(_ pages: Pages, in run: ExplorationRun) {
  run.answer(pages, as: "pages", eitherOf: { call in
    let version = pages.log.prefix(call.index + 1).count { $0.argument == 0 }
    return [.success([call.argument, call.argument + 1].map { "v\(version)#\($0)" })]
  })
}

/// One version of the feed, from offset 0, with no gap and no repeat.
public func isOneListInOrder(_ items: [String]) -> Bool {
  let version = items.first?.split(separator: "#").first
  return items.enumerated().allSatisfy { offset, item in item == "\(version ?? "")#\(offset)" }
}
// endregion: explore-history-pages

// region: explore-history-naive
/// Seed 001's race: load the list, scroll to its end, pull to refresh; each entry point runs in a
/// task of its own, as `.task` and `.refreshable` give it.
public func naiveHistoryExploration() -> Exploration<NaiveGuardedHistoryModel> {
  Exploration("history, NaiveGuardedHistoryModel") { run in
    let pages = Pages(whenCancelled: .failure(CancellationError()))
    answerFromAChangingFeed(pages, in: run)
    return NaiveGuardedHistoryModel(fetch: run.stub(pages))
  }
  .step("first load") { await $0.refresh() }
  .step("load more") { await $0.loadMore() }
  .step("pull to refresh") { await $0.refresh() }
  .state { "items \($0.items) hasMore \($0.hasMore)" }
  .invariant("one list, in order") { isOneListInOrder($0.items) }
}
// endregion: explore-history-naive

// region: explore-history-fixed
/// The same script on the fixed list (Coordination/HistoryPagination.swift): refresh is latest
/// wins and cancels the load-more in flight, load-more is first wins, a cancelled run writes
/// nothing. Its spinners must be off once everything was answered.
public func historyExploration() -> Exploration<LoadMoreListModel> {
  Exploration("history, LoadMoreListModel") { run in
    let pages = Pages(whenCancelled: .failure(CancellationError()))
    answerFromAChangingFeed(pages, in: run)
    let model = LoadMoreListModel(fetch: run.stub(pages))
    // Not `.onTestClock`: the explorer makes a fresh clock for every run, outside the test's scope,
    // so the model's flows are put on that run's clock by hand.
    await run.clock.onSchedule { model.start() }
    return model
  }
  .step("first load") { $0.refresh() }
  .step("load more") { $0.loadMore() }
  .step("pull to refresh") { $0.refresh() }
  .state { "items \($0.items) hasMore \($0.hasMore)" }
  .invariant("one list, in order") { isOneListInOrder($0.items) }
  .invariant("no spinner left on") { !$0.isRefreshing && !$0.isLoadingMore }
}
// endregion: explore-history-fixed

// region: explore-in-a-test
/// In a test, `check()` explores and records a failure (problems, timeline, replay line) as a
/// test issue; `explore()` returns the same report to code outside a test, as `race-demo` does.
@MainActor
public func checkTheFixedModels() async {
  await articlesExploration(ArticlesModel.self).check()
  await historyExploration().check(ExplorationBudget(orders: 1_000, seed: 7))
}
// endregion: explore-in-a-test
