import AsyncFlowTesting

@testable import AsyncFlow

/// What one `next()` gave, as a value every operator's iterator can be compared by.
enum Step: Equatable, Sendable {
  case element(String)
  case end
  case failure(String)

  var isElement: Bool {
    if case .element = self { return true }
    return false
  }
}

/// One operator's iterator behind a uniform `next()`, so that one test body drives every operator.
/// Not `Sendable`, like the iterators it wraps: it lives in the consumer's task.
final class AnyStepper {
  private let step: () async -> Step

  init<S: AsyncSequence>(_ sequence: S) {
    var iterator = sequence.makeAsyncIterator()
    step = {
      do throws(S.Failure) {
        guard let element = try await iterator.next(isolation: nil) else { return .end }
        return .element(String(describing: element))
      } catch {
        return .failure(String(describing: error))
      }
    }
  }

  func next() async -> Step { await step() }
}

/// Counts the bodies (outer, inners, fallbacks, operations) a pipeline started and how many of
/// them have ended, so that a test can check at the very moment `next()` returned that none is
/// still running.
final class Lifetimes: Sendable {
  private let state = LockedState((started: 0, ended: 0))

  func start() { state.withLock { $0.started += 1 } }
  func end() { state.withLock { $0.ended += 1 } }

  var started: Int { state.withLock { $0.started } }
  /// Bodies started and not yet ended.
  var live: Int { state.withLock { $0.started - $0.ended } }
}

/// What a probe body does after emitting its elements.
enum ProbeEnd: Sendable {
  /// Returns: the sequence finishes.
  case finish
  /// Throws `TestError(id:)`.
  case fail
  /// Waits until cancelled (a `Gate` nobody releases), then returns.
  case park
  /// Waits on `latch` ignoring cancellation, then emits `more` and returns: an upstream that
  /// does not honour cancellation.
  case stubborn(latch: CompletionSignal, more: [Int])
  /// Waits on `latch` ignoring cancellation, then throws `TestError(id:)`: a failure that comes
  /// only after the consumer was cancelled.
  case stubbornFailure(latch: CompletionSignal)
}

/// The environment of one conformance run: the clock every timed operator uses, the lifetimes of
/// every body, and what the outer (upstream) and inner probes do.
final class ProbeEnvironment: Sendable {
  let clock = TestClock()
  let lifetimes = Lifetimes()
  let outerElements: [Int]
  let outerEnd: ProbeEnd
  /// How many elements each inner (or fallback, or operation) emits before `innerEnd`.
  let innerCount: Int
  let innerEnd: ProbeEnd
  /// Another upstream in place of the probe body (`CancellationEdgeConformanceTests`).
  private let replacedUpstream: (@Sendable () -> Flow<Int, TestError>)?
  private let never = Gate()

  init(
    outer: [Int], then outerEnd: ProbeEnd, inners innerCount: Int = 1, then innerEnd: ProbeEnd = .finish,
    upstream: (@Sendable () -> Flow<Int, TestError>)? = nil
  ) {
    self.outerElements = outer
    self.outerEnd = outerEnd
    self.innerCount = innerCount
    self.innerEnd = innerEnd
    self.replacedUpstream = upstream
  }

  /// The upstream: a `Flow` whose body counts itself in `lifetimes`, ending in a `defer` (or the
  /// one given to `init`).
  func upstream() -> Flow<Int, TestError> {
    replacedUpstream?() ?? probe(outerElements, then: outerEnd, id: -1)
  }

  /// Inner number `index`: emits `index * 100 + k` for `k` in `0..<innerCount`, then `innerEnd`.
  func inner(_ index: Int) -> Flow<Int, TestError> {
    probe((0..<innerCount).map { index * 100 + $0 }, then: innerEnd, id: index)
  }

