import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

@Suite("Search demo pipelines")
struct SearchDemoTests {
  @Test func catchingAtTheEndDiesAtTheFailureAndCatchingInsideSurvives() async {
    let run = await runDemo()
    // A: the "sw" results, then the failure of "swi" turns into the fallback and ends the stream.
    #expect(run.a.map(\.shows) == ["swift, swiftui, swift-format, switch, sweep, sword", "no results"])
    #expect(run.aEnded == .milliseconds(800))
    #expect(run.a.allSatisfy { $0.at <= .milliseconds(800) })
    // B: the failure is a state, and later keystrokes still search.
    let failed = run.b.firstIndex { $0.shows.hasPrefix("failed") }
    #expect(failed != nil)
    #expect(run.b[failed!].at == .milliseconds(950))
    #expect(run.b.last == DemoEvent(at: .milliseconds(1300), shows: "swift, swiftui, swift-format"))
    #expect(run.bEnded == .milliseconds(1300))
  }

  @Test func theRecordedMarblesAreStable() async {
    let run = await runDemo()
    #expect(marbles(run.a, ended: run.aEnded, symbol: demoSymbol) == "-----r--[e|]")
    #expect(marbles(run.b, ended: run.bEnded, symbol: demoSymbol) == "-l--lr-l-xl-l[r|]")
  }
}
