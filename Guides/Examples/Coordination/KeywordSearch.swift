import AsyncFlow
import Observation

/// The search of the keyword search screen.
public typealias SearchKeyword = @Sendable (String) async throws(SearchServiceError) -> [String]

// region: naive-keyword-search
/// As people first write it: appear and retry load through a slot, and the keyword has a pipeline
/// of its own (debounce, remove duplicates, switch to latest). Two load paths: a typed keyword
/// does not supersede the appear load, whose late answer then overwrites the keyword's; and
/// `removeDuplicatesFlow` compares a keyword with the last typed one only, so the keyword that
/// appear loaded is loaded again when the debounce lets it through.
@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
@MainActor @Observable
public final class NaiveKeywordSearchModel {
  public var keyword = ""
  public private(set) var results: LoadState<[String], SearchServiceError> = .idle

  @ObservationIgnored private let search: SearchKeyword
  @ObservationIgnored private let clock: AnyFlowClock
  @ObservationIgnored private let slots = TaskSlots<String>()
  @ObservationIgnored private var subscriptions = Set<FlowSubscription>()

  public init(clock: some Clock<Duration> = ContinuousClock(), search: @escaping SearchKeyword) {
    self.clock = AnyFlowClock(clock)
    self.search = search
  }

  public func onAppear() {
    load(keyword)
    guard subscriptions.isEmpty else { return }
    let search = self.search
    Flow.observing(\.keyword, on: self)
      .debounceFlow(for: .milliseconds(300), clock: clock)
      .removeDuplicatesFlow()
      .switchToLatestFlow { keyword in
        Flow.single { () throws(SearchServiceError) in try await search(keyword) }.asLoadState()
      }
      .assignFlow(to: \.results, on: self)
      .store(in: &subscriptions)
  }

  public func retry() { load(keyword) }

  private func load(_ keyword: String) {
    let search = self.search
    slots.run("search") { @MainActor [weak self] in
      self?.results = .loading
      let result: Result<[String], SearchServiceError>
      do throws(SearchServiceError) { result = .success(try await search(keyword)) } catch { result = .failure(error) }
      guard let self, !Task.isCancelled else { return }
      self.results = LoadState(result)
    }
  }
}
// endregion: naive-keyword-search

// region: keyword-search
/// Fixed: the screen appearing, the retry button and the keyword the user types (once the typing
/// pauses) run one load path under one latest-wins identity. Each supersedes the load in flight,
/// whichever entry point started it; a typed keyword equal to the last one asked for, by any of
/// them, loads nothing; a retry loads, even the keyword that just failed.
@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
@MainActor @Observable
public final class KeywordSearchModel {
  public var keyword = ""
  public private(set) var results: LoadState<[String], SearchServiceError> = .idle

  @ObservationIgnored private let search: SearchKeyword
  @ObservationIgnored private let clock: AnyFlowClock
  @ObservationIgnored private let slots = TaskSlots<String>()
  /// The typed keywords, fed into the slot: owned by the model, so the feeding ends with it.
  @ObservationIgnored private var typing: FlowSubscription?

  public init(clock: some Clock<Duration> = ContinuousClock(), search: @escaping SearchKeyword) {
    self.clock = AnyFlowClock(clock)
    self.search = search
  }

  /// Loads the current keyword, then each keyword typed once the typing pauses.
  public func onAppear() {
    slots.run("search", request: keyword, trigger: "appear", operation: load)
    guard typing == nil else { return }
    typing = Flow.observing(\.keyword, on: self)
      .debounceFlow(for: .milliseconds(300), clock: clock)
      .runEach(in: slots, id: "search", trigger: "typing", operation: load)
  }

  /// Loads the keyword again, even if it is the last one asked for.
  public func retry() {
    slots.run("search", request: keyword, trigger: "retry", operation: load)
  }

  /// The one load path: what a run does with its keyword, whichever entry point started it. A
  /// superseded run is cancelled, and writes nothing.
  private var load: @Sendable @MainActor (String) async -> Void {
    let search = self.search
    return { [weak self] keyword in
      self?.results = .loading
      let result: Result<[String], SearchServiceError>
      do throws(SearchServiceError) { result = .success(try await search(keyword)) } catch { result = .failure(error) }
      guard let self, !Task.isCancelled else { return }
      self.results = LoadState(result)
    }
  }
}
// endregion: keyword-search

/// The two keyword search screens, as one scenario sees them.
@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
@MainActor
public protocol KeywordSearchScreen: AnyObject {
  init(clock: some Clock<Duration>, search: @escaping SearchKeyword)
  var keyword: String { get set }
  var results: LoadState<[String], SearchServiceError> { get }
  func onAppear()
  func retry()
}

@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
extension NaiveKeywordSearchModel: KeywordSearchScreen {}
@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
extension KeywordSearchModel: KeywordSearchScreen {}