  /// An operation for `Flow.single`, counted like a body: its first element (`innerCount > 0`),
  /// or what `innerEnd` says; parked, it returns -1 once cancelled (an operation that does not
  /// throw on cancellation, as a typed-throwing one cannot).
  func operation() async throws(TestError) -> Int {
    lifetimes.start()
    defer { lifetimes.end() }
    if innerCount > 0 { return 0 }
    switch innerEnd {
    case .finish: return -1
    case .fail: throw TestError(id: 0)
    case .park:
      await never.wait()
      return -1
    case .stubborn(let latch, _):
      await latch.wait()
      return -1
    case .stubbornFailure(let latch):
      await latch.wait()
      throw TestError(id: 0)
    }
  }

  private func probe(_ elements: [Int], then end: ProbeEnd, id: Int) -> Flow<Int, TestError> {
    let (lifetimes, never) = (lifetimes, never)
    return Flow { emitter throws(TestError) in
      lifetimes.start()
      defer { lifetimes.end() }
      for element in elements { await emitter.emit(element) }
      switch end {
      case .finish: return
      case .fail: throw TestError(id: id)
      case .park: await never.wait()
      case .stubborn(let latch, let more):
        await latch.wait()
        for element in more { await emitter.emit(element) }
      case .stubbornFailure(let latch):
        await latch.wait()
        throw TestError(id: id)
      }
    }
  }
}

/// One row of the conformance table: an operator applied to the probes of a `ProbeEnvironment`.
/// Adding an operator to the suite means adding one row to `operatorTable`.
struct OperatorCase: Sendable, CustomStringConvertible {
  enum Upstream: Sendable {
    /// The operator iterates its upstream in the consumer's iteration and has ended every body
    /// it started when `next()` returns `nil`.
    case awaited
    /// `shareFlow`: the upstream task belongs to the shared source; it is cancelled when the last
    /// subscriber leaves, not awaited (Guides/Effects.md, first paragraph). It must still have
    /// ended once the clock settles.
    case sharedNotAwaited
  }

  var name: String
  /// Whether the operator runs inners, fallbacks or an operation that can fail at every position.
  var hasInners = false
  var upstream = Upstream.awaited
  /// How long the upstream may outlive its last subscriber (`shareFlow(gracePeriod:)`).
  var gracePeriod = Duration.zero
  var make: @Sendable (ProbeEnvironment) -> AnyStepper

  var description: String { name }
}

