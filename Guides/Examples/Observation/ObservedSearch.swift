import AsyncFlow
import Observation

/// The failure of the search service in the Observation guide.
public struct SearchServiceError: Error, Equatable, Sendable {
  public init() {}
}

// region: observed-search-model
/// A search screen's model: the field writes `query`; the model debounces it, skips repeats and
/// empty text, searches with the newest query only (an older answer can never overwrite a newer
/// one), and shows each search as a `LoadState`. A failed search is a state, not the end.
@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
@MainActor @Observable
public final class ObservedSearchModel {
  public var query = ""
  public private(set) var results: LoadState<[String], SearchServiceError> = .idle

  @ObservationIgnored private let search: @Sendable (String) async throws(SearchServiceError) -> [String]
  @ObservationIgnored private let clock: AnyFlowClock
  /// Owned by the model: when the model goes, the pipeline is cancelled with it.
  @ObservationIgnored private var subscriptions = Set<FlowSubscription>()

  /// The clock is injected: `ContinuousClock` in the app, a `TestClock` in tests.
  public init(
    clock: some Clock<Duration> = ContinuousClock(),
    search: @escaping @Sendable (String) async throws(SearchServiceError) -> [String]
  ) {
    self.clock = AnyFlowClock(clock)
    self.search = search
  }

  /// Starts the pipeline; call it once, when the screen appears.
  public func start() {
    let search = self.search
    Flow.observing(\.query, on: self)
      .debounceFlow(for: .milliseconds(300), clock: clock)
      .removeDuplicatesFlow()
      .filter { !$0.isEmpty }
      .switchToLatestFlow { query in
        Flow.single { () throws(SearchServiceError) in try await search(query) }.asLoadState()
      }
      .assignFlow(to: \.results, on: self)
      .store(in: &subscriptions)
  }
}
// endregion: observed-search-model
