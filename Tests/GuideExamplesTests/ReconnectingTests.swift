import Foundation
import GuideExamples
import Testing

/// The reconnect timeline of Guides/ErrorHandling.md, re-recorded: a copy that drifted from what
/// the code does fails here, with the text the guide should contain. Not `.onTestClock`: each
/// timeline is recorded on a `Marbles` clock of its own, from 0 s.
@Suite("Reconnecting timeline is re-recorded", .hangGuard)
struct ReconnectingTests {
  static func block(_ diagrams: [(label: String, diagram: String)]) -> String {
    (["attempts".padding(toLength: 26, withPad: " ", startingAt: 0) + reconnectAttempts.joined(separator: "  ")]
      + diagrams.map { $0.label.padding(toLength: 26, withPad: " ", startingAt: 0) + $0.diagram })
      .joined(separator: "\n")
  }

  @Test func theBackoffStartsOverAfterAnElementOnlyWithTheReset() async {
    let diagrams = await reconnectDiagrams()
    // Without: waits of 1, 2, 4 s; with: 1 s, then 1 s again after `a`, then 2 s.
    #expect(diagrams.map(\.diagram) == ["-a-b------c|", "-a-b---c|"])
  }

  @Test func errorHandlingGuideShowsTheRecordedTimeline() async throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    let guide = try String(contentsOf: root.appendingPathComponent("Guides/ErrorHandling.md"), encoding: .utf8)
    let expected = Self.block(await reconnectDiagrams())
    #expect(guide.contains(expected), "Guides/ErrorHandling.md should contain:\n\(expected)")
  }
}
