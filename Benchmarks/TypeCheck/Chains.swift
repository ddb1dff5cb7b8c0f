import AsyncFlow
import TypeCheckSupport

// The corpus's chains of 4 to 8 steps: closure steps mixed with AsyncFlow's operators, the shape of
// ordinary data code. `flow-benchmarks --typecheck` type-checks each pipeline (a `// pipeline:`
// section) in a file of its own, beside its baseline, and `.ci/run` fails if one of these takes
// 150 ms or more (`--guard`). Not part of any package target: a pipeline here compiles only in
// that run.
//
// A section's `// baseline:` line names the stand-in of StandIns.swift for an operator whose
// overload depends on the failure types; every other operator has one stand-in of its own.

// pipeline: chain8 (8 steps) — issue 39's chain8: closure steps only, on a Flow
public func chain8(_ input: Flow<Int, Never>) -> some AsyncSequence<String, Never> & Sendable {
  input.map { $0 + 1 }.filter { $0 % 2 == 0 }.map { $0 * 3 }
    .map { $0 - 1 }.filter { $0 > 10 }.compactMap { $0 % 5 == 0 ? nil : $0 }
    .map { $0 - 1 }.map { String($0) }
}

// pipeline: mixed8 (8 steps) — issue 39's mixed8
public func mixed8(_ input: Flow<Int, Never>) -> some AsyncSequence<Int, Never> & Sendable {
  input.map { $0 + 1 }.filter { $0 % 2 == 0 }.map { $0 * 3 }
    .removeDuplicatesFlow().scanFlow(0) { $0 + $1 }
    .map { $0 - 1 }.filter { $0 > 10 }.compactMap { $0 % 5 == 0 ? nil : $0 }
}

// pipeline: dedup6 (6 steps) — issue 39's dedup6
public func dedup6(_ input: Flow<Int, Never>) -> some AsyncSequence<String, Never> & Sendable {
  input.map { $0 * 2 }.removeDuplicatesFlow().map { $0 + 1 }.removeDuplicatesFlow().map { String($0) }
    .filter { $0.count < 4 }
}

// pipeline: dedup4 (4 steps)
public func dedup4(_ input: Flow<Int, Never>) -> some AsyncSequence<String, Never> & Sendable {
  input.map { $0 * 2 }.removeDuplicatesFlow().filter { $0 > 3 }.map { String($0) }
}

// pipeline: debounce4 (4 steps) — a search field's text, settled
public func debounce4(_ text: Flow<String, Never>) -> some AsyncSequence<String, Never> & Sendable {
  text.map { $0.lowercased() }.debounceFlow(for: .milliseconds(300)).removeDuplicatesFlow()
    .filter { $0.count > 1 }
}

// pipeline: scan4 (4 steps) — a running total of the positive amounts
public func scan4(_ amounts: Flow<Int, Never>) -> some AsyncSequence<Int, Never> & Sendable {
  amounts.filter { $0 > 0 }.scanFlow(0) { $0 + $1 }.map { $0 * 2 }.removeDuplicatesFlow()
}

// pipeline: debounce8 (8 steps) — a debounce in the middle of closure steps
public func debounce8(_ input: Flow<Int, Never>) -> some AsyncSequence<Int, Never> & Sendable {
  input.map { $0 + 1 }.filter { $0 % 2 == 0 }.map { $0 * 3 }
    .debounceFlow(for: .milliseconds(10)).map { $0 - 1 }
    .map { $0 - 1 }.filter { $0 > 10 }.compactMap { $0 % 5 == 0 ? nil : $0 }
}

// pipeline: search8 (8 steps) — a search box: trim, settle, skip repeats, newest query wins, states
// baseline: switchToLatestFlow=oneSwitchToLatestNE
public func search8(
  _ text: Flow<String, Never>, client: SearchClient
) -> some AsyncSequence<Bool, Never> & Sendable {
  text.map { $0.lowercased() }.filter { !$0.isEmpty }.debounceFlow(for: .milliseconds(300))
    .removeDuplicatesFlow()
    .switchToLatestFlow { query in client.results(query).asLoadState() }
    .map { $0.isLoading }.removeDuplicatesFlow().prependState(false)
}

// pipeline: modelSink (8 steps) — a @MainActor model's search, shown by a main-actor sink
// baseline: switchToLatestFlow=oneSwitchToLatestNE
@MainActor
public final class SinkModel {
  public var shown: [String] = []
  private var subscriptions = Set<FlowSubscription>()
  public init() {}

  public func bind(_ text: Flow<String, Never>, client: SearchClient) {
    text.map { $0.lowercased() }.filter { $0.count > 1 }.debounceFlow(for: .milliseconds(300))
      .removeDuplicatesFlow()
      .switchToLatestFlow { query in client.results(query).asLoadState() }
      .compactMap { $0.value }.map { titles($0) }.filter { !$0.isEmpty }
      .sink { @MainActor [weak self] in self?.shown = $0 }.store(in: &subscriptions)
  }
}
