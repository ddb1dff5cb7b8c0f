import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The token retry of ErrorHandling.md: the refresh runs inside `retryWithBackoff`'s decision.
/// Under `.onTestClock` the callers, the actor and the single flight's run all follow the test's
/// clock, so that `runCurrent()` is a barrier.
@Suite("Token retry example", .onTestClock, .hangGuard)
struct TokenRetryTests {
  typealias Sends = ControlledCalls<String, Result<String, APIError>>
  typealias Refreshes = ControlledCalls<Int, Result<String, APIError>>

  private func client(_ sends: Sends, _ refreshes: Refreshes) -> RetryingAPIClient {
    RetryingAPIClient(
      token: "old", send: { path, token in await sends.call("\(path) \(token)") },
      refresh: { await refreshes.call(refreshes.log.count) })
  }

  /// The body, or the failure, of one `get`.
  private func body(_ client: RetryingAPIClient, _ path: String) async -> Result<[String], RequestFailure> {
    var bodies: [String] = []
    do throws(RequestFailure) {
      for try await body in client.get(path) { bodies.append(body) }
      return .success(bodies)
    } catch {
      return .failure(error)
    }
  }

  /// Five calls whose first sends all get 401 before the refresh answers `refreshed`.
  private func fiveUnauthorizedCalls(
    _ client: RetryingAPIClient, sends: Sends, refreshes: Refreshes, refreshed: Result<String, APIError>
  ) async -> [Result<[String], RequestFailure>] {
    let clock = TestClock.current
    let paths = (1...5).map { "/items/\($0)" }
    let callers = paths.map { path in clock.task { await body(client, path) } }
    await sends.calls(count: 5)
    for path in paths { sends.respond(to: "\(path) old", with: .failure(.unauthorized)) }
    await clock.runCurrent()  // every caller's decision has started or joined the refresh
    #expect(refreshes.log.count == 1)
    refreshes.respond(toCall: 0, with: refreshed)
    await clock.runCurrent()
    if case .success(let token) = refreshed {
      await sends.calls(count: 10)
      for path in paths { sends.respond(to: "\(path) \(token)", with: .success("body of \(path)")) }
    }
    var results: [Result<[String], RequestFailure>] = []
    for caller in callers { if let result = await bounded(caller, "caller") { results.append(result) } }
    return results
  }

  @Test func fiveCallersFailingAtOnceShareOneRefreshAndGoAgain() async {
    let (sends, refreshes) = (Sends(), Refreshes())
    let results = await fiveUnauthorizedCalls(
      client(sends, refreshes), sends: sends, refreshes: refreshes, refreshed: .success("new"))
    #expect(refreshes.log.count == 1)
    #expect(results == (1...5).map { .success(["body of /items/\($0)"]) })
  }

  @Test func aRefreshThatFailsEndsEveryCallerWithItsFailureAndNoRetry() async {
    let (sends, refreshes) = (Sends(), Refreshes())
    let results = await fiveUnauthorizedCalls(
      client(sends, refreshes), sends: sends, refreshes: refreshes, refreshed: .failure(.offline))
    #expect(refreshes.log.count == 1)
    #expect(results == Array(repeating: .failure(.offline), count: 5))
    #expect(sends.log.count == 5)  // nothing was sent again
  }

  /// A request sent with the old token gets its 401 after the refresh has ended: it goes again
  /// with the new token, and nothing refreshes again.
  @Test func a401ForATokenAlreadyReplacedResendsWithoutARefresh() async {
    let clock = TestClock.current
    let (sends, refreshes) = (Sends(), Refreshes())
    let client = client(sends, refreshes)
    let first = clock.task { await body(client, "/a") }
    let late = clock.task { await body(client, "/b") }
    await sends.calls(count: 2)
    sends.respond(to: "/a old", with: .failure(.unauthorized))
    await refreshes.calls(count: 1)
    refreshes.respond(toCall: 0, with: .success("new"))
    await sends.calls(count: 3)
    sends.respond(to: "/a new", with: .success("a"))
    #expect(await clock.value(of: first) == .success(["a"]))
    sends.respond(to: "/b old", with: .failure(.unauthorized))
    await sends.calls(count: 4)
    sends.respond(to: "/b new", with: .success("b"))
    #expect(await clock.value(of: late) == .success(["b"]))
    #expect(refreshes.log.count == 1)
  }

  /// A second 401, with the fresh token, is not retried again: `maxRetries: 1`.
  @Test func a401WithTheFreshTokenEndsTheRequest() async {
    let clock = TestClock.current
    let (sends, refreshes) = (Sends(), Refreshes())
    let client = client(sends, refreshes)
    let caller = clock.task { await body(client, "/a") }
    await sends.calls(count: 1)
    sends.respond(to: "/a old", with: .failure(.unauthorized))
    await refreshes.calls(count: 1)
    refreshes.respond(toCall: 0, with: .success("new"))
    await sends.calls(count: 2)
    sends.respond(to: "/a new", with: .failure(.unauthorized))
    #expect(await clock.value(of: caller) == .failure(.unauthorized(sentWith: "new")))
    #expect(refreshes.log.count == 1)
  }
}
