import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

@Suite("Shaping and observing snippets run", .onTestClock, .hangGuard)
struct ShapingSnippetsTests {
  @Test func cartAndAnalytics() async {
    #expect(await Array(cartTotals(Flow.sequence([5, 7, 8]))) == [5, 12, 20])
    let batches = await Array(analyticsBatches(Flow.sequence(["a", "b", "c", "d"])))
    #expect(batches == [["a", "b", "c"], ["d"]])
    #expect(await Array(distinctQueries(Flow.sequence(["s", "sw", "sw", "swi", "sw"]))) == ["s", "sw", "swi", "sw"])
  }

  @Test func theTraceIsTheRequestLog() async {
    let clock = TestClock.current
    let log = LockedState<[String]>([])
    let queries = Flow<String, Never> { emitter in
      await emitter.emit("sw")
      try? await clock.sleep(for: .milliseconds(50))
      await emitter.emit("swift")
    }
    let states = clock.task {
      await Array(
        tracedSearches(
          queries,
          search: { query throws(SearchFailure) in
            do { try await clock.sleep(for: .milliseconds(100)) } catch { throw SearchFailure() }
            return [query]
          },
          log: { event in
            let what = String(describing: event).split(separator: "] ", maxSplits: 1)[1]
            log.withLock { $0.append("\(event.label): \(what)") }
          }))
    }
    await clock.run()
    #expect(await bounded(states, "states")?.last == .loaded(["swift"]))
    // "sw" was started, then cancelled by "swift", which answered.
    #expect(
      log.withLock { $0 } == [
        "search sw: start", "search sw: cancel", "search swift: start", "search swift: element: [\"swift\"]",
        "search swift: finish",
      ])
  }

  @Test func aRecordedRunReplaysItsFailure() async throws {
    let upload = Flow<Int, SearchFailure> { emitter throws(SearchFailure) in
      await emitter.emit(50)
      throw SearchFailure()
    }
    let events = await recordedRun(upload)
    #expect(events == [.element(50), .failed(SearchFailure())])
    var replayed = replay(events).makeAsyncIterator()
    #expect(try await replayed.next() == 50)
    await #expect(throws: SearchFailure()) { try await replayed.next() }
  }

  @Test func theSpinnerGoesOffHoweverTheLoadEnds() async {
    let spins = LockedState<[Bool]>([])
    let load = Flow<[String], SearchFailure>.fail(SearchFailure())
    var iterator = withSpinner(load) { on in spins.withLock { $0.append(on) } }.makeAsyncIterator()
    await #expect(throws: SearchFailure()) { try await iterator.next() }
    #expect(spins.withLock { $0 } == [true, false])
  }
}
