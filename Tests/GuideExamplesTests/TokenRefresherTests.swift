import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The token refresher of Coordination.md, in the forced order "five requests get 401 at once":
/// the fixed client refreshes once and all five get its token or its failure; the naive one
/// refreshes five times. Under `.onTestClock` everything runs on the test's clock's executor (the
/// callers, started with `clock.task` because they are five concurrent requests; the actor, whose
/// default executor follows the callers' preference; the single flight's run), so that
/// `runCurrent()` is a barrier.
@Suite("Token refresher and request log examples", .onTestClock, .hangGuard)
struct TokenRefresherTests {
  typealias Sends = ControlledCalls<String, Result<String, APIError>>
  typealias Refreshes = ControlledCalls<Int, Result<String, APIError>>

  /// Five calls of `get` whose first sends all get 401; the refresh is answered with `refreshed`.
  private func fiveUnauthorizedCalls(
    _ get: @escaping @Sendable (String) async -> Result<String?, APIError>, sends: Sends, refreshes: Refreshes,
    clock: TestClock, refreshed: Result<String, APIError>
  ) async -> [Result<String?, APIError>] {
    let paths = (1...5).map { "/items/\($0)" }
    let callers = paths.map { path in clock.task { await get(path) } }
    await sends.calls(count: 5)
    for path in paths { sends.respond(to: "\(path) old", with: .failure(.unauthorized)) }
    await clock.runCurrent()  // every caller has started or joined a refresh
    for index in refreshes.log.indices { refreshes.respond(toCall: index, with: refreshed) }
    await clock.runCurrent()
    if case .success(let token) = refreshed {
      await sends.calls(count: 10)
      for path in paths { sends.respond(to: "\(path) \(token)", with: .success("body of \(path)")) }
    }
    var results: [Result<String?, APIError>] = []
    for caller in callers { if let result = await bounded(caller, "caller") { results.append(result) } }
    return results
  }

  private func stubs() -> (Sends, Refreshes, SendRequest, RefreshToken) {
    let sends = Sends()
    let refreshes = Refreshes()
    return (
      sends, refreshes, { path, token in await sends.call("\(path) \(token)") },
      { await refreshes.call(refreshes.log.count) }
    )
  }

  @Test func fiveRequestsThatGet401AtOnceShareOneRefresh() async {
    let clock = TestClock.current
    let (sends, refreshes, send, refresh) = stubs()
    let client = APIClient(token: "old", send: send, refresh: refresh)
    let results = await fiveUnauthorizedCalls(
      { path in await Result(awaiting: { () throws(APIError) in try await client.get(path) }) }, sends: sends,
      refreshes: refreshes, clock: clock, refreshed: .success("new"))
    #expect(refreshes.log.count == 1)  // exactly one refresh
    #expect(results.map { (try? $0.get()) ?? nil } == (1...5).map { "body of /items/\($0)" as String? })
  }

