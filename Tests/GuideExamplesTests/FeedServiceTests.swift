import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// Services.md's lookup, fan-out and request IDs. On the test clock, every task (the callers, the
/// flights, the searches) runs on the clock's executor, so `runCurrent()` is a barrier and the
/// timeouts and backoffs pass only when the test advances the clock.
@Suite("Feed service examples", .onTestClock, .hangGuard)
struct FeedServiceTests {
  typealias Fetches = ControlledCalls<String, Result<Profile, BackendError>>
  typealias Searches = ControlledCalls<String, Result<[String], BackendError>>

  private func lookup(_ fetches: Fetches, log: ServerLog = ServerLog()) -> ProfileLookup<TestClock> {
    ProfileLookup(clock: TestClock.current, log: log) { id throws(BackendError) in try await fetches.call(id).get() }
  }

  private func profile(of id: String) -> Profile { Profile(id: id, name: id.uppercased()) }

  @Test func fortyRequestsForTwoProfilesMakeTwoCalls() async {
    let clock = TestClock.current
    let fetches = Fetches()
    let profiles = lookup(fetches)
    let callers = (0..<40).map { index in
      clock.task { try? await profiles.profile(index.isMultiple(of: 2) ? "ada" : "bob") }
    }
    await fetches.calls(count: 2)
    await clock.runCurrent()  // every other caller has joined a flight
    fetches.respond(to: "ada", with: .success(profile(of: "ada")))
    fetches.respond(to: "bob", with: .success(profile(of: "bob")))
    for (index, caller) in callers.enumerated() {
      #expect(await bounded(caller, "caller \(index)") == profile(of: index.isMultiple(of: 2) ? "ada" : "bob"))
    }
    #expect(fetches.log.count == 2)
  }

  @Test func anUnavailableBackendIsRetriedAMissingProfileIsNot() async {
    let clock = TestClock.current
    let fetches = Fetches()
    let profiles = lookup(fetches)
    let ada = clock.task {
      await Result(awaiting: { () throws(ProfileLookup<TestClock>.Failure) in try await profiles.profile("ada") })
    }
    let ghost = clock.task {
      await Result(awaiting: { () throws(ProfileLookup<TestClock>.Failure) in try await profiles.profile("ghost") })
    }
    await fetches.calls(count: 2)
    fetches.fail("ada", with: .unavailable)
    fetches.fail("ghost", with: .notFound)
    await clock.advance(by: .seconds(1))  // past the first backoff, at most 150 ms with jitter
    await fetches.calls(count: 3)
    fetches.respond(to: "ada", with: .success(profile(of: "ada")))
    #expect(await bounded(ada, "ada")?.optionalValue == profile(of: "ada"))
    #expect(await bounded(ghost, "ghost")?.failure == .upstream(.notFound))
    #expect(fetches.arguments == ["ada", "ghost", "ada"])
  }

  /// Four attempts, each cut at 2 s, the backoffs between them: the lookup fails `.timedOut`.
  @Test func aBackendThatNeverAnswersTimesOutAfterFourAttempts() async {
    let clock = TestClock.current
    let fetches = Fetches(whenCancelled: .failure(.unavailable))
    let profiles = lookup(fetches)
    let ada = clock.task {
      await Result(awaiting: { () throws(ProfileLookup<TestClock>.Failure) in try await profiles.profile("ada") })
    }
    for attempt in 1...4 {
      await fetches.calls(count: attempt)
      await clock.advance(by: .seconds(4))  // the attempt's 2 s, then its backoff (at most 600 ms)
    }
    #expect(await bounded(ada, "ada")?.failure == .timedOut)
    #expect(fetches.log.count == 4)
    #expect(fetches.log.allSatisfy { $0.wasCancelled })  // each attempt was cancelled at its timeout
  }

