import AsyncFlow
import Observation

public typealias FetchPage = @Sendable (_ offset: Int) async -> Result<[String], any Error>

// region: naive-history
/// As people first write it: `loadMore` reads the offset, suspends, and appends to whatever the
/// list has become; a refresh that completes meanwhile gets a stale page appended, and a stale
/// failure switches paging off.
@MainActor
public final class NaiveHistoryModel {
  public private(set) var items: [String] = []
  public private(set) var hasMore = true
  private let fetch: FetchPage

  public init(fetch: @escaping FetchPage) { self.fetch = fetch }

  public func refresh() async {
    if case .success(let page) = await fetch(0) {
      items = page
      hasMore = true
    }
  }

  public func loadMore() async {
    switch await fetch(items.count) {
    case .success(let page): items += page
    case .failure: hasMore = false
    }
  }
}
// endregion: naive-history

// region: fixed-history
/// Fixed: `loadMore` takes its offset and the generation together, with no `await` between;
/// `refresh` advances the generation; a result or a failure of an older generation is dropped.
@MainActor
public final class HistoryModel {
  public private(set) var items: [String] = []
  public private(set) var hasMore = true
  private var generation = Generation()
  private let fetch: FetchPage

  public init(fetch: @escaping FetchPage) { self.fetch = fetch }

  public func refresh() async {
    let token = generation.advance()  // every load-more in flight is stale from here on
    let result = await fetch(0)
    guard generation.isCurrent(token), case .success(let page) = result else { return }
    items = page
    hasMore = true
  }

  public func loadMore() async {
    let (offset, token) = (items.count, generation.current)  // captured together
    let result = await fetch(offset)
    guard generation.isCurrent(token) else { return }  // stale success and stale failure alike
    switch result {
    case .success(let page): items += page
    case .failure: hasMore = false
    }
  }
}
// endregion: fixed-history

// region: load-more-list
/// The history list as an `@Observable` screen model: pull-to-refresh is latest wins (a second
/// pull replaces the first), load-more is first wins (scrolling to the end again while a page
/// loads sends nothing), and both spinners are right at every moment.
///
/// A refresh that writes a new first page also cancels the load-more in flight, in the same
/// main-actor step: the old page is for a list that no longer exists, and the user may load the
/// new list's next page at once. A cancelled run writes nothing, success or failure alike, so
/// here the slots alone keep stale pages out; `HistoryModel` above needs a `Generation` because
/// nothing relates its refresh to its load-more.
@MainActor @Observable
public final class LoadMoreListModel {
  public enum Work: Hashable, Sendable { case refresh, loadMore }

  public private(set) var items: [String] = []
  public private(set) var hasMore = true
  /// Bound to the refresh slot's running state: stays on while one pull replaces another.
  public private(set) var isRefreshing = false
  /// Kept by the load-more runs, with their token: a cancelled run's cleanup leaves its
  /// successor's spinner alone.
  public private(set) var isLoadingMore = false

  @ObservationIgnored private let fetch: FetchPage
  @ObservationIgnored private let slots = TaskSlots<Work>()
  @ObservationIgnored private var subscriptions = Set<FlowSubscription>()

  public init(fetch: @escaping FetchPage) { self.fetch = fetch }

  /// Binds the refresh spinner; call it once, when the screen appears.
  public func start() {
    slots.isRunningFlow(.refresh).assignFlow(to: \.isRefreshing, on: self).store(in: &subscriptions)
  }

  /// The first load, and pull-to-refresh.
  public func refresh() {
    let fetch = self.fetch
    slots.run(.refresh) { @MainActor [weak self] in
      let result = await fetch(0)
      // Superseded by a newer pull, or the screen is gone: write nothing.
      guard let self, !Task.isCancelled, case .success(let page) = result else { return }
      // The load-more in flight fetched a page of the list being replaced: cancel it (its run writes
      // nothing now) and turn its spinner off; a new load-more may start at once.
      self.slots.cancel(.loadMore)
      self.isLoadingMore = false
      self.items = page
      self.hasMore = true
    }
  }

  /// The end of the list came into view.
  public func loadMore() {
    guard hasMore else { return }
    let (fetch, offset) = (self.fetch, items.count)  // the offset of the list as it is now
    let started = slots.run(.loadMore, policy: .firstWins) { @MainActor [weak self] run in
      defer { if run.isLatest { self?.isLoadingMore = false } }
      let result = await fetch(offset)
      guard let self, !Task.isCancelled else { return }  // a stale page and a stale failure alike
      switch result {
      case .success(let page): self.items += page
      case .failure: self.hasMore = false
      }
    }
    // On at once, outside the run: a run cancelled before its operation starts runs no cleanup, but
    // the one place that cancels a load-more, `refresh`, turns the spinner off itself.
    if started != nil { isLoadingMore = true }
  }
}
// endregion: load-more-list
