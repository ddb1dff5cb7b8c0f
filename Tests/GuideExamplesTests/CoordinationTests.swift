import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// Waits for a condition on the main actor, yielding in between: a condition, not a guess at time.
@MainActor
private func until(_ condition: @MainActor () -> Bool) async {
  for _ in 0..<1_000_000 where !condition() { await Task.yield() }
  #expect(condition())
}

@Suite("Coordination worked examples", .timeLimit(.minutes(1)))
@MainActor
struct CoordinationTests {
  // MARK: 1. Articles list: sent A, B, C; returned C, A, B.

  /// `oneLoadAtATime`: each response is handled before the next is sent, so that the loads end in
  /// exactly that order. Without it, responses sent back to back resume their tasks off the main
  /// actor, and those race to hop back onto it.
  private func sentABCReturnedCAB<Model>(
    _ makeModel: (@escaping FetchArticles) -> Model, changeCategory: (Model, String) -> Void,
    finishedLoads: (Model) -> Int, articles: (Model) -> [String], oneLoadAtATime: Bool = false
  ) async -> [String] {
    let calls = ControlledCalls<ArticlesQuery, Result<[String], any Error>>()
    let model = makeModel { await calls.call($0) }
    for (sent, category) in ["A", "B", "C"].enumerated() {
      changeCategory(model, category)
      await calls.waitForRequests(sent + 1)  // the request is on the wire before the next change
    }
    for (answered, category) in ["C", "A", "B"].enumerated() {
      calls.respond(to: ArticlesQuery(category: category), with: .success(["\(category) article"]))
      if oneLoadAtATime { await until { finishedLoads(model) == answered + 1 } }
    }
    await until { finishedLoads(model) == 3 }
    return articles(model)
  }

  @Test func articlesListShowsTheLatestQueryWhateverOrderResponsesArriveIn() async {
    let fixed = await sentABCReturnedCAB(
      ArticlesModel.init, changeCategory: { $0.categoryChanged($1) }, finishedLoads: { $0.finishedLoads },
      articles: { $0.articles })
    #expect(fixed == ["C article"])
    let naive = await sentABCReturnedCAB(
      NaiveArticlesModel.init, changeCategory: { $0.categoryChanged($1) }, finishedLoads: { $0.finishedLoads },
      articles: { $0.articles }, oneLoadAtATime: true)
    #expect(naive == ["B article"])  // the bug: the last to return wins
  }

  @Test func articlesListFunnelsEveryEntryPointIntoOneLoad() async {
    let calls = ControlledCalls<ArticlesQuery, Result<[String], any Error>>()
    let model = ArticlesModel { await calls.call($0) }
    let entryPoints: [() -> Void] = [model.onAppear, model.refresh, model.retry, { model.keywordChanged("swift") }]
    for (sent, entryPoint) in entryPoints.enumerated() {
      entryPoint()
      await calls.waitForRequests(sent + 1)
    }
    // Only the request for the current query may write; the three before it were superseded.
    calls.respond(to: ArticlesQuery(category: "all", keyword: "swift"), with: .success(["swift"]))
    for _ in 0..<3 { calls.respond(to: ArticlesQuery(category: "all"), with: .success(["stale"])) }
    await until { model.finishedLoads == 4 }
    #expect(model.articles == ["swift"])
  }

  // MARK: 2. History: a load-more parked while a refresh completes.

  private struct Offline: Error {}

  private func loadMoreParkedDuringRefresh<Model>(
    _ makeModel: (@escaping FetchPage) -> Model, refresh: @escaping (Model) async -> Void,
    loadMore: @escaping (Model) async -> Void, loadMoreFails: Bool
  ) async -> Model where Model: Sendable {
    let calls = ControlledCalls<Int, Result<[String], any Error>>()
    let model = makeModel { await calls.call($0) }
    // The first page.
    let first = Task { await refresh(model) }
    await calls.waitForRequests(1)
    calls.respond(to: 0, with: .success(["1", "2"]))
    await first.value
    // A load-more at offset 2 is in flight...
    let more = Task { await loadMore(model) }
    await calls.waitForRequests(2)
    // ...while a refresh completes with a new first page.
    let second = Task { await refresh(model) }
    await calls.waitForRequests(3)
    calls.respond(to: 0, with: .success(["0", "1"]))
    await second.value
    // Now the stale load-more returns.
    calls.respond(to: 2, with: loadMoreFails ? .failure(Offline()) : .success(["3", "4"]))
    await more.value
    return model
  }