/// Every public operator of AsyncFlow that returns a sequence, applied to a probe upstream.
/// Timed operators use an interval of 1 s on the environment's `TestClock` (timeouts 1,000 s, so
/// that driving the clock by a few seconds does not fire them).
let operatorTable: [OperatorCase] = [
  // Flow's own.
  OperatorCase(name: "Flow.map") { AnyStepper($0.upstream().map { (x: Int) throws(TestError) in x + 1 }) },
  OperatorCase(name: "Flow.filter") { AnyStepper($0.upstream().filter { (x: Int) throws(TestError) in x >= 0 }) },
  OperatorCase(name: "Flow.compactMap") {
    AnyStepper($0.upstream().compactMap { (x: Int) throws(TestError) -> Int? in x })
  },
  OperatorCase(name: "Flow.eraseToFlow") { AnyStepper($0.upstream().scanFlow(0, +).eraseToFlow()) },
  OperatorCase(name: "Flow.deferred") { env in AnyStepper(Flow<Int, TestError>.deferred { env.upstream() }) },
  OperatorCase(name: "Flow.single", hasInners: true) { env in
    AnyStepper(
      Flow<Int, TestError>.single { () async throws(TestError) -> Int in try await env.operation() })
  },
  // Errors and state.
  OperatorCase(name: "catch", hasInners: true) { env in AnyStepper(env.upstream().catch { _ in env.inner(9) }) },
  OperatorCase(name: "catchInner", hasInners: true) { env in
    AnyStepper(env.upstream().map { env.inner($0) }.catchInner { _ in env.inner(9) }.switchToLatestFlow())
  },
  // The wrapped inners themselves, not iterated: what catchInner does with its outer alone.
  OperatorCase(name: "catchInner (the outer alone)") { env in
    AnyStepper(env.upstream().map { env.inner($0) }.catchInner { _ in env.inner(9) })
  },
  OperatorCase(name: "mapError") { AnyStepper($0.upstream().mapError { TestError(id: $0.id + 1000) }) },
  OperatorCase(name: "replaceError") { AnyStepper($0.upstream().replaceError(with: -7)) },
  OperatorCase(name: "materialize") { AnyStepper($0.upstream().materialize()) },
  OperatorCase(name: "dematerialize") { AnyStepper($0.upstream().materialize().dematerialize()) },
  OperatorCase(name: "asLoadState") { AnyStepper($0.upstream().asLoadState()) },
  OperatorCase(name: "prependState") { AnyStepper($0.upstream().prependState(-1)) },
  OperatorCase(name: "retryWithBackoff") { env in
    AnyStepper(env.upstream().retryWithBackoff(maxRetries: 2, initialDelay: .seconds(1), clock: env.clock))
  },
  // Not `resetAfterElement: true`: over a probe that delivers and then fails, it retries forever,
  // as its doc comment warns, so `nextAfterFailure` never ends. `RetryWithBackoffTests` covers it.
  // Shaping and observing.
  OperatorCase(name: "scanFlow") {
    AnyStepper($0.upstream().scanFlow(0) { (sum: Int, x: Int) throws(TestError) in sum + x })
  },
  OperatorCase(name: "removeDuplicatesFlow()") { AnyStepper($0.upstream().removeDuplicatesFlow()) },
  OperatorCase(name: "removeDuplicatesFlow(by:)") { AnyStepper($0.upstream().removeDuplicatesFlow { $0 == $1 }) },
  OperatorCase(name: "collectFlow(count:)") { AnyStepper($0.upstream().collectFlow(count: 2)) },
  OperatorCase(name: "handleEventsFlow") {
    AnyStepper(
      $0.upstream().handleEventsFlow(onStart: {}, onElement: { _ in }, onFinish: {}, onFailure: { _ in }, onCancel: {}))
  },
  OperatorCase(name: "traceFlow") { AnyStepper($0.upstream().traceFlow("probe") { _ in }) },
  // Time.
  OperatorCase(name: "debounceFlow") { env in
    AnyStepper(env.upstream().debounceFlow(for: .seconds(1), clock: env.clock))
  },
  OperatorCase(name: "throttleFlow(latest: true)") { env in
    AnyStepper(env.upstream().throttleFlow(for: .seconds(1), clock: env.clock, latest: true))
  },
  OperatorCase(name: "throttleFlow(latest: false)") { env in
    AnyStepper(env.upstream().throttleFlow(for: .seconds(1), clock: env.clock, latest: false))
  },
  OperatorCase(name: "delayFlow") { env in AnyStepper(env.upstream().delayFlow(for: .seconds(1), clock: env.clock)) },
  OperatorCase(name: "timeoutFlow(after:)") { env in
    AnyStepper(env.upstream().timeoutFlow(after: .seconds(1000), clock: env.clock))
  },
  OperatorCase(name: "timeoutFlow(finishingAfter:)") { env in
    AnyStepper(env.upstream().timeoutFlow(finishingAfter: .seconds(1000), clock: env.clock))
  },
  OperatorCase(name: "collectFlow(every:)") { env in
    AnyStepper(env.upstream().collectFlow(every: .seconds(1), clock: env.clock))
  },
  OperatorCase(name: "collectFlow(count:orEvery:)") { env in
    AnyStepper(env.upstream().collectFlow(count: 2, orEvery: .seconds(1), clock: env.clock))
  },
  OperatorCase(name: "sampleFlow") { env in AnyStepper(env.upstream().sampleFlow(every: .seconds(1), clock: env.clock))
  },
  // Shaping with a task of its own.
  OperatorCase(name: "bufferFlow(.unbounded)") { AnyStepper($0.upstream().bufferFlow(policy: .unbounded)) },
  OperatorCase(name: "bufferFlow(.bufferingNewest(2))") {
    AnyStepper($0.upstream().bufferFlow(policy: .bufferingNewest(2)))
  },
  OperatorCase(name: "bufferFlow(.bufferingOldest(2))") {
    AnyStepper($0.upstream().bufferFlow(policy: .bufferingOldest(2)))
  },
  // Combining: the probe, and a second input that finishes after one element.
  OperatorCase(name: "Flow.merge") { env in AnyStepper(Flow.merge(env.upstream(), env.inner(7))) },
  OperatorCase(name: "Flow.combineLatest") { env in AnyStepper(Flow.combineLatest(env.upstream(), env.inner(7))) },
  OperatorCase(name: "Flow.zip") { env in AnyStepper(Flow.zip(env.upstream(), env.inner(7))) },
  // The upstream is delayed by a second on the clock, so that the other input's element (which
  // comes at once) is always there first: elements before it would be dropped.
  OperatorCase(name: "withLatestFromFlow") { env in
    AnyStepper(env.upstream().delayFlow(for: .seconds(1), clock: env.clock).withLatestFromFlow(env.inner(7)))
  },
  // Flattening.
  OperatorCase(name: "switchToLatestFlow()", hasInners: true) { env in
    AnyStepper(env.upstream().map { env.inner($0) }.switchToLatestFlow())
  },
  OperatorCase(name: "switchToLatestFlow(_:)", hasInners: true) { env in
    AnyStepper(env.upstream().switchToLatestFlow { env.inner($0) })
  },
  OperatorCase(name: "switchToLatestFlow(by:_:)", hasInners: true) { env in
    AnyStepper(env.upstream().switchToLatestFlow(by: { $0 % 2 }) { env.inner($0) })
  },
  OperatorCase(name: "mergeFlow(maxConcurrent: 1)", hasInners: true) { env in
    AnyStepper(env.upstream().mergeFlow(maxConcurrent: 1) { env.inner($0) })
  },
  OperatorCase(name: "mergeFlow(maxConcurrent: 2)", hasInners: true) { env in
    AnyStepper(env.upstream().mergeFlow(maxConcurrent: 2) { env.inner($0) })
  },
  OperatorCase(name: "mergeFlow()", hasInners: true) { env in AnyStepper(env.upstream().mergeFlow { env.inner($0) }) },
  OperatorCase(name: "concatFlow(_:)", hasInners: true) { env in AnyStepper(env.upstream().concatFlow { env.inner($0) })
  },
  OperatorCase(name: "exhaustFlow(_:)", hasInners: true) { env in
    AnyStepper(env.upstream().exhaustFlow { env.inner($0) })
  },
  // Grouping: the groups' elements, through one pipeline per group; and the groups alone.
  OperatorCase(name: "grouped(by:) into mergeFlow") { env in
    AnyStepper(env.upstream().grouped(by: { $0 % 2 }).mergeFlow { $0 })
  },
  OperatorCase(name: "grouped(by:) (the groups alone)") { env in
    AnyStepper(env.upstream().grouped(by: { $0 % 2 }).map(\.key))
  },
  // Sharing: the documented exception for the upstream's lifetime.
  OperatorCase(name: "shareFlow()", upstream: .sharedNotAwaited) { AnyStepper($0.upstream().shareFlow()) },
  OperatorCase(name: "shareFlow(replay: 2)", upstream: .sharedNotAwaited) {
    AnyStepper($0.upstream().shareFlow(replay: 2))
  },
  OperatorCase(name: "shareFlow(gracePeriod: 2 s)", upstream: .sharedNotAwaited, gracePeriod: .seconds(2)) { env in
    AnyStepper(env.upstream().shareFlow(replay: 1, gracePeriod: .seconds(2), clock: env.clock))
  },
]
