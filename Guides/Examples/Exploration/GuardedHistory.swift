import AsyncFlow

// region: naive-guarded-history
/// The history list as first written, with the guards that look like they prevent races: a
/// load-more needs a loaded list, paging still on, and no other load-more running. They protect
/// `loadMore` from itself only: a refresh that completes while a load-more is suspended gets that
/// load-more's page, fetched at the old list's offset, appended to the new list.
@MainActor
public final class NaiveGuardedHistoryModel {
  public private(set) var items: [String] = []
  public private(set) var hasMore = true
  public private(set) var isLoaded = false
  private var isLoadingMore = false
  private let fetch: FetchPage

  public init(fetch: @escaping FetchPage) { self.fetch = fetch }

  /// Pull-to-refresh (from `.refreshable`) and the first load (from `.task`).
  public func refresh() async {
    if case .success(let page) = await fetch(0) {
      items = page
      hasMore = true
      isLoaded = true
    }
  }

  /// The end of the list came into view (a `.task` on the last row).
  public func loadMore() async {
    guard hasMore, !isLoadingMore, isLoaded else { return }
    isLoadingMore = true
    defer { isLoadingMore = false }
    switch await fetch(items.count) {
    case .success(let page): items += page  // whatever list `items` has become meanwhile
    case .failure: hasMore = false
    }
  }
}
// endregion: naive-guarded-history
