// The app that the doc-comment examples are written in, compiled before every example by .ci/doc-examples.py.
// Keep it small and plain: a reader of an example is asked to imagine exactly these names, so each should be
// what the example's wording already suggests (`api.search(query)` searches; `AppError.offline` is an error).
// A name that only one file uses belongs in that file's examples, in view of the reader.
import AsyncFlow

/// The errors the examples' app deals in.
enum AppError: Error, Equatable { case offline, unauthorized }
enum APIError: Error, Equatable { case offline, server(status: Int) }
enum SearchError: Error { case network(APIError), offline }

/// A search result.
struct Item: Sendable, Equatable, Identifiable {
  var id: Int
  var title: String
}

/// The app's network client: each call is a flow that fails with the API's error, or an async call.
struct API: Sendable {
  func search(_ query: String) -> Flow<[Item], SearchError> {
    Flow.just([Item(id: 1, title: query)]).setFailureType(to: SearchError.self)
  }
  func rows() -> Flow<[Item], APIError> { Flow.just([]).setFailureType(to: APIError.self) }
  func upload<Batch: Sendable>(_ batch: Batch) async throws(APIError) {}
  func articles(page: Int) async throws(APIError) -> [Item] { [] }
  func item(_ id: Int) async -> Item? { Item(id: id, title: "item \(id)") }
}

let api = API()

/// A live stock price, as a hot feed several screens share (`shareFlow`); it fails with the API's error.
extension API {
  func priceUpdates() -> Flow<Double, APIError> { Flow.just(101.5).setFailureType(to: APIError.self) }
}

/// The clock that the app's timed operators are given (`clock: clock`); a test passes a `TestClock` instead.
let clock = ContinuousClock()