  private func backends(_ searches: Searches, count: Int, ended: LockedState<Int>) -> [SearchBackend] {
    (1...count).map { number in
      SearchBackend(name: "b\(number)") { query throws(BackendError) in
        defer { ended.withLock { $0 += 1 } }
        return try await searches.call("b\(number) \(query)").get()
      }
    }
  }

  /// The first backend's answer fills the page: the searches still running are cancelled, and
  /// the fan-out returns only once they have ended; the two backends not started never are.
  @Test func theFanOutStopsAtItsLimitAndNothingRunsAfterItReturns() async {
    let clock = TestClock.current
    let searches = Searches(whenCancelled: .failure(.unavailable))
    let ended = LockedState(0)
    let log = ServerLog()
    let all = backends(searches, count: 5, ended: ended)
    let search = clock.task {
      let results = await fanOutSearch("swift", over: all, limit: 10, clock: clock, log: log)
      return (results, endedWhenItReturned: ended.withLock { $0 })
    }
    await searches.calls(count: 3)  // three at a time
    searches.respond(to: "b2 swift", with: .success((1...12).map { "b2 result \($0)" }))
    let answer = await bounded(search, "the fan-out")
    #expect(answer?.0 == (1...10).map { "b2 result \($0)" })
    #expect(answer?.endedWhenItReturned == 3)  // every search it started had ended
    #expect(searches.log.count == 3)
  }

  @Test func aSlowOrFailingBackendIsLoggedAndLeftOut() async {
    let clock = TestClock.current
    let searches = Searches(whenCancelled: .failure(.unavailable))
    let ended = LockedState(0)
    let log = ServerLog()
    let all = backends(searches, count: 3, ended: ended)
    let search = clock.task {
      await RequestContext.$requestID.withValue("r7") {
        await fanOutSearch("swift", over: all, limit: 10, clock: clock, log: log)
      }
    }
    await searches.calls(count: 3)
    searches.respond(to: "b1 swift", with: .success(["one"]))
    searches.fail("b2 swift", with: .unavailable)
    await clock.advance(by: .seconds(1))  // b3 never answers
    #expect(await bounded(search, "the fan-out") == ["one"])
    #expect(log.written.sorted() == ["[r7] b2 left out: unavailable", "[r7] b3 left out: The sequence timed out."])
  }
}

/// The handler on real threads: two requests at once, each with its own ID in every line it
/// writes; the flight both join logs once, with the ID of the request that started it.
@Suite("Feed service examples on real threads", .hangGuard)
struct FeedServiceThreadTests {
  @Test func everyLineCarriesItsRequestsID() async {
    let log = ServerLog()
    let profiles = ProfileLookup(clock: ContinuousClock(), log: log) { id throws(BackendError) in
      Profile(id: id, name: id.uppercased())
    }
    let backends = (1...5).map { number in
      SearchBackend(name: "b\(number)") { query throws(BackendError) in ["\(query) from b\(number)"] }
    }
    async let first = handleFeedRequest(
      id: "r1", user: "ada", query: "swift", profiles: profiles, backends: backends, clock: ContinuousClock(), log: log)
    async let second = handleFeedRequest(
      id: "r2", user: "bob", query: "async", profiles: profiles, backends: backends, clock: ContinuousClock(), log: log)
    let (one, two) = await (first, second)
    #expect(one.profile?.id == "ada")
    #expect(two.results.count == 5)
    let lines = log.written
    #expect(
      lines.filter { $0.hasPrefix("[r1]") }.sorted() == [
        "[r1] answered with 5 results", "[r1] fetching profile ada", "[r1] request for ada",
      ])
    #expect(
      lines.filter { $0.hasPrefix("[r2]") }.sorted() == [
        "[r2] answered with 5 results", "[r2] fetching profile bob", "[r2] request for bob",
      ])
    #expect(lines.count == 6)
  }
}

extension Result {
  fileprivate var optionalValue: Success? { try? get() }
  fileprivate var failure: Failure? {
    guard case .failure(let failure) = self else { return nil }
    return failure
  }
}