  @Test func historyDropsAStaleLoadMorePage() async {
    let fixed = await loadMoreParkedDuringRefresh(
      HistoryModel.init, refresh: { await $0.refresh() }, loadMore: { await $0.loadMore() }, loadMoreFails: false)
    #expect(fixed.items == ["0", "1"])
    let naive = await loadMoreParkedDuringRefresh(
      NaiveHistoryModel.init, refresh: { await $0.refresh() }, loadMore: { await $0.loadMore() }, loadMoreFails: false)
    #expect(naive.items == ["0", "1", "3", "4"])  // the bug: an old page appended to the new list
  }

  @Test func historyDropsAStaleLoadMoreFailure() async {
    let fixed = await loadMoreParkedDuringRefresh(
      HistoryModel.init, refresh: { await $0.refresh() }, loadMore: { await $0.loadMore() }, loadMoreFails: true)
    #expect(fixed.hasMore)
    let naive = await loadMoreParkedDuringRefresh(
      NaiveHistoryModel.init, refresh: { await $0.refresh() }, loadMore: { await $0.loadMore() }, loadMoreFails: true)
    #expect(!naive.hasMore)  // the bug: a stale failure switched paging off
  }

  // MARK: 3. Search screen: latest search, one load per row, first-wins submit.

  @Test func searchScreenKeepsOneLiveSearchOneLoadPerRowAndOneSubmission() async {
    let searches = ControlledCalls<String, [String]>()
    let detailCalls = ControlledCalls<[Int], String>()
    let submits = ControlledCalls<String, Void>()
    let fixed = SearchScreen(
      search: { await searches.call($0) }, loadDetails: { await detailCalls.call([$0, $1]) },
      submit: { await submits.call($0) })
    let naive = NaiveSearchScreen(
      search: { await searches.call($0) }, loadDetails: { await detailCalls.call([$0, $1]) },
      submit: { await submits.call($0) })

    // Each request is on the wire before the next event.
    fixed.queryChanged("sw")
    await searches.waitForRequests(1)
    fixed.queryChanged("swift")
    await searches.waitForRequests(2)
    naive.queryChanged("sw")
    await searches.waitForRequests(3)
    naive.queryChanged("swift")
    await searches.waitForRequests(4)
    fixed.showDetails(row: 1, version: 1)
    await detailCalls.waitForRequests(1)
    fixed.showDetails(row: 2, version: 1)
    await detailCalls.waitForRequests(2)
    fixed.showDetails(row: 1, version: 2)
    await detailCalls.waitForRequests(3)
    fixed.submitTapped("order")
    await submits.waitForRequests(1)
    fixed.submitTapped("order")  // a double tap: ignored while the first runs
    naive.submitTapped("order")
    await submits.waitForRequests(2)
    naive.submitTapped("order")
    await submits.waitForRequests(3)  // the fixed screen sent one, the naive one two
    // Responses arrive newest first.
    for _ in 0..<2 { searches.respond(to: "swift", with: ["swift results"]) }
    for _ in 0..<2 { searches.respond(to: "sw", with: ["sw results"]) }
    detailCalls.respond(to: [1, 2], with: "row 1 v2")
    detailCalls.respond(to: [2, 1], with: "row 2 v1")
    detailCalls.respond(to: [1, 1], with: "row 1 v1")
    for _ in 0..<3 { submits.respond(to: "order", with: ()) }
    await until { fixed.slots.runningCount == 0 && naive.submissions == 2 && fixed.submissions == 1 }
    await until { naive.results == ["sw results"] }
    #expect(fixed.results == ["swift results"])
    #expect(fixed.details == [1: "row 1 v2", 2: "row 2 v1"])
    #expect(fixed.submissions == 1)
    #expect(naive.results == ["sw results"])  // the bug: the stale search wrote last
    #expect(naive.submissions == 2)  // the bug: a double tap submitted twice
  }

  // MARK: 4. The same search as a stream.

  @Test func theStreamOperatorEnforcesTheSameRuleAsTheSlot() async {
    let searches = ControlledCalls<String, [String]>()
    let terms = PassthroughFlow<String, Never>()
    let results = searchResults(for: terms) { await searches.call($0) }
    let collected = Task { () -> [[String]] in
      var all: [[String]] = []
      for await result in results { all.append(result) }
      return all
    }
    while terms.subscriberCount == 0 { await Task.yield() }
    terms.send("sw")
    await searches.waitForRequests(1)
    terms.send("swift")
    await searches.waitForRequests(2)
    terms.finish()
    searches.respond(to: "swift", with: ["swift results"])
    searches.respond(to: "sw", with: ["sw results"])  // late and stale: never delivered
    #expect(await collected.value == [["swift results"]])
  }
}