  @Test func fiveRequestsThatGet401AtOnceShareTheRefreshsFailure() async {
    let clock = TestClock.current
    let (sends, refreshes, send, refresh) = stubs()
    let client = APIClient(token: "old", send: send, refresh: refresh)
    let results = await fiveUnauthorizedCalls(
      { path in await Result(awaiting: { () throws(APIError) in try await client.get(path) }) }, sends: sends,
      refreshes: refreshes, clock: clock, refreshed: .failure(.offline))
    #expect(refreshes.log.count == 1)
    for result in results { #expect(result == .failure(.offline)) }
    #expect(sends.log.count == 5)  // nothing was sent again
  }

  /// A request sent with the old token gets its 401 after the refresh has finished: it is resent
  /// with the new token, and nothing refreshes again.
  @Test func a401AfterTheRefreshFinishedResendsWithTheNewToken() async {
    let clock = TestClock.current
    let (sends, refreshes, send, refresh) = stubs()
    let client = APIClient(token: "old", send: send, refresh: refresh)
    let first = clock.task { await Result(awaiting: { () throws(APIError) in try await client.get("/a") }) }
    let late = clock.task { await Result(awaiting: { () throws(APIError) in try await client.get("/b") }) }
    await sends.calls(count: 2)  // both sent with the old token
    sends.respond(to: "/a old", with: .failure(.unauthorized))
    await refreshes.calls(count: 1)
    refreshes.respond(toCall: 0, with: .success("new"))
    await sends.calls(count: 3)
    sends.respond(to: "/a new", with: .success("a"))
    #expect(await clock.value(of: first) == .success("a"))
    sends.respond(to: "/b old", with: .failure(.unauthorized))  // the late 401
    await sends.calls(count: 4)
    sends.respond(to: "/b new", with: .success("b"))
    #expect(await clock.value(of: late) == .success("b"))
    #expect(refreshes.log.count == 1)  // no second refresh
    #expect(sends.arguments == ["/a old", "/b old", "/a new", "/b new"])
  }

  /// Every caller leaves while a refresh is in flight; a newer refresh stores its token; then the
  /// old refresh returns. Its late token must not replace the newer one.
  @Test func aRefreshEveryCallerLeftDoesNotStoreItsLateToken() async {
    let clock = TestClock.current
    let (sends, refreshes, send, refresh) = stubs()
    let client = APIClient(token: "old", send: send, refresh: refresh)
    let left = clock.task { await Result(awaiting: { () throws(APIError) in try await client.get("/a") }) }
    await sends.calls(count: 1)
    sends.respond(to: "/a old", with: .failure(.unauthorized))
    await refreshes.calls(count: 1)
    left.cancel()  // the only caller of refresh #0 leaves: the refresh is cancelled
    #expect(await clock.value(of: left) == .success(nil))
    let newer = clock.task { await Result(awaiting: { () throws(APIError) in try await client.get("/b") }) }
    await sends.calls(count: 2)
    sends.respond(to: "/b old", with: .failure(.unauthorized))
    await refreshes.calls(count: 2)  // a new refresh, not the cancelled one joined
    refreshes.respond(toCall: 1, with: .success("newer"))
    await sends.calls(count: 3)
    sends.respond(to: "/b newer", with: .success("b"))
    #expect(await clock.value(of: newer) == .success("b"))
    refreshes.respond(toCall: 0, with: .success("late"))  // the old refresh returns last
    await clock.runCurrent()
    let next = clock.task { await Result(awaiting: { () throws(APIError) in try await client.get("/c") }) }
    await sends.calls(count: 4)
    #expect(sends.arguments.last == "/c newer")
    sends.respond(toCall: 3, with: .success("c"))
    #expect(await clock.value(of: next) == .success("c"))
  }

  @Test func theNaiveClientRefreshesOncePerRequest() async {
    let clock = TestClock.current
    let (sends, refreshes, send, refresh) = stubs()
    let client = NaiveAPIClient(token: "old", send: send, refresh: refresh)
    let results = await fiveUnauthorizedCalls(
      { path in await Result(awaiting: { () throws(APIError) in try await client.get(path) }) }, sends: sends,
      refreshes: refreshes, clock: clock, refreshed: .success("new"))
    #expect(refreshes.log.count == 5)  // the bug: five refreshes for one expiry
    #expect(results.allSatisfy { (try? $0.get()) != nil })
  }

  @Test @MainActor func theRequestLogTellsWhatReplacedEachLoad() async {
    let calls = ControlledCalls<String, [String]>(whenCancelled: [])
    let model = LoggedArticlesModel { category in await calls.call(category) }
    model.onAppear()  // #1
    model.categoryChanged("swift")  // #2 supersedes #1
    model.refresh("swift")  // #3 supersedes #2
    // Recorded when `run` decided, before any operation ran; the cancelled runs' ends may follow.
    let lines = model.log.entries.map(\.description).filter { !$0.hasSuffix("cancelled") }
    #expect(
      lines == [
        "#1 articles [appear] started",
        "#1 articles [appear] superseded by #2",
        "#2 articles [category swift] started",
        "#2 articles [category swift] superseded by #3",
        "#3 articles [refresh] started",
      ])
    // Releasing the model cancels #3, whose stub then returns at once.
  }
}

extension Result where Success: Sendable {
  /// The outcome of a typed-throwing call, as a value (for the guide examples' tests).
  init(awaiting body: () async throws(Failure) -> Success) async {
    do throws(Failure) {
      self = .success(try await body())
    } catch {
      self = .failure(error)
    }
  }
}
