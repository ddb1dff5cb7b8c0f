import AsyncFlow
import AsyncFlowTesting

// The marble diagrams printed in the guides, recorded on a test clock. `GuideDiagramsTests`
// re-records them and fails if a guide's copy differs.

/// Outer `a`, `b`, `c`; each inner plays `0-1-2|`, its digits offset by 3 per outer element.
public func flatteningDiagrams() async -> [(label: String, diagram: String)] {
  let marbles = Marbles(tick: .seconds(1))
  @Sendable func inner(_ name: String) -> Flow<String, MarbleFailure> {
    let offset = Int(name.unicodeScalars.first!.value - UnicodeScalar("a").value) * 3
    return marbles.input("0-1-2|") { String(Int(String($0))! + offset) }
  }
  let outer = "a--b--c---|"
  let keyedOuter = "ab--c-----|"
  return [
    ("outer", outer),
    ("switchToLatestFlow", await marbles.record(marbles.input(outer).switchToLatestFlow { inner($0) }, ticks: 20)),
    ("mergeFlow", await marbles.record(marbles.input(outer).mergeFlow { inner($0) }, ticks: 20)),
    ("concatFlow", await marbles.record(marbles.input(outer).concatFlow { inner($0) }, ticks: 20)),
    ("exhaustFlow", await marbles.record(marbles.input(outer).exhaustFlow { inner($0) }, ticks: 20)),
    ("outer (a and c share a key)", keyedOuter),
    (
      "switchToLatestFlow(by:)",
      await marbles.record(marbles.input(keyedOuter).switchToLatestFlow(by: { $0 == "b" }) { inner($0) }, ticks: 20)
    ),
  ]
}

/// One row per time operator rule: the operator, its input, its recorded output (1 tick = 1 s).
public func timeDiagrams() async -> [(operator: String, input: String, output: String)] {
  func row<S: AsyncSequence & Sendable>(
    _ name: String, _ input: String, ticks: Int = 14, _ apply: (Flow<String, MarbleFailure>, TestClock) -> S
  ) async -> (String, String, String) where S.Element == String {
    let marbles = Marbles(tick: .seconds(1))
    return (name, input, await marbles.record(apply(marbles.input(input), marbles.clock), ticks: ticks))
  }
  return [
    await row("debounceFlow(for: 2 s)", "a-b----c|") { $0.debounceFlow(for: .seconds(2), clock: $1) },
    await row("debounceFlow(for: 2 s)", "a--b#") { $0.debounceFlow(for: .seconds(2), clock: $1) },
    await row("throttleFlow(for: 3 s, latest: true)", "abc-d-----e|") { $0.throttleFlow(for: .seconds(3), clock: $1) },
    await row("throttleFlow(for: 3 s, latest: false)", "abc-d-----e|") {
      $0.throttleFlow(for: .seconds(3), clock: $1, latest: false)
    },
    await row("delayFlow(for: 2 s)", "a-b|") { $0.delayFlow(for: .seconds(2), clock: $1) },
    await row("timeoutFlow(after: 3 s)", "a-b-----c|") { $0.timeoutFlow(after: .seconds(3), clock: $1) },
    await row("timeoutFlow(finishingAfter: 3 s)", "a-b-----c|") {
      $0.timeoutFlow(finishingAfter: .seconds(3), clock: $1)
    },
    // Arrays are drawn as their size.
    await row("collectFlow(every: 3 s)", "a-b--c-----d|", ticks: 16) {
      $0.collectFlow(every: .seconds(3), clock: $1).map { String($0.count) }
    },
    await row("collectFlow(count: 3, orEvery: 3 s)", "abc--d---ef|", ticks: 16) {
      $0.collectFlow(count: 3, orEvery: .seconds(3), clock: $1).map { String($0.count) }
    },
    await row("sampleFlow(every: 3 s)", "ab-----cd-e|", ticks: 16) { $0.sampleFlow(every: .seconds(3), clock: $1) },
  ]
}
