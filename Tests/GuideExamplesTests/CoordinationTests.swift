import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// A main-actor stub: the naive models call it from their own `Task { }` (on the main actor, which
/// the clock settles), the fixed ones from their `TaskSlots` tasks (on the clock's executor, under
/// `.onTestClock`). Either way the call parks and resumes on the main actor, so after
/// `respond(...)` a `runCurrent()` returns once the model has handled the response: a barrier,
/// where polling could only guess. A nonisolated stub called from the naive models' `Task { }`
/// would return through the global executor, which the clock cannot see: the stub reports that.
@MainActor
private func stub<Request, Response>(
  _ calls: ControlledCalls<Request, Response>
) -> @Sendable (Request) async -> Response {
  { @MainActor request in await calls.call(request) }
}

@Suite("Coordination worked examples", .onTestClock, .hangGuard)
@MainActor
struct CoordinationTests {
  // MARK: 1. Articles list: sent A, B, C; returned C, A, B.

  /// `oneLoadAtATime`: each response is handled before the next is sent, so that the loads end in
  /// exactly that order. Without it, the three responses are sent back to back and handled after.
  private func sentABCReturnedCAB<Model>(
    _ makeModel: (@escaping FetchArticles) -> Model, changeCategory: (Model, String) -> Void,
    finishedLoads: (Model) -> Int, articles: (Model) -> [String], oneLoadAtATime: Bool = false
  ) async -> [String] {
    let clock = TestClock.current
    let calls = ControlledCalls<ArticlesQuery, Result<[String], any Error>>()
    let model = makeModel(stub(calls))
    for (sent, category) in ["A", "B", "C"].enumerated() {
      changeCategory(model, category)
      await calls.calls(count: sent + 1)  // the request is on the wire before the next change
    }
    for (answered, category) in ["C", "A", "B"].enumerated() {
      calls.respond(to: ArticlesQuery(category: category), with: .success(["\(category) article"]))
      if oneLoadAtATime {
        await clock.runCurrent()
        #expect(finishedLoads(model) == answered + 1)
      }
    }
    await clock.runCurrent()
    #expect(finishedLoads(model) == 3)
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
    let clock = TestClock.current
    let calls = ControlledCalls<ArticlesQuery, Result<[String], any Error>>()
    let model = ArticlesModel(fetch: stub(calls))
    let entryPoints: [() -> Void] = [model.onAppear, model.refresh, model.retry, { model.keywordChanged("swift") }]
    for (sent, entryPoint) in entryPoints.enumerated() {
      entryPoint()
      await calls.calls(count: sent + 1)
    }
    // Only the request for the current query may write; the three before it were superseded.
    calls.respond(to: ArticlesQuery(category: "all", keyword: "swift"), with: .success(["swift"]))
    for _ in 0..<3 { calls.respond(to: ArticlesQuery(category: "all"), with: .success(["stale"])) }
    await clock.runCurrent()
    #expect(model.finishedLoads == 4)
    #expect(model.articles == ["swift"])
  }

  // MARK: 2. History: a load-more parked while a refresh completes.

  private struct Offline: Error {}

