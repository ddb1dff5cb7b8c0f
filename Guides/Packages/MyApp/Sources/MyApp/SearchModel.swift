import AsyncFlow

/// The smallest app model on AsyncFlow: the latest query wins, a failure is a value.
@MainActor
public final class SearchModel {
  public private(set) var results: LoadState<[String], any Error> = .loading
  private let queries = PassthroughFlow<String, Never>()
  private var subscription: FlowSubscription?

  public init(search: @escaping @Sendable (String) async throws -> [String]) {
    subscription = queries
      .switchToLatestFlow { query in Flow.single { try await search(query) }.asLoadState() }
      .sink { @MainActor [weak self] state in self?.results = state }
  }

  public func type(_ query: String) { queries.send(query) }
}
