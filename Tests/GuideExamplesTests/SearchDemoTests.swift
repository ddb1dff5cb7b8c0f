import AsyncFlow
import AsyncFlowTesting
import Foundation
import GuideExamples
import Testing

@Suite("Search demo pipelines", .timeLimit(.minutes(1)))
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

  @Test func theRecordedMarblesAreStableAndInTheGuide() async throws {
    let run = await runDemo()
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
