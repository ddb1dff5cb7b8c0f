import AsyncFlowTesting

@testable import AsyncFlow

/// A task-local value as an app binds one: a request's trace ID.
enum Trace {
  @TaskLocal static var id = "none"
}

/// The context that user code saw where it ran: the task-local value and the priority of its task.
struct SeenContext: Equatable, Sendable, CustomStringConvertible {
  var place: String
  var id: String
  var priority: TaskPriority

  var description: String { "\(place): \(id), \(priority)" }
}

/// The trace ID and priority every consumer of the context tests runs with. `.high`, above the
/// test runner's `.medium`: a detached task (`.medium`) differs, and awaiting one of them from the
/// runner never escalates a task to it.
let consumerTraceID = "request-42"
let consumerPriority = TaskPriority.high

/// Where the user's code of one context row runs: every body, transform and callback notes the
/// context it sees, so that a test can check they all saw the consumer's.
final class ContextProbe: Sendable {
  /// The clock every timed operator of the row uses: a `TestClock` on the clock's schedule, an
  /// ``ImmediateClock`` without one (tasks started as in an app, no wall-clock wait).
  let clock: AnyFlowClock
  private let seen = LockedState<[SeenContext]>([])

  init(clock: some Clock<Duration>) {
    self.clock = AnyFlowClock(clock)
  }

  /// Records what the current task sees, as `place`.
  func note(_ place: String) {
    let context = SeenContext(place: place, id: Trace.id, priority: Task.currentPriority)
    seen.withLock { $0.append(context) }
  }

  var notes: [SeenContext] { seen.withLock { $0 } }

  /// A `Flow` body that notes itself, emits `elements`, then finishes or fails (`TestError(id: -1)`);
  /// its fused `map` notes where it is pulled (in the task of the operator that pulls it, if any).
  func upstream(_ elements: [Int] = [1, 2], failing: Bool = false) -> Flow<Int, TestError> {
    Flow { emitter throws(TestError) in
      self.note("upstream body")
      for element in elements { await emitter.emit(element) }
      if failing { throw TestError(id: -1) }
    }.map { (element: Int) throws(TestError) -> Int in
      self.note("upstream map")
      return element
    }
  }

  /// An inner (or fallback, or second input) body, noted as `inner body`: emits `index * 100`,
  /// then finishes or fails (`TestError(id: index)`).
  func inner(_ index: Int, failing: Bool = false) -> Flow<Int, TestError> {
    Flow { emitter throws(TestError) in
      self.note("inner body")
      await emitter.emit(index * 100)
      if failing { throw TestError(id: index) }
    }
  }
}

/// One row of the context table: an operator over the probe's bodies and transforms, and the
/// places the user's code must have run in (each at least once) once the consumer has seen the end.
struct ContextCase: Sendable, CustomStringConvertible {
  var name: String
  var places: Set<String>
  var make: @Sendable (ContextProbe) -> AnyStepper

  init(
    _ name: String, places: Set<String> = ["upstream body", "upstream map"],
    _ make: @escaping @Sendable (ContextProbe) -> AnyStepper
  ) {
    self.name = name
    self.places = places
    self.make = make
  }

  var description: String { name }
}

/// The rows that also see an inner body.
private let withInner: Set<String> = ["upstream body", "upstream map", "inner body"]