  private func loadMoreParkedDuringRefresh<Model>(
    _ makeModel: (@escaping FetchPage) -> Model, refresh: @escaping @Sendable (Model) async -> Void,
    loadMore: @escaping @Sendable (Model) async -> Void, loadMoreFails: Bool
  ) async -> Model where Model: Sendable {
    let clock = TestClock.current
    let calls = ControlledCalls<Int, Result<[String], any Error>>()
    let model = makeModel(stub(calls))
    // The first page.
    clock.task { await refresh(model) }
    await calls.calls(count: 1)
    calls.respond(to: 0, with: .success(["1", "2"]))
    await clock.runCurrent()  // the first refresh has ended
    // A load-more at offset 2 is in flight...
    clock.task { await loadMore(model) }
    await calls.calls(count: 2)
    // ...while a refresh completes with a new first page.
    clock.task { await refresh(model) }
    await calls.calls(count: 3)
    calls.respond(to: 0, with: .success(["0", "1"]))
    await clock.runCurrent()
    // Now the stale load-more returns.
    calls.respond(to: 2, with: loadMoreFails ? .failure(Offline()) : .success(["3", "4"]))
    await clock.runCurrent()
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
    let clock = TestClock.current
    let searches = ControlledCalls<String, [String]>()
    let detailCalls = ControlledCalls<[Int], String>()
    let submits = ControlledCalls<String, Void>()
    let search = stub(searches)
    // @MainActor like the stubs: a nonisolated closure would return through the global executor.
    let details: LoadDetails = { @MainActor row, version in
      await detailCalls.call([row, version])
    }
    let submit = stub(submits)
    let fixed = SearchScreen(search: search, loadDetails: details, submit: submit)
    let naive = NaiveSearchScreen(search: search, loadDetails: details, submit: submit)

    // Each request is on the wire before the next event.
    fixed.queryChanged("sw")
    await searches.calls(count: 1)
    fixed.queryChanged("swift")
    await searches.calls(count: 2)
    naive.queryChanged("sw")
    await searches.calls(count: 3)
    naive.queryChanged("swift")
    await searches.calls(count: 4)
    fixed.showDetails(row: 1, version: 1)
    await detailCalls.calls(count: 1)
    fixed.showDetails(row: 2, version: 1)
    await detailCalls.calls(count: 2)
    fixed.showDetails(row: 1, version: 2)
    await detailCalls.calls(count: 3)
    fixed.submitTapped("order")
    await submits.calls(count: 1)
    fixed.submitTapped("order")  // a double tap: ignored while the first runs
    naive.submitTapped("order")
    await submits.calls(count: 2)
    naive.submitTapped("order")
    await submits.calls(count: 3)  // the fixed screen sent one, the naive one two
    // Responses arrive newest first.
    for _ in 0..<2 { searches.respond(to: "swift", with: ["swift results"]) }
    // Settled between the two answers, so that "swift" is written before "sw" answers: the
    // naive screen's two plain tasks otherwise race each other to the main actor.
    await clock.runCurrent()
    for _ in 0..<2 { searches.respond(to: "sw", with: ["sw results"]) }
    detailCalls.respond(to: [1, 2], with: "row 1 v2")
    detailCalls.respond(to: [2, 1], with: "row 2 v1")
    detailCalls.respond(to: [1, 1], with: "row 1 v1")
    for _ in 0..<3 { submits.respond(to: "order", with: ()) }
    await clock.runCurrent()
    #expect(fixed.results == ["swift results"])
    #expect(fixed.details == [1: "row 1 v2", 2: "row 2 v1"])
    #expect(fixed.submissions == 1)
    #expect(naive.results == ["sw results"])  // the bug: the stale search wrote last
    #expect(naive.submissions == 2)  // the bug: a double tap submitted twice
  }

  // MARK: 4. The same search as a stream.

  @Test func theStreamOperatorEnforcesTheSameRuleAsTheSlot() async {
    let clock = TestClock.current
    let searches = ControlledCalls<String, [String]>()
    let terms = PassthroughFlow<String, Never>()
    // On the clock, the operator's tasks run on its executor, the stub's calls with them.
    let collected = clock.task { () -> [[String]] in
      var all: [[String]] = []
      for await result in searchResults(for: terms, search: { await searches.call($0) }) { all.append(result) }
      return all
    }
    await clock.runCurrent()
    #expect(terms.subscriberCount == 1)
    terms.send("sw")
    await searches.calls(count: 1)
    terms.send("swift")
    await searches.calls(count: 2)
    terms.finish()
    searches.respond(to: "swift", with: ["swift results"])
    searches.respond(to: "sw", with: ["sw results"])  // late and stale: never delivered
    await clock.runCurrent()
    collected.cancel()  // a no-op once the stream has ended; ends it if something went wrong
    #expect(await bounded(collected, "collected") == [["swift results"]])
  }
}
