import AsyncFlow
import AsyncFlowTesting
import Foundation
import GuideExamples
import Testing

@Suite("Search demo pipelines", .onTestClock, .hangGuard)
struct SearchDemoTests {
  @Test func catchingAtTheEndDiesAtTheFailureAndCatchingInsideSurvives() async throws {
    let run = await runDemo(on: TestClock.current)
    // A: the "sw" results, then the failure of "swi" turns into the fallback and ends the stream.
    #expect(run.a.map(\.shows) == ["swift, swiftui, swift-format, switch, sweep, sword", "no results"])
    #expect(run.aEnded == .milliseconds(800))
    #expect(run.a.allSatisfy { $0.at <= .milliseconds(800) })
    // B: the failure is a state, and later keystrokes still search.
    let failed = try #require(run.b.firstIndex { $0.shows.hasPrefix("failed") })
    #expect(run.b[failed].at == .milliseconds(950))
    #expect(run.b.last == DemoEvent(at: .milliseconds(1300), shows: "swift, swiftui, swift-format"))
    #expect(run.bEnded == .milliseconds(1300))
  }

  @Test func theRecordedMarblesAreStableAndInTheGuide() async throws {
    let run = await runDemo(on: TestClock.current)
    let a = marbles(run.a, ended: run.aEnded, symbol: demoSymbol)
    let b = marbles(run.b, ended: run.bEnded, symbol: demoSymbol)
    #expect(a == "-----r--[e|]")
    #expect(b == "-l--lr-l-xl-l[r|]")
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let guide = try String(contentsOf: root.appendingPathComponent("Guides/ErrorHandling.md"), encoding: .utf8)
    #expect(guide.contains("A      \(a) "), "Guides/ErrorHandling.md should show A as \(a)")
    #expect(guide.contains("B      \(b) "), "Guides/ErrorHandling.md should show B as \(b)")
  }
}

@Suite("Interactive search demo", .onTestClock, .hangGuard)
struct InteractiveSearchTests {
  /// A line typed at `at`, as a person would: the next one comes only later.
  private static let typed: [(text: String, at: Duration)] = [
    ("swift", .seconds(1)), ("swi", .seconds(2)), ("sw", .seconds(3)),
  ]

  @Test func eachStateIsShownAsItHappensWhileTheUserKeepsTyping() async {
    let clock = TestClock.current
    let shown = LockedState<[DemoEvent]>([])
    let lines = Flow<String, Never> { emitter in
      for line in Self.typed {
        do { try await clock.sleep(until: .init(offset: line.at)) } catch { return }
        await emitter.emit(line.text)
      }
      // The input stays open a while after the last line: the states must not wait for its end.
      do { try await clock.sleep(until: .init(offset: .seconds(10))) } catch { return }
    }
    let run = clock.task {
      await runInteractiveSearch(lines, service: SearchService(clock: clock), clock: clock) { line in
        shown.withLock { $0.append(DemoEvent(at: clock.now.offset, shows: line)) }
      }
    }
    await clock.advance(to: .init(offset: .seconds(4)))
    // Before the input ended (at 10 s), every query's states were shown, each before the next line.
    let beforeTheEnd = shown.withLock { $0 }
    // Pipeline A: "swift"'s results; then "swi" fails, A falls back to its empty list and is over.
    #expect(
      beforeTheEnd.filter { $0.shows.hasPrefix("A:") } == [
        DemoEvent(at: .milliseconds(1200), shows: "A: swift, swiftui, swift-format"),
        DemoEvent(at: .milliseconds(2200), shows: "A: no results"),
        DemoEvent(at: .milliseconds(2200), shows: "A: (stream over)"),
      ])
    // Pipeline B: each query's states before the next line is typed; the failure of "swi" (after
    // its one retry) is a state, and "sw" still searches.
    #expect(
      beforeTheEnd.filter { $0.shows.hasPrefix("B:") } == [
        DemoEvent(at: .milliseconds(1100), shows: "B: loading…"),
        DemoEvent(at: .milliseconds(1200), shows: "B: swift, swiftui, swift-format"),
        DemoEvent(at: .milliseconds(2100), shows: "B: loading…"),
        DemoEvent(at: .milliseconds(2350), shows: "B: failed: network error for \"swi\""),
        DemoEvent(at: .milliseconds(3100), shows: "B: loading…"),
        DemoEvent(at: .milliseconds(3250), shows: "B: swift, swiftui, swift-format, switch, sweep, sword"),
      ])
    await clock.advance(to: .init(offset: .seconds(10)))
    // Whatever is left on the clock runs now, so a broken loop fails here instead of hanging.
    await clock.run()
    await bounded(run, "run")
    // B ends with the input, and not before.
    #expect(shown.withLock { $0.last } == DemoEvent(at: .seconds(10), shows: "B: (stream over)"))
  }
}
