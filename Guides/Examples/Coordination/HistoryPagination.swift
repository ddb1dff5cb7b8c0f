import AsyncFlow

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
