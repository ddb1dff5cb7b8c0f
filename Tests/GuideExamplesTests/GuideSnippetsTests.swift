import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

@Suite("Guide snippets run", .onTestClock, .hangGuard)
struct GuideSnippetsTests {
  let client = ArticlesClient(pages: [
    [Article(title: "swift")], [Article(title: "swiftui"), Article(title: "kotlin")],
  ])

  @Test func gettingStarted() async {
    let states = await pageStates(from: client)
    #expect(states.count == 3 && states[0].isLoading && states[2].value?.count == 2)
    let failing = await pageStates(from: ArticlesClient(pages: [[Article(title: "a")]]))
    #expect(failing.last?.failure is ClientError)
    let found = await bounded("the searches") { [client] in
      var found: [[Article]] = []
      for await result in searches(Flow.sequence(["swift", "fail", "kotlin"]), client: client) { found.append(result) }
      return found
    }
    #expect(found?.last == [Article(title: "kotlin")])  // the failed search did not end the stream
  }

  @Test func flatteningPoliciesCompileAndRun() async {
    let clock = TestClock.current  // for its deterministic schedule: nothing here sleeps
    let queries = PassthroughFlow<String, Never>()
    let taps = PassthroughFlow<Void, Never>()
    let (results, _) = flatteningPolicies(queries: queries, payTaps: taps, client: client) { "receipt" }
    let collected = clock.task { await Array(results.prefix(2)) }
    await clock.runCurrent()  // the pipeline has subscribed
    #expect(queries.subscriberCount == 1)
    queries.send("kotlin")
    await clock.runCurrent()  // and handled the query
    collected.cancel()  // a no-op once it has both states; ends it if something went wrong
    guard let states = await bounded(collected, "collected") else { return }
    #expect(states.last?.value == [Article(title: "kotlin")])
  }

  @Test func searchBoxOnATestClock() async {
    let clock = TestClock.current
    let text = Flow.sequence(["s", "sw", "swiftui"])
    let states = clock.task { await Array(searchBox(text, client: self.client, clock: clock)) }
    await clock.run()
    states.cancel()  // a no-op once the pipeline has finished; ends it if something went wrong
    guard let result = await bounded(states, "states") else { return }
    #expect(result.last?.value == [Article(title: "swiftui")])
  }

  @Test func stopEarly() async throws {
    let many = ArticlesClient(pages: [(0..<8).map { Article(title: "swift \($0)") }])
    let clock = TestClock.current
    let found = clock.task { () -> Result<[Article], ClientError> in
      do throws(ClientError) {
        return .success(try await firstTen(of: ["swift", "swift 1", "swift 2"], client: many))
      } catch { return .failure(error) }
    }
    await clock.run()
    #expect(try await bounded(found, "found")?.get().count == 10)
  }

  @Test func typedTimeout() async {
    let clock = TestClock.current
    let slow = ArticlesClient(pages: [])
    let found = clock.task { await searchWithin(.seconds(5), query: "swift", client: self.client, clock: clock) }
    let failed = clock.task { await searchWithin(.seconds(5), query: "fail", client: slow, clock: clock) }
    await clock.run()
    #expect(await bounded(found, "found") == "2 articles")
    #expect(await bounded(failed, "failed") == "Nothing found")
    let silent = Flow<[Article], ClientError> { _ in await Gate().wait() }  // parked until cancelled
    let timedOut = clock.task { () -> FlowTimeoutFailure<ClientError>? in
      var timed = silent.timeoutFlow(after: .seconds(5), clock: clock).makeAsyncIterator()
      do throws(FlowTimeoutFailure<ClientError>) { _ = try await timed.next() } catch { return error }
      return nil
    }
    await clock.advance(by: .seconds(5))
    #expect(await bounded(timedOut, "timedOut") == .timedOut)
  }

  @Test @MainActor func hotSourceSink() async {
    let clock = TestClock.current
    // Made on the clock's schedule, the model's pipeline runs there, and runCurrent() waits for it
    // and for the sink's write back to the main actor.
    let model = SearchFieldModel(client: client)
    await clock.runCurrent()
    #expect(model.searchText.subscriberCount == 1)
    model.textChanged("kotlin")
    await clock.runCurrent()
    #expect(model.state.value == [Article(title: "kotlin")])
  }

  @Test func testingSnippets() async {
    let (output, pending) = await debounceDiagram()
    #expect(output == "----b---[c|]" && pending == 0)
    #expect(await cancelWhileInFlight())
    #expect(await timerTicks() == [.seconds(1), .seconds(2), .seconds(3)])
  }
}

func Array<S: AsyncSequence>(_ sequence: S) async -> [S.Element] where S.Failure == Never {
  var elements: [S.Element] = []
  var iterator = sequence.makeAsyncIterator()
  while let element = await iterator.next(isolation: #isolation) { elements.append(element) }
  return elements
}
