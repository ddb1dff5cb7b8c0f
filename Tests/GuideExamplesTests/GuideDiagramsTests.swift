import Foundation
import GuideExamples
import Testing

/// The guides' marble diagrams, re-recorded: a guide whose copy drifted from what the code does
/// fails here, with the text it should contain. Not `.onTestClock`: each diagram is recorded on a
/// `Marbles` clock of its own, from 0 s.
@Suite("Guide diagrams are re-recorded", .hangGuard)
struct GuideDiagramsTests {
  private func guide(_ name: String) throws -> String {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
    return try String(contentsOf: root.appendingPathComponent("Guides/\(name)"), encoding: .utf8)
  }

  static func flatteningBlock(_ diagrams: [(label: String, diagram: String)]) -> String {
    diagrams.map { $0.label.padding(toLength: 28, withPad: " ", startingAt: 0) + $0.diagram }.joined(separator: "\n")
  }

  static func timeRows(_ rows: [(operator: String, input: String, output: String)]) -> String {
    func cell(_ text: String) -> String { "`" + text.replacingOccurrences(of: "|", with: "\\|") + "`" }
    return rows.map { "| \(cell($0.operator)) | \(cell($0.input)) | \(cell($0.output)) |" }.joined(separator: "\n")
  }

  @Test func flatteningGuideShowsWhatTheOperatorsDo() async throws {
    let expected = Self.flatteningBlock(await flatteningDiagrams())
    #expect(try guide("Flattening.md").contains(expected), "Guides/Flattening.md should contain:\n\(expected)")
  }

  @Test func timeGuideShowsWhatTheOperatorsDo() async throws {
    let expected = Self.timeRows(await timeDiagrams())
    #expect(try guide("Time.md").contains(expected), "Guides/Time.md should contain:\n\(expected)")
  }
}
