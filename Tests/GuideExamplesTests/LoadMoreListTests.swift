import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The load-more list with pull-to-refresh, tested with AsyncFlowTesting alone: pages come from a
/// `ControlledCalls` stub (by offset; it answers even when cancelled, like a request already on the
/// wire), the model's tasks run on the `TestClock`'s schedule, and `runCurrent()` waits for the
/// main-actor writes. The spinner flags are checked after every step.
@Suite("Load-more list with pull-to-refresh", .onTestClock, .hangGuard)
@MainActor
struct LoadMoreListTests {
  typealias Pages = ControlledCalls<Int, Result<[String], any Error>>

  private struct Offline: Error {}

  /// A started model showing the first page `1 2`.
  private func makeModel(_ clock: TestClock) async -> (LoadMoreListModel, Pages) {
    let pages = Pages()
    let model = LoadMoreListModel { offset in await pages.call(offset) }
    model.start()
    model.refresh()
    await pages.calls(count: 1)
    await clock.runCurrent()
    #expect(model.isRefreshing)
    pages.respond(toCall: 0, with: .success(["1", "2"]))
    await clock.runCurrent()
    #expect(model.items == ["1", "2"])
    #expect(!model.isRefreshing && !model.isLoadingMore)
    return (model, pages)
  }

  @Test func loadMoreAppendsTheNextPageWithItsSpinner() async {
    let clock = TestClock.current
    let (model, pages) = await makeModel(clock)
    model.loadMore()
    #expect(model.isLoadingMore)
    await pages.calls(count: 2)
    #expect(pages.arguments == [0, 2])
    pages.respond(toCall: 1, with: .success(["3", "4"]))
    await clock.runCurrent()
    #expect(model.items == ["1", "2", "3", "4"])
    #expect(!model.isLoadingMore && !model.isRefreshing)
  }

  @Test func aSecondLoadMoreWhileOneRunsSendsNothing() async {
    let clock = TestClock.current
    let (model, pages) = await makeModel(clock)
    model.loadMore()
    model.loadMore()
    await pages.calls(count: 2)
    await clock.runCurrent()
    #expect(pages.arguments == [0, 2])
    pages.respond(toCall: 1, with: .success(["3"]))
    await clock.runCurrent()
    #expect(model.items == ["1", "2", "3"])
  }

  /// A load-more at offset 2 is in flight when a refresh completes with a new first page; a new
  /// load-more starts for the new list; then the stale page arrives.
  @Test(arguments: [false, true])
  func aLoadMoreInFlightWhenARefreshCompletesNeverWritesItsStaleResult(staleFails: Bool) async {
    let clock = TestClock.current
    let (model, pages) = await makeModel(clock)
    model.loadMore()
    await pages.calls(count: 2)
    model.refresh()
    await pages.calls(count: 3)
    await clock.runCurrent()
    #expect(model.isRefreshing && model.isLoadingMore)
    pages.respond(toCall: 2, with: .success(["0", "1"]))
    await clock.runCurrent()
    #expect(model.items == ["0", "1"])
    #expect(!model.isRefreshing && !model.isLoadingMore)  // the stale load-more's spinner went with it
    #expect(pages.log[1].wasCancelled)

    model.loadMore()  // the new list's next page, at once
    await pages.calls(count: 4)
    #expect(model.isLoadingMore)
    pages.respond(toCall: 1, with: staleFails ? .failure(Offline()) : .success(["3", "4"]))  // the stale answer
    await clock.runCurrent()
    #expect(model.items == ["0", "1"])  // no stale page appended
    #expect(model.hasMore)  // and a stale failure did not switch paging off
    #expect(model.isLoadingMore)  // the stale run's cleanup left its successor's spinner on
    pages.respond(toCall: 3, with: .success(["2", "3"]))
    await clock.runCurrent()
    #expect(model.items == ["0", "1", "2", "3"])
    #expect(!model.isLoadingMore)
  }

  @Test func aFailedLoadMoreSwitchesPagingOffUntilTheNextRefresh() async {
    let clock = TestClock.current
    let (model, pages) = await makeModel(clock)
    model.loadMore()
    await pages.calls(count: 2)
    pages.respond(toCall: 1, with: .failure(Offline()))
    await clock.runCurrent()
    #expect(!model.hasMore && !model.isLoadingMore)
    model.loadMore()
    await clock.runCurrent()
    #expect(pages.arguments == [0, 2])  // paging is off: nothing sent
    #expect(!model.isLoadingMore)
    model.refresh()
    await pages.calls(count: 3)
    pages.respond(toCall: 2, with: .success(["1", "2"]))
    await clock.runCurrent()
    #expect(model.hasMore)
  }

  /// Pull to refresh while a refresh runs: the first is cancelled, the spinner stays on until the
  /// second ends, and the first's answer, whenever it comes, is never shown.
  @Test(arguments: [false, true])
  func pullToRefreshWhileRefreshingShowsTheSecondPull(oldAnswersFirst: Bool) async {
    let clock = TestClock.current
    let (model, pages) = await makeModel(clock)
    model.refresh()
    await pages.calls(count: 2)
    model.refresh()
    await pages.calls(count: 3)
    await clock.runCurrent()
    #expect(model.isRefreshing)
    #expect(pages.log.map(\.wasCancelled) == [false, true, false])
    if oldAnswersFirst {
      pages.respond(toCall: 1, with: .success(["old"]))
      await clock.runCurrent()
      #expect(model.items == ["1", "2"])
      #expect(model.isRefreshing)  // the second pull is still in flight
    }
    pages.respond(toCall: 2, with: .success(["new"]))
    await clock.runCurrent()
    #expect(model.items == ["new"])
    #expect(!model.isRefreshing)  // off, though the first pull's request may still be out
    if !oldAnswersFirst {
      pages.respond(toCall: 1, with: .success(["old"]))
      await clock.runCurrent()
    }
    #expect(model.items == ["new"])
    #expect(!model.isRefreshing)
  }

  @Test func aReleasedListIsDeinitialisedAndItsRequestsCancelled() async {
    let clock = TestClock.current
    var (model, pages): (LoadMoreListModel?, Pages) = await makeModel(clock)
    weak let released = model
    model?.loadMore()
    model?.refresh()
    await pages.calls(count: 3)
    model = nil
    #expect(released == nil)
    await clock.runCurrent()
    #expect(pages.log.map(\.wasCancelled) == [false, true, true])
    pages.respond(toCall: 1, with: .success(["late"]))
    pages.respond(toCall: 2, with: .success(["late"]))
    await clock.run()
  }
}
