import AsyncFlow
import AsyncFlowTesting
import Testing

/// The flattening operators' "no stale result" promise, checked where users rely on it: in a
/// `@MainActor` model fed by user input, under every order in which its requests can be answered
/// (and every point at which the screen can be left). Each model records every write that does not
/// belong to the input the user gave last: a superseded request's success, failure or fallback
/// reaching the model. The stubs do not answer a cancelled call by themselves, so a superseded
/// request's answer arrives late, in every order, as a slow server's would.
@Suite("User models under the explorer", .hangGuard)
@MainActor
struct UserModelExplorationTests {
  struct SearchFailure: Error, Equatable {
    let query: String
  }

  typealias Searches = ControlledCalls<String, Result<String, SearchFailure>>

  /// Every search answered either way: its result, or a failure naming its query.
  static func searches(in run: ExplorationRun) -> @Sendable (String) async -> Result<String, SearchFailure> {
    let searches = Searches()
    run.answer(
      searches, as: "search",
      eitherOf: { call in
        [.success("r(\(call.argument))"), .failure(SearchFailure(query: call.argument))]
      })
    return run.stub(searches)
  }

  /// Whether `state` answers `query` (idle and loading answer every query).
  static func answers(_ state: LoadState<String, SearchFailure>, _ query: String) -> Bool {
    switch state {
    case .idle, .loading: true
    case .loaded(let value): value == "r(\(query))"
    case .failed(let failure): failure.query == query
    }
  }

  /// A search field: each query replaces the last, and its request is shown as a `LoadState`.
  @MainActor final class SearchModel {
    private(set) var query = ""
    private(set) var stale: [String] = []
    var state: LoadState<String, SearchFailure> = .idle {
      didSet { if !answers(state, query) { stale.append("\(state) while \(query)") } }
    }
    private let queries = PassthroughFlow<String, Never>()
    private var subscriptions = Set<FlowSubscription>()

    func start(search: @escaping @Sendable (String) async -> Result<String, SearchFailure>) {
      queries
        .switchToLatestFlow { query in
          Flow.single { () throws(SearchFailure) in try await search(query).get() }.asLoadState()
        }
        .assignFlow(to: \.state, on: self)
        .store(in: &subscriptions)
    }

    func type(_ query: String) {
      self.query = query
      queries.send(query)
    }
  }

  @Test func aSupersededSearchsAnswerNeverReachesTheModel() async {
    let report = await Exploration("switchToLatestFlow + asLoadState") { run in
      let model = SearchModel()
      let search = Self.searches(in: run)
      await run.clock.onSchedule { model.start(search: search) }
      return model
    }
    .step("type a") { $0.type("a") }
    .step("type ab") { $0.type("ab") }
    .state { "state \($0.state) stale \($0.stale)" }
    .invariant("no stale write") { $0.stale.isEmpty }
    .invariant("shows the last query's outcome") { $0.state.value != nil || $0.state.failure != nil }
    .check()
    #expect(report.isExhaustive)
  }

  /// A debounced field whose request is retried once, its last failure shown as a fallback.
  @MainActor final class RetryingSearchModel {
    /// The query of the last request that began: what the model may show from then on.
    private(set) var searched = ""
    private(set) var stale: [String] = []
    var result = "" {
      didSet { if !result.hasSuffix("(\(searched))") { stale.append("\(result) after searching \(searched)") } }
    }
    private let queries = PassthroughFlow<String, Never>()
    private var subscriptions = Set<FlowSubscription>()

    func start(clock: TestClock, search: @escaping @Sendable (String) async -> Result<String, SearchFailure>) {
      queries
        .debounceFlow(for: .seconds(1), clock: clock)
        .map { [weak self] query in
          Flow.single { () throws(SearchFailure) in
            await MainActor.run { self?.searched = query }
            return try await search(query).get()
          }
          .retryWithBackoff(maxRetries: 1, initialDelay: .seconds(2), clock: clock)
        }
        .catchInner { failure in Flow<String, Never>.just("fallback(\(failure.query))") }
        .switchToLatestFlow()
        .assignFlow(to: \.result, on: self)
        .store(in: &subscriptions)
    }

    func type(_ query: String) { queries.send(query) }
  }

  @Test func aSupersededRetryOrFallbackNeverReachesTheModel() async {
    let report = await Exploration("debounceFlow + retryWithBackoff + catchInner + switchToLatestFlow") { run in
      let model = RetryingSearchModel()
      let search = Self.searches(in: run)
      await run.clock.onSchedule { model.start(clock: run.clock, search: search) }
      return model
    }
    .step("type a") { $0.type("a") }
    .step("type ab") { $0.type("ab") }
    .state { "result \($0.result) stale \($0.stale)" }
    .invariant("no stale write") { $0.stale.isEmpty }
    .invariant("shows the last query's outcome") { $0.result == "r(ab)" || $0.result == "fallback(ab)" }
    .check(ExplorationBudget(orders: 30, samples: 10, cancellationOrders: 1))
    #expect(report.runs > 30)
  }

  /// A list loaded for a filter and a refresh count, combined: either one starts a new load.
  @MainActor final class FilteredListModel {
    private(set) var key = "all#0"
    private(set) var stale: [String] = []
    var state: LoadState<String, SearchFailure> = .idle {
      didSet { if !answers(state, key) { stale.append("\(state) while \(key)") } }
    }
    private let filter = CurrentValueFlow("all")
    private let refreshes = CurrentValueFlow(0)
    private var subscriptions = Set<FlowSubscription>()

