import AsyncFlow
import Observation
import TypeCheckSupport

// The rest of the corpus: 12-step chains (judged by their ratio, not the 150 ms guard), issue 39's
// search and combined pipelines, the flattening operators with each failure combination of
// Guides/Flattening.md's table, combining followed by a switch, a main-actor model, and the
// guides' headline pipelines (as in Guides/Examples, on this file's types). Format and baseline
// rules: see Chains.swift.

// pipeline: mixed12 (12 steps) — issue 39's mixed12
public func mixed12(_ input: Flow<Int, Never>) -> some AsyncSequence<String, Never> & Sendable {
  input.map { $0 + 1 }.filter { $0 % 2 == 0 }.map { $0 * 3 }
    .removeDuplicatesFlow().scanFlow(0) { $0 + $1 }
    .map { $0 - 1 }.filter { $0 > 10 }.compactMap { $0 % 5 == 0 ? nil : $0 }
    .map { String($0) }.removeDuplicatesFlow().map { $0 + "!" }.filter { !$0.isEmpty }
}

// pipeline: chain12 (12 steps) — settle, search, count, total
// baseline: switchToLatestFlow=oneSwitchToLatestNE
public func chain12(_ text: Flow<String, Never>, client: SearchClient) -> some AsyncSequence<Int, Never> & Sendable {
  text.map { $0.lowercased() }.filter { $0.count > 1 }.debounceFlow(for: .milliseconds(300))
    .removeDuplicatesFlow()
    .switchToLatestFlow { query in client.results(query).asLoadState() }
    .compactMap { $0.value }.map { $0.count }.filter { $0 > 0 }
    .scanFlow(0) { $0 + $1 }.map { $0 * 2 }.removeDuplicatesFlow().map { $0 - 1 }
}

// pipeline: search (6 steps) — issue 39's search
// baseline: switchToLatestFlow=oneSwitchToLatestNE
public func search(_ queries: Flow<String, Never>, client: SearchClient) -> some AsyncSequence<[Article], any Error>
  & Sendable
{
  queries.map { $0.lowercased() }.filter { $0.count > 1 }
    .debounceFlow(for: .milliseconds(300)).removeDuplicatesFlow()
    .switchToLatestFlow { q in Flow<[Article], any Error>.single { try await client.search(q) } }
    .map { withTitles($0) }
}

// pipeline: combined (6 steps) — issue 39's combined
// baseline: switchToLatestFlow=oneSwitchToLatestNE
public func combined(
  _ a: Flow<String, Never>, _ b: Flow<Int, Never>, client: SearchClient
) -> some AsyncSequence<[Article], any Error> & Sendable {
  Flow.combineLatest(a, b).map { q, page in "\(q)#\(page)" }.removeDuplicatesFlow()
    .switchToLatestFlow { q in Flow<[Article], any Error>.single { try await client.search(q) } }
    .map { $0.count }.map { placeholders($0) }
}

// pipeline: flatNE (6 steps) — flattening, outer Never, inner SearchError: switchToLatestFlow
// baseline: switchToLatestFlow=oneSwitchToLatestNE
public func flatNE(_ queries: Flow<String, Never>, client: SearchClient) -> some AsyncSequence<Int, SearchError>
  & Sendable
{
  queries.map { $0.lowercased() }.filter { $0.count > 1 }.removeDuplicatesFlow()
    .switchToLatestFlow { query in client.results(query) }
    .map { $0.count }.filter { $0 > 0 }
}

// pipeline: flatNN (6 steps) — flattening, outer Never, inner Never: exhaustFlow
// baseline: exhaustFlow=oneExhaustNE
public func flatNN(_ taps: Flow<Int, Never>, client: SearchClient) -> some AsyncSequence<String, Never> & Sendable {
  taps.filter { $0 > 0 }.map { $0 * 2 }
    .exhaustFlow { page in client.page(page).asLoadState() }
    .compactMap { $0.value }.map { titles($0) }.map { $0.joined(separator: ", ") }
}

// pipeline: flatFF (6 steps) — flattening, outer APIError, inner APIError: mergeFlow
// baseline: mergeFlow=oneMergeFF
public func flatFF(_ pages: Flow<[Article], APIError>, client: SearchClient) -> some AsyncSequence<Int, APIError>
  & Sendable
{
  pages.filter { !$0.isEmpty }.map { withTitles($0) }
    .mergeFlow(maxConcurrent: 4) { page in Flow.sequence(page).setFailureType(to: APIError.self) }
    .map { $0.id }.filter { $0 > 0 }.removeDuplicatesFlow()
}

// pipeline: flatFN (6 steps) — flattening, outer APIError, inner Never: concatFlow
// baseline: concatFlow=oneConcatFN
public func flatFN(_ pages: Flow<[Article], APIError>) -> some AsyncSequence<String, APIError> & Sendable {
  pages.filter { !$0.isEmpty }.concatFlow { rows in Flow.sequence(rows) }
    .map { $0.title }.filter { !$0.isEmpty }.map { $0.uppercased() }.removeDuplicatesFlow()
}

// pipeline: flatAE (5 steps) — flattening, outer any Error, inner Never: switchToLatestFlow(by:)
// baseline: switchToLatestFlow=oneSwitchToLatestFN
public func flatAE(
  _ reloads: Flow<Article, any Error>, client: SearchClient
) -> some AsyncSequence<String, any Error> & Sendable {
  reloads.filter { $0.id > 0 }
    .switchToLatestFlow(by: { $0.id }) { row in client.article(row.id) }
    .compactMap { $0 }.map { $0.title }.removeDuplicatesFlow()
}