/// One row per row of `operatorTable` (same names: `ContextConformanceTests` checks that none is
/// missing), plus the rows of issue 38's table that the operator table has no row for. Every
/// closure the user writes notes where it runs.
let contextTable: [ContextCase] = [
  // Flow's own.
  ContextCase("Flow { } iterated directly", places: ["upstream body"]) { probe in
    AnyStepper(
      Flow<Int, Never> { emitter in
        probe.note("upstream body")
        await emitter.emit(1)
      })
  },
  ContextCase("Flow.map", places: ["upstream body", "upstream map", "map"]) { probe in
    AnyStepper(
      probe.upstream().map { (x: Int) throws(TestError) in
        probe.note("map")
        return x + 1
      })
  },
  ContextCase("Flow.filter", places: ["upstream body", "upstream map", "filter"]) { probe in
    AnyStepper(
      probe.upstream().filter { (x: Int) throws(TestError) in
        probe.note("filter")
        return x >= 0
      })
  },
  ContextCase("Flow.compactMap", places: ["upstream body", "upstream map", "compactMap"]) { probe in
    AnyStepper(
      probe.upstream().compactMap { (x: Int) throws(TestError) -> Int? in
        probe.note("compactMap")
        return x
      })
  },
  ContextCase("Flow.eraseToFlow") { AnyStepper($0.upstream().scanFlow(0, +).eraseToFlow()) },
  ContextCase("Flow.deferred", places: ["upstream body", "upstream map", "deferred"]) { probe in
    AnyStepper(
      Flow<Int, TestError>.deferred {
        probe.note("deferred")
        return probe.upstream()
      })
  },
  ContextCase("Flow.single", places: ["operation"]) { probe in
    AnyStepper(
      Flow<Int, TestError>.single { () async throws(TestError) -> Int in
        probe.note("operation")
        return 1
      })
  },
  ContextCase("Flow.callbacks", places: ["setup", "cleanup"]) { probe in
    AnyStepper(
      Flow<Int, Never>.callbacks { callbacks in
        probe.note("setup")
        callbacks.send(1)
        callbacks.finish()
        return { probe.note("cleanup") }
      })
  },
  // Errors and state.
  ContextCase("catch", places: ["upstream body", "upstream map", "handler", "inner body"]) { probe in
    AnyStepper(
      probe.upstream(failing: true).catch { _ in
        probe.note("handler")
        return probe.inner(9)
      })
  },
  ContextCase("catchInner", places: withInner.union(["transform", "handler"])) { probe in
    AnyStepper(
      probe.upstream().map { value in
        probe.note("transform")
        return probe.inner(value, failing: true)
      }.catchInner { _ in
        probe.note("handler")
        return probe.inner(9)
      }.switchToLatestFlow())
  },
  ContextCase("catchInner (the outer alone)") { probe in
    AnyStepper(probe.upstream().map { probe.inner($0) }.catchInner { _ in probe.inner(9) })
  },
  ContextCase("mapError", places: ["upstream body", "upstream map", "transform"]) { probe in
    AnyStepper(
      probe.upstream(failing: true).mapError {
        probe.note("transform")
        return TestError(id: $0.id + 1000)
      })
  },
  ContextCase("replaceError") { AnyStepper($0.upstream(failing: true).replaceError(with: -7)) },
  ContextCase("materialize") { AnyStepper($0.upstream(failing: true).materialize()) },
  ContextCase("dematerialize") { AnyStepper($0.upstream(failing: true).materialize().dematerialize()) },
  ContextCase("asLoadState") { AnyStepper($0.upstream(failing: true).asLoadState()) },
  ContextCase("prependState") { AnyStepper($0.upstream().prependState(-1)) },
  // Retry starts no task of its own: each attempt's body runs where the consumer's `next()` starts it.
  ContextCase("retryWithBackoff", places: ["upstream body", "upstream map", "predicate"]) { probe in
    AnyStepper(
      probe.upstream(failing: true).retryWithBackoff(maxRetries: 2, initialDelay: .seconds(1), clock: probe.clock) {
        _ in
        probe.note("predicate")
        return true
      })
  },
  // Shaping and observing.
  ContextCase("scanFlow", places: ["upstream body", "upstream map", "accumulator"]) { probe in
    AnyStepper(
      probe.upstream().scanFlow(0) { (sum: Int, x: Int) throws(TestError) in
        probe.note("accumulator")
        return sum + x
      })
  },
  ContextCase("removeDuplicatesFlow()") { AnyStepper($0.upstream().removeDuplicatesFlow()) },
  ContextCase("removeDuplicatesFlow(by:)", places: ["upstream body", "upstream map", "predicate"]) { probe in
    AnyStepper(
      probe.upstream().removeDuplicatesFlow {
        probe.note("predicate")
        return $0 == $1
      })
  },
  ContextCase("collectFlow(count:)") { AnyStepper($0.upstream().collectFlow(count: 2)) },
  ContextCase("handleEventsFlow", places: ["upstream body", "upstream map", "onStart", "onElement", "onFinish"]) {
    probe in
    AnyStepper(
      probe.upstream().handleEventsFlow(
        onStart: { probe.note("onStart") }, onElement: { _ in probe.note("onElement") },
        onFinish: { probe.note("onFinish") }, onFailure: { _ in probe.note("onFailure") },
        onCancel: { probe.note("onCancel") }))
  },
  ContextCase("traceFlow", places: ["upstream body", "upstream map", "trace sink"]) { probe in
    AnyStepper(probe.upstream().traceFlow("probe") { _ in probe.note("trace sink") })
  },
  // Time: the upstream and its map run in the operator's task.
  ContextCase("debounceFlow") { AnyStepper($0.upstream().debounceFlow(for: .seconds(1), clock: $0.clock)) },
  ContextCase("throttleFlow(latest: true)") {
    AnyStepper($0.upstream().throttleFlow(for: .seconds(1), clock: $0.clock, latest: true))
  },
  ContextCase("throttleFlow(latest: false)") {
    AnyStepper($0.upstream().throttleFlow(for: .seconds(1), clock: $0.clock, latest: false))
  },
  ContextCase("delayFlow") { AnyStepper($0.upstream().delayFlow(for: .seconds(1), clock: $0.clock)) },
  ContextCase("timeoutFlow(after:)") { AnyStepper($0.upstream().timeoutFlow(after: .seconds(1000), clock: $0.clock)) },
  ContextCase("timeoutFlow(finishingAfter:)") {
    AnyStepper($0.upstream().timeoutFlow(finishingAfter: .seconds(1000), clock: $0.clock))
  },
  ContextCase("collectFlow(every:)") { AnyStepper($0.upstream().collectFlow(every: .seconds(1), clock: $0.clock)) },
  ContextCase("collectFlow(count:orEvery:)") {
    AnyStepper($0.upstream().collectFlow(count: 2, orEvery: .seconds(1), clock: $0.clock))
  },
  ContextCase("sampleFlow") { AnyStepper($0.upstream().sampleFlow(every: .seconds(1), clock: $0.clock)) },
  // Shaping with a task of its own.
  ContextCase("bufferFlow(.unbounded)") { AnyStepper($0.upstream().bufferFlow(policy: .unbounded)) },
  ContextCase("bufferFlow(.bufferingNewest(2))") { AnyStepper($0.upstream().bufferFlow(policy: .bufferingNewest(2))) },
  ContextCase("bufferFlow(.bufferingOldest(2))") { AnyStepper($0.upstream().bufferFlow(policy: .bufferingOldest(2))) },
  // Combining: each input runs in the operator's task group (withLatestFrom's other in a task of
  // its own, started at once in the consumer's).
  ContextCase("Flow.merge", places: withInner) { AnyStepper(Flow.merge($0.upstream(), $0.inner(7))) },
  ContextCase("Flow.combineLatest", places: withInner) { AnyStepper(Flow.combineLatest($0.upstream(), $0.inner(7))) },
  ContextCase("Flow.zip", places: withInner) { AnyStepper(Flow.zip($0.upstream(), $0.inner(7))) },
  ContextCase("withLatestFromFlow", places: withInner) { probe in
    AnyStepper(probe.upstream().delayFlow(for: .seconds(1), clock: probe.clock).withLatestFromFlow(probe.inner(7)))
  },
  // Flattening: the outer in one task, each inner in a task the outer's starts.
  ContextCase("switchToLatestFlow()", places: withInner) { probe in
    AnyStepper(probe.upstream().map { probe.inner($0) }.switchToLatestFlow())
  },
  ContextCase("switchToLatestFlow(_:)", places: withInner.union(["transform"])) { probe in
    AnyStepper(
      probe.upstream().switchToLatestFlow {
        probe.note("transform")
        return probe.inner($0)
      })
  },
  ContextCase("switchToLatestFlow(by:_:)", places: withInner.union(["key", "transform"])) { probe in
    AnyStepper(
      probe.upstream().switchToLatestFlow(
        by: {
          probe.note("key")
          return $0 % 2
        },
        {
          probe.note("transform")
          return probe.inner($0)
        }))
  },
  ContextCase("grouped(by:) into mergeFlow", places: ["upstream body", "upstream map", "key"]) { probe in
    AnyStepper(
      probe.upstream().grouped(by: {
        probe.note("key")
        return $0 % 2
      }).mergeFlow { $0 })
  },
  ContextCase("grouped(by:) (the groups alone)", places: ["upstream body", "upstream map", "key"]) { probe in
    AnyStepper(
      probe.upstream().grouped(by: {
        probe.note("key")
        return $0 % 2
      }).map(\.key))
  },
  ContextCase("mergeFlow(maxConcurrent: 1)", places: withInner.union(["transform"])) { probe in
    AnyStepper(
      probe.upstream().mergeFlow(maxConcurrent: 1) {
        probe.note("transform")
        return probe.inner($0)
      })
  },
  ContextCase("mergeFlow(maxConcurrent: 2)", places: withInner) { probe in
    AnyStepper(probe.upstream().mergeFlow(maxConcurrent: 2) { probe.inner($0) })
  },
  ContextCase("mergeFlow()", places: withInner) { probe in AnyStepper(probe.upstream().mergeFlow { probe.inner($0) }) },
  ContextCase("concatFlow(_:)", places: withInner) { probe in
    AnyStepper(probe.upstream().concatFlow { probe.inner($0) })
  },
  ContextCase("exhaustFlow(_:)", places: withInner) { probe in
    AnyStepper(probe.upstream().exhaustFlow { probe.inner($0) })
  },
  // Sharing: one subscriber, whose first `next()` starts the upstream (the rule for several is
  // `ContextConformanceTests`' hot-source tests).
  ContextCase("shareFlow()") { AnyStepper($0.upstream().shareFlow()) },
  ContextCase("shareFlow(replay: 2)") { AnyStepper($0.upstream().shareFlow(replay: 2)) },
  ContextCase("shareFlow(gracePeriod: 2 s)") { probe in
    AnyStepper(probe.upstream().shareFlow(replay: 1, gracePeriod: .seconds(2), clock: probe.clock))
  },
]

/// A clock for running timed operators without a test clock's schedule: a wait shorter than a
/// minute returns at once (after a yield), moving the clock's time to its deadline; a longer one
/// (a 1,000 s timeout) lasts until it is cancelled, so that it never fires. No wall-clock wait.
final class ImmediateClock: Clock, Sendable {
  struct Instant: InstantProtocol {
    var offset: Duration
    func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
    func duration(to other: Instant) -> Duration { other.offset - offset }
    static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
  }

  private let time = LockedState(Duration.zero)
  private let never = Gate()

  var now: Instant { Instant(offset: time.withLock { $0 }) }
  var minimumResolution: Duration { .zero }

  func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    if now.duration(to: deadline) >= .seconds(60) {
      await never.wait()  // returns once cancelled
      throw CancellationError()
    }
    await Task.yield()
    try Task.checkCancellation()
    time.withLock { $0 = max($0, deadline.offset) }
  }
}
