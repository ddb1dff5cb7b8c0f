import AsyncFlow
import AsyncFlowTesting
import Testing

/// The diagrams of `Guides/Flattening.md`: outer `a`, `b`, `c`; each inner plays `"0-1-2|"`, its
/// digits offset by 3 per outer element (a: 0 1 2, b: 3 4 5, c: 6 7 8).
@Suite("Flattening on marbles", .hangGuard)
struct FlatteningMarbleTests {
  let marbles = Marbles(tick: .seconds(1))

  private func inner(_ name: String) -> Flow<String, MarbleFailure> {
    let offset = Int(name.unicodeScalars.first!.value - UnicodeScalar("a").value) * 3
    return marbles.input("0-1-2|") { String(Int(String($0))! + offset) }
  }

  @Test func latestWins() async {
    let output = await marbles.record(marbles.input("a--b--c---|").switchToLatestFlow { inner($0) }, ticks: 14)
    #expect(output == "0-13-46-7-8|")
  }

  @Test func mergeRunsAll() async {
    let output = await marbles.record(marbles.input("a--b--c---|").mergeFlow { inner($0) }, ticks: 14)
    #expect(output == "0-1324657-8|")
  }

  @Test func mergeWithMaxConcurrentOneIsConcat() async {
    let merged = await marbles.record(marbles.input("a--b--c---|").mergeFlow(maxConcurrent: 1) { inner($0) }, ticks: 20)
    let concatenated = await marbles.record(marbles.input("a--b--c---|").concatFlow { inner($0) }, ticks: 20)
    #expect(merged == "0-1-23-4-56-7-8|")
    #expect(concatenated == merged)
  }

  @Test func firstWins() async {
    let output = await marbles.record(marbles.input("a--b--c---|").exhaustFlow { inner($0) }, ticks: 14)
    #expect(output == "0-1-2-6-7-8|")
  }

  @Test func latestPerKey() async {
    // Keys by parity of the outer element: a and c share a key, b has its own.
    let output = await marbles.record(
      marbles.input("ab--c-----|").switchToLatestFlow(by: { $0 == "b" }) { inner($0) }, ticks: 14)
    // c replaces a (same key) at 4, before a's "2"; b runs on beside them.
    #expect(output == "0314657-8-|")
  }
}