// pipeline: combineSwitch (6 steps) — two fields combined, then the newest request wins
// baseline: switchToLatestFlow=oneSwitchToLatestNE
public func combineSwitch(
  query: CurrentValueFlow<String>, page: CurrentValueFlow<Int>, client: SearchClient
) -> some AsyncSequence<Int, Never> & Sendable {
  Flow.combineLatest(query, page).filter { query, _ in !query.isEmpty }.map { query, page in "\(query)&page=\(page)" }
    .removeDuplicatesFlow()
    .switchToLatestFlow { request in client.results(request).asLoadState() }
    .compactMap { $0.value?.count }
}

// pipeline: modelAssign (6 steps) — a @MainActor model's pipeline, written into it with assignFlow
// baseline: switchToLatestFlow=oneSwitchToLatestNE
@MainActor
public final class ResultsModel {
  public var shown: [String] = []
  private var subscriptions = Set<FlowSubscription>()
  public init() {}

  public func bind(_ text: Flow<String, Never>, client: SearchClient) {
    text.map { $0.lowercased() }.debounceFlow(for: .milliseconds(300)).removeDuplicatesFlow()
      .switchToLatestFlow { query in client.results(query).asLoadState() }
      .compactMap { $0.value }.map { titles($0) }
      .assignFlow(to: \.shown, on: self).store(in: &subscriptions)
  }
}

// pipeline: guideSearches (3 steps) — GettingStarted.md: catch inside each search
// baseline: switchToLatestFlow=oneSwitchToLatestNE
public func guideSearches(_ queries: Flow<String, Never>, client: SearchClient) -> some AsyncSequence<[Article], Never>
  & Sendable
{
  queries
    .map { query in client.results(query) }
    .catchInner { _ in Flow.just([Article]()) }
    .switchToLatestFlow()
}

// pipeline: guideFlattening (2 steps) — Flattening.md: reads latest-wins, writes first-wins
// baseline: switchToLatestFlow=oneSwitchToLatestNE exhaustFlow=oneExhaustNE
public func guideFlattening(
  queries: PassthroughFlow<String, Never>, payTaps: PassthroughFlow<Void, Never>, client: SearchClient,
  pay: @escaping @Sendable () async -> String
) -> (
  results: some AsyncSequence<LoadState<[Article], SearchError>, Never> & Sendable,
  receipts: some AsyncSequence<String, Never> & Sendable
) {
  let results = queries.switchToLatestFlow { query in client.results(query).asLoadState() }
  let receipts = payTaps.exhaustFlow { _ in Flow<String, Never> { emitter in await emitter.emit(await pay()) } }
  return (results, receipts)
}

// pipeline: guideSearchBox (4 steps) — Time.md: settle, retry, states
// baseline: switchToLatestFlow=oneSwitchToLatestNE
public func guideSearchBox<C: Clock>(
  _ text: some AsyncSequence<String, Never> & Sendable, client: SearchClient, clock: C
) -> some AsyncSequence<LoadState<[Article], SearchError>, Never> & Sendable where C.Duration == Duration {
  text
    .debounceFlow(for: .milliseconds(300), clock: clock)
    .switchToLatestFlow { query in
      client.results(query)
        .retryWithBackoff(maxRetries: 3, initialDelay: .seconds(1), clock: clock)
        .asLoadState()
    }
}

// pipeline: guideSearchField (2 steps) — HotSources.md: a subject, a switch, a main-actor sink
// baseline: switchToLatestFlow=oneSwitchToLatestNE
@MainActor
public final class SearchFieldModel {
  public private(set) var state: LoadState<[Article], SearchError> = .idle
  public let searchText = PassthroughFlow<String, Never>()
  private var subscriptions = Set<FlowSubscription>()

  public init(client: SearchClient) {
    searchText
      .switchToLatestFlow { client.results($0).asLoadState() }
      .sink { @MainActor [weak self] state in self?.state = state }
      .store(in: &subscriptions)
  }
}

// pipeline: guideSignUp (2 steps) — Combining.md: a form's Submit button
public final class SignUpForm: Sendable {
  public let email = CurrentValueFlow("")
  public let password = CurrentValueFlow("")
  public init() {}

  public var canSubmit: Flow<Bool, Never> {
    Flow(Flow.combineLatest(email, password)).map { email, password in
      email.contains("@") && password.count >= 8
    }
  }
}

// pipeline: guideObservedSearch (5 steps) — Observation.md: an @Observable model's search
// baseline: switchToLatestFlow=oneSwitchToLatestNE
@MainActor @Observable
public final class ObservedSearchModel {
  public var query = ""
  public private(set) var results: LoadState<[String], SearchError> = .idle
  @ObservationIgnored private let search: @Sendable (String) async throws(SearchError) -> [String]
  @ObservationIgnored private var subscriptions = Set<FlowSubscription>()

  public init(search: @escaping @Sendable (String) async throws(SearchError) -> [String]) {
    self.search = search
  }

  public func start() {
    let search = self.search
    Flow.observing(\.query, on: self)
      .debounceFlow(for: .milliseconds(300))
      .removeDuplicatesFlow()
      .filter { !$0.isEmpty }
      .switchToLatestFlow { query in
        Flow.single { () throws(SearchError) in try await search(query) }.asLoadState()
      }
      .assignFlow(to: \.results, on: self)
      .store(in: &subscriptions)
  }
}
