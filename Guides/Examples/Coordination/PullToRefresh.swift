import AsyncFlow
import AsyncFlowTesting
import Observation

// region: naive-pull-to-refresh
/// As people first write it: SwiftUI's `.refreshable` awaits `refresh()`, so the run's task is
/// awaited. `Task.value` does not pass the caller's cancellation on: when the screen leaves, the
/// run goes on, the `refresh()` frame keeps the model alive, and the page is written after leaving.
@MainActor @Observable
public final class NaiveRefreshableFeedModel {
  public private(set) var items: [String] = []
  @ObservationIgnored private let fetch: FetchPage
  @ObservationIgnored private let slots = TaskSlots<String>()

  public init(fetch: @escaping FetchPage) { self.fetch = fetch }

  public func refresh() async {
    let fetch = self.fetch
    await slots.run("feed") { @MainActor [weak self] in
      let result = await fetch(0)
      guard let self, !Task.isCancelled, case .success(let page) = result else { return }
      self.items = page
    }?.value
  }
}
// endregion: naive-pull-to-refresh

// region: pull-to-refresh
/// Fixed: `runAndWait` starts the run and returns what it returned once it has ended, and the
/// caller's cancellation cancels it. `.task { await model.refresh() }` loads the first page;
/// `.refreshable { await model.refresh() }` keeps SwiftUI's spinner until the load has ended; a
/// second pull replaces the first (latest wins), and the first pull's `refresh()` returns `nil`
/// once its cancelled run has ended. When the screen leaves, SwiftUI cancels the caller, and the
/// run with it. A superseded or cancelled run's page and failure reach no one: the model writes
/// what it gets, with no check of its own.
@MainActor @Observable
public final class RefreshableFeedModel {
  public private(set) var items: [String] = []
  public private(set) var failure: String?
  @ObservationIgnored private let fetch: FetchPage
  @ObservationIgnored private let slots = TaskSlots<String>()

  public init(fetch: @escaping FetchPage) { self.fetch = fetch }

  public func refresh() async {
    let fetch = self.fetch
    do {
      guard let page = try await slots.runAndWait("feed", operation: { try await fetch(0).get() }) else { return }
      items = page
      failure = nil
    } catch {
      failure = "\(error)"
    }
  }
}
// endregion: pull-to-refresh

/// The two feed screens, as one scenario sees them.
@MainActor
public protocol RefreshableFeed: AnyObject, Sendable {
  init(fetch: @escaping FetchPage)
  var items: [String] { get }
  func refresh() async
}

extension NaiveRefreshableFeedModel: RefreshableFeed {}
extension RefreshableFeedModel: RefreshableFeed {}

// region: explore-pull-to-refresh
/// The feed screen appears (`.task`), then the user pulls to refresh twice; each entry point runs
/// in a task of its own, as SwiftUI gives it, and a cancellation point is the screen leaving while
/// they await. The stub ignores cancellation, as a request already on the wire does: a cancelled
/// run still gets its page, late, and must not write it.
public func pullToRefreshExploration<Feed: RefreshableFeed>(_ feed: Feed.Type) -> Exploration<Feed> {
  Exploration("pull to refresh, \(Feed.self)") { run in
    let pages = Pages()
    answerFromAChangingFeed(pages, in: run)
    return Feed(fetch: run.stub(pages))
  }
  .step("appear") { await $0.refresh() }
  .step("pull to refresh") { await $0.refresh() }
  .step("pull to refresh") { await $0.refresh() }
  .state { "items \($0.items)" }
  .invariant("one list, in order") { isOneListInOrder($0.items) }
}
// endregion: explore-pull-to-refresh