    func start(search: @escaping @Sendable (String) async -> Result<String, SearchFailure>) {
      Flow.combineLatest(filter, refreshes)
        .switchToLatestFlow { filter, refresh in
          Flow.single { () throws(SearchFailure) in try await search("\(filter)#\(refresh)").get() }.asLoadState()
        }
        .assignFlow(to: \.state, on: self)
        .store(in: &subscriptions)
    }

    func filterChanged(_ value: String) {
      key = "\(value)#\(refreshes.value)"
      filter.send(value)
    }

    func refresh() {
      key = "\(filter.value)#\(refreshes.value + 1)"
      refreshes.send(refreshes.value + 1)
    }
  }

  @Test func aLoadForAnOlderFilterOrRefreshNeverReachesTheModel() async {
    let report = await Exploration("combineLatest of CurrentValueFlows + switchToLatestFlow") { run in
      let model = FilteredListModel()
      let search = Self.searches(in: run)
      await run.clock.onSchedule { model.start(search: search) }
      return model
    }
    .step("filter swift") { $0.filterChanged("swift") }
    .step("refresh") { $0.refresh() }
    .state { "state \($0.state) stale \($0.stale)" }
    .invariant("no stale write") { $0.stale.isEmpty }
    .invariant("shows the current load's outcome") { $0.state.value != nil || $0.state.failure != nil }
    // Not every one of its 600 orders: enough to meet a stale answer, cheap enough under a sanitizer.
    .check(ExplorationBudget(orders: 40, samples: 10, cancellationOrders: 1))
    #expect(report.runs > 40)
  }

  /// A selection whose details load with `collectLatest`, in a task of the model's `TaskSlots`;
  /// the body checks `Task.isCancelled` after its request, as the documentation asks.
  @MainActor final class SelectionModel {
    private(set) var selected = 0
    private(set) var item = ""
    private(set) var stale: [String] = []
    private let selections = PassthroughFlow<Int, Never>()
    private let slots = TaskSlots<String>()

    func start(load: @escaping @Sendable (Int) async -> String) {
      let selections = self.selections
      slots.run("selection") { @MainActor [weak self] in
        await selections.collectLatest { @MainActor id in
          let item = await load(id)
          guard !Task.isCancelled, let self else { return }
          if item != "item(\(self.selected))" { self.stale.append("\(item) while \(self.selected)") }
          self.item = item
        }
      }
    }

    func select(_ id: Int) {
      selected = id
      selections.send(id)
    }
  }

  @Test func aSupersededCollectLatestBodyNeverWrites() async {
    let report = await Exploration("collectLatest in TaskSlots") { run in
      let loads = ControlledCalls<Int, String>()
      run.answer(loads, as: "load") { "item(\($0))" }
      let model = SelectionModel()
      let load = run.stub(loads)
      await run.clock.onSchedule { model.start(load: load) }
      return model
    }
    .step("select 1") { $0.select(1) }
    .step("select 2") { $0.select(2) }
    .step("select 3") { $0.select(3) }
    .state { "item \($0.item) stale \($0.stale)" }
    .invariant("no stale write") { $0.stale.isEmpty }
    .invariant("shows the selection") { $0.item == "item(\($0.selected))" }
    .check()
    #expect(report.isExhaustive)
  }

  /// Rows whose details reload by row: a newer reload of a row replaces only that row's request.
  @MainActor final class RowsModel {
    struct Reload: Sendable, Hashable, CustomStringConvertible {
      let row: Int
      let version: Int
      var description: String { "\(row)v\(version)" }
    }

    private(set) var requested: [Int: Int] = [:]
    private(set) var details: [Int: String] = [:]
    private(set) var stale: [String] = []
    private let reloads = PassthroughFlow<Reload, Never>()
    private var subscriptions = Set<FlowSubscription>()

    func start(load: @escaping @Sendable (Reload) async -> String) {
      reloads
        .switchToLatestFlow(by: \.row) { reload in Flow.single { (reload, await load(reload)) } }
        .sink { @MainActor [weak self] reload, detail in
          guard let self else { return }
          if self.requested[reload.row] != reload.version { self.stale.append("\(reload) after \(self.requested)") }
          self.details[reload.row] = detail
        }
        .store(in: &subscriptions)
    }

    func reload(row: Int) {
      let version = (requested[row] ?? 0) + 1
      requested[row] = version
      reloads.send(Reload(row: row, version: version))
    }
  }

  @Test func aSupersededReloadOfARowNeverReachesItAndOtherRowsAreLeftAlone() async {
    let report = await Exploration("switchToLatestFlow(by:)") { run in
      let loads = ControlledCalls<RowsModel.Reload, String>()
      run.answer(loads, as: "load") { "\($0)" }
      let model = RowsModel()
      let load = run.stub(loads)
      await run.clock.onSchedule { model.start(load: load) }
      return model
    }
    .step("show row 1") { $0.reload(row: 1) }
    .step("show row 2") { $0.reload(row: 2) }
    .step("reload row 1") { $0.reload(row: 1) }
    .state { "details \($0.details.sorted { $0.key < $1.key }) stale \($0.stale)" }
    .invariant("no stale write") { $0.stale.isEmpty }
    .invariant("every row shows its last reload") { $0.details == [1: "1v2", 2: "2v1"] }
    .check()
    #expect(report.isExhaustive)
  }
}
