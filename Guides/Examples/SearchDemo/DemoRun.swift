import AsyncFlow
import AsyncFlowTesting

/// What both pipelines showed in one run of the demo.
public struct DemoRun: Sendable {
  public var a: [DemoEvent] = []
  public var aEnded: Duration?
  public var b: [DemoEvent] = []
  public var bEnded: Duration?
}

/// Iterates `sequence`, calling `record` with the elapsed time and a description of each element;
/// returns when it ended.
public func record<S: AsyncSequence, C: Clock>(
  _ sequence: S, clock: C, since start: C.Instant, describe: (S.Element) -> String,
  record: (DemoEvent) -> Void
) async -> Duration? where S.Failure == Never, C.Duration == Duration {
  for await element in sequence {
    record(DemoEvent(at: start.duration(to: clock.now), shows: describe(element)))
  }
  return Task.isCancelled ? nil : start.duration(to: clock.now)
}

/// Runs both pipelines on a test clock: instant and deterministic.
public func runDemo(on clock: TestClock = TestClock()) async -> DemoRun {
  let service = SearchService(clock: clock)
  let start = clock.now
  let a = clock.task { () -> ([DemoEvent], Duration?) in
    var events: [DemoEvent] = []
    let ended = await record(
      pipelineA(typing(on: clock), service: service, clock: clock), clock: clock, since: start, describe: describe
    ) { events.append($0) }
    return (events, ended)
  }
  let b = clock.task { () -> ([DemoEvent], Duration?) in
    var events: [DemoEvent] = []
    let ended = await record(
      pipelineB(typing(on: clock), service: service, clock: clock), clock: clock, since: start, describe: describe
    ) { events.append($0) }
    return (events, ended)
  }
  await clock.advance(by: .seconds(3))
  a.cancel()
  b.cancel()
  let (aEvents, aEnded) = await a.value
  let (bEvents, bEnded) = await b.value
  return DemoRun(a: aEvents, aEnded: aEnded, b: bEvents, bEnded: bEnded)
}

/// One symbol per 100 ms: the run of one pipeline as a marble diagram.
public func marbles(_ events: [DemoEvent], ended: Duration?, symbol: (String) -> Character) -> String {
  func tick(_ at: Duration) -> Int { Int(at / .milliseconds(100)) }
  var marbleEvents = events.map { MarbleEvent(tick: tick($0.at), symbol: .element(symbol($0.shows))) }
  if let ended { marbleEvents.append(MarbleEvent(tick: tick(ended), symbol: .finish)) }
  return MarbleEvent.render(marbleEvents)
}

/// The marble symbol of what a pipeline shows: `l` loading, `x` failed, `e` no results, `r` results.
public func demoSymbol(_ shows: String) -> Character {
  if shows.hasPrefix("loading") { return "l" }
  if shows.hasPrefix("failed") { return "x" }
  if shows == "no results" { return "e" }
  return "r"
}
