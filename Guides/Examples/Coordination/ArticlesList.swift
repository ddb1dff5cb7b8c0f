import AsyncFlow

/// What a list request depends on; frozen when the request starts.
public struct ArticlesQuery: Hashable, Sendable {
  public var category: String
  public var keyword: String

  public init(category: String, keyword: String = "") {
    self.category = category
    self.keyword = keyword
  }
}

public typealias FetchArticles = @Sendable (ArticlesQuery) async -> Result<[String], any Error>

// region: naive-articles
/// As people first write it: every entry point starts its own load, and whichever returns last
/// writes the list, even if it answers an older query.
@MainActor
public final class NaiveArticlesModel {
  public private(set) var articles: [String] = []
  public private(set) var query = ArticlesQuery(category: "all")
  public private(set) var finishedLoads = 0
  private let fetch: FetchArticles

  public init(fetch: @escaping FetchArticles) { self.fetch = fetch }

  public func onAppear() { Task { await load() } }
  public func refresh() { Task { await load() } }
  public func retry() { Task { await load() } }
  public func categoryChanged(_ category: String) {
    query.category = category
    Task { await load() }
  }
  public func keywordChanged(_ keyword: String) {
    query.keyword = keyword
    Task { await load() }
  }

  private func load() async {
    defer { finishedLoads += 1 }
    if case .success(let articles) = await fetch(query) {
      self.articles = articles  // the last response to arrive wins
    }
  }
}
// endregion: naive-articles

// region: fixed-articles
/// Fixed: five entry points funnel into one `reload()`; the context is frozen when the request
/// starts; a new request cancels the one in flight; a result is written only if its context is
/// still current, and a cancelled load writes nothing.
@MainActor
public final class ArticlesModel {
  public private(set) var articles: [String] = []
  public private(set) var query = ArticlesQuery(category: "all")
  public private(set) var finishedLoads = 0
  private let fetch: FetchArticles
  private let slots = TaskSlots<String>()

  public init(fetch: @escaping FetchArticles) { self.fetch = fetch }

  public func onAppear() { reload() }
  public func refresh() { reload() }
  public func retry() { reload() }
  public func categoryChanged(_ category: String) {
    query.category = category
    reload()
  }
  public func keywordChanged(_ keyword: String) {
    query.keyword = keyword
    reload()
  }

  /// The single entry: what replaces what is decided here, once.
  public func reload() {
    let context = query  // frozen: later changes do not alter this request
    let fetch = self.fetch
    // Weak: a request in flight must not keep a closed screen's model alive. When the model goes,
    // its `TaskSlots` goes with it and cancels the request.
    slots.run("articles", policy: .latestWins) { @MainActor [weak self] in
      defer { self?.finishedLoads += 1 }
      let result = await fetch(context)
      // Still valid? Not if it was superseded, if the query moved on, or if the model is gone.
      guard let self, !Task.isCancelled, context == self.query, case .success(let articles) = result else { return }
      self.articles = articles
    }
  }
}
// endregion: fixed-articles
