import AsyncFlow
import AsyncFlowTesting
import GuideExamples

#if canImport(Darwin)
  import Darwin
#elseif canImport(Glibc)
  import Glibc
#endif

// search-demo: the same search pipeline, caught at the end (A) and caught inside (B).

let usage = """
  usage: search-demo [--real-time | --interactive | --help]

  Runs one search pipeline twice against a simulated search service in which the query "swi"
  fails, and shows what each version displays:
    A  catches at the end:  .switchToLatestFlow { search }.catch { _ in Flow.just([]) }
    B  catches inside:      .switchToLatestFlow { search.retryWithBackoff(...).asLoadState() }

  (no option)     run on a virtual clock: instant and deterministic
  --real-time     run on the real clock, printing each event as it happens (about 1.5 s)
  --interactive   read queries from standard input, one per line, and print the states of both
                  pipelines as they happen; EOF ends
  --help          show this text
  """

/// Writes to standard error (file descriptor 2) without touching C's shared `stderr` variable.
func printError(_ text: String) {
  let bytes = Array((text + "\n").utf8)
  _ = bytes.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

let arguments = Array(CommandLine.arguments.dropFirst())
let known: Set = ["--real-time", "--interactive", "--help", "-h"]
if let unknown = arguments.first(where: { !known.contains($0) }) {
  printError("search-demo: unknown option '\(unknown)'\n\(usage)")
  exit(2)
}
if arguments.contains("--help") || arguments.contains("-h") {
  print(usage)
  exit(0)
}
if arguments.count > 1 {
  printError("search-demo: choose one option\n\(usage)")
  exit(2)
}

let useColour = isatty(STDOUT_FILENO) != 0 && getenv("NO_COLOR") == nil
func paint(_ text: String, _ code: String) -> String { useColour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }
func pad(_ text: String, _ width: Int) -> String {
  text.count > width ? String(text.prefix(width - 1)) + "…" : text + String(repeating: " ", count: width - text.count)
}
func milliseconds(_ duration: Duration) -> String {
  "\(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000) ms"
}
func colourFor(_ shows: String) -> String {
  shows.hasPrefix("failed") ? "31" : shows == "no results" ? "33" : shows.hasPrefix("loading") ? "2" : "32"
}

func printRun(_ run: DemoRun) {
  var times = Set(run.a.map(\.at) + run.b.map(\.at) + demoKeystrokes.map(\.at))
  if let ended = run.aEnded { times.insert(ended) }
  print(paint(pad("time", 9) + pad("typed", 8) + pad("A: caught at the end", 30) + "B: caught inside", "1"))
  for time in times.sorted() {
    let typed = demoKeystrokes.first { $0.at == time }?.text ?? ""
    var aShows = run.a.filter { $0.at == time }.map(\.shows).joined(separator: "; ")
    if run.aEnded == time { aShows += aShows.isEmpty ? "(stream over)" : " (stream over)" }
    let bShows = run.b.filter { $0.at == time }.map(\.shows).joined(separator: "; ")
    print(
      pad(milliseconds(time), 9) + pad(typed, 8) + paint(pad(aShows, 29), colourFor(aShows)) + " "
        + paint(pad(bShows, 33), colourFor(bShows)))
  }
  print()
  print("marbles, one symbol per 100 ms (l loading, r results, e no results, x failed, | end):")
  print(
    "  typed  "
      + MarbleEvent.render(
        demoKeystrokes.map { MarbleEvent(tick: Int($0.at / .milliseconds(100)), symbol: .element("k")) }))
  print("  A      " + marbles(run.a, ended: run.aEnded, symbol: demoSymbol))
  print("  B      " + marbles(run.b, ended: run.bEnded, symbol: demoSymbol))
  print()
  let aAfterFailure = run.a.filter { $0.at > (run.b.first { $0.shows.hasPrefix("failed") }?.at ?? .zero) }
  print(
    paint("A died", "31") + " at the failed query: \(aAfterFailure.count) updates after it. "
      + paint("B survived", "32") + ": it showed\nthe failure, then \(run.b.last?.shows ?? "nothing").")
}

if arguments.contains("--interactive") {
  let clock = ContinuousClock()
  print("type a query per line, and watch both pipelines as you type; the query \"swi\" fails")
  print("(try s, sw, swi, swift); end with EOF (Ctrl-D)")
  print(paint(pad("A: caught at the end", 40) + "B: caught inside", "1"))
  // Captured as a value: the printing runs off the main actor, while the next line is awaited.
  let colour = useColour
  await runInteractiveSearch(StandardInputLines(), service: SearchService(clock: clock), clock: clock) { line in
    // "A: …" in the left column, "B: …" in the right one, as the default run shows them.
    let shows = String(line.dropFirst(3))
    let code = shows == "(stream over)" ? "1" : colourFor(shows)
    let text = colour ? "\u{1B}[\(code)m\(shows)\u{1B}[0m" : shows
    print(line.hasPrefix("A:") ? text : String(repeating: " ", count: 40) + text)
  }
} else if arguments.contains("--real-time") {
  let clock = ContinuousClock()
  let service = SearchService(clock: clock)
  let start = clock.now
  async let a = record(
    pipelineA(typing(on: clock), service: service, clock: clock), clock: clock, since: start, describe: describe
  ) {
    print(pad(milliseconds($0.at), 9) + "A: " + $0.shows)
  }
  async let b = record(
    pipelineB(typing(on: clock), service: service, clock: clock), clock: clock, since: start, describe: describe
  ) {
    print(pad(milliseconds($0.at), 9) + "B: " + $0.shows)
  }
  let (aEnded, bEnded) = await (a, b)
  print("A ended at \(aEnded.map(milliseconds) ?? "-"), B at \(bEnded.map(milliseconds) ?? "-")")
} else {
  printRun(await runDemo())
}
