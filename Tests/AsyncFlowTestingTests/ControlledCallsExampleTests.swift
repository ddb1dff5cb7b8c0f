import AsyncFlow
import AsyncFlowTesting
import Testing

/// The `ControlledCalls` documentation example, compiled and run: the model, as apps write it,
/// starts each search in a `TaskSlots` slot (the newest wins) and writes the results on the main
/// actor; the test calls it directly, on the clock.
private struct SearchError: Error, Equatable {}

@MainActor
private final class SearchModel {
  private(set) var results: [String] = []
  private let slots = TaskSlots<String>()
  private let search: @Sendable (String) async throws -> [String]

  init(search: @escaping @Sendable (String) async throws -> [String]) { self.search = search }

  func queryChanged(_ query: String) {
    slots.run("search") { @MainActor [weak self, search] in
      let found = try? await search(query)
      // A superseded search is cancelled: its answer, whenever it comes, is not shown.
      guard !Task.isCancelled, let found else { return }
      self?.results = found
    }
  }
}

@Suite("The ControlledCalls example", .hangGuard)
struct ControlledCallsExampleTests {
  /// The example as its doc comment shows it, run 100 times at once (the cases run in parallel).
  @Test(.onTestClock, arguments: 0..<100) @MainActor func theLatestQueryWins(_ case: Int) async {
    let clock = TestClock.current
    let search = ControlledCalls<String, Result<[String], SearchError>>()
    let model = SearchModel { query in try await search.call(query).get() }
    model.queryChanged("sw")
    await search.calls(count: 1)  // the first request is on the wire...
    model.queryChanged("swift")  // ...when the query changes
    await search.parked(count: 2)  // both requests are in flight
    search.respond(to: "swift", with: .success(["swift"]))
    await clock.runCurrent()
    #expect(model.results == ["swift"])
    search.respond(to: "sw", with: .success(["sw"]))  // the old answer arrives last...
    await clock.runCurrent()
    #expect(model.results == ["swift"])  // ...and must not win
    #expect(search.log.map(\.wasCancelled) == [true, false])
  }
}
