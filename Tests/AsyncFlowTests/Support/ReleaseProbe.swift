import AsyncFlowTesting

@testable import AsyncFlow

/// Watches the `Token`s of one run: how many were made and released, which were released while
/// the releasing thread held one of the library's locks, and what a release does next.
final class ReleaseWitness: Sendable {
  private struct State {
    var made = 0
    var released = 0
    var releasedUnderLock: [Int] = []
    var userCodeUnderLock: [String] = []
    var onRelease: (@Sendable () -> Void)?
  }
  private let state = LockedState(State())

  func made() { state.withLock { $0.made += 1 } }

  /// A token's `deinit`. Released under a lock, it records the fact and stops there: calling back
  /// into the operator would deadlock the test. Released outside, it runs `onRelease`, the
  /// re-entrant call an app's `deinit` makes (here: cancelling the consumer).
  func released(_ id: Int) {
    let underLock = LocksHeld.count > 0
    let action = state.withLock { state in
      state.released += 1
      if underLock { state.releasedUnderLock.append(id) }
      return underLock ? nil : state.onRelease
    }
    action?()
  }

  /// User code (a transform, a predicate) about to run: it must not run under a lock.
  func userCode(_ name: String) {
    guard LocksHeld.count > 0 else { return }
    state.withLock { $0.userCodeUnderLock.append(name) }
  }

  func onRelease(_ action: @escaping @Sendable () -> Void) { state.withLock { $0.onRelease = action } }

  var live: Int { state.withLock { $0.made - $0.released } }
  var releasedUnderLock: [Int] { state.withLock { $0.releasedUnderLock } }
  var userCodeUnderLock: [String] { state.withLock { $0.userCodeUnderLock } }
}

/// An element that reports its own release: the user value whose `deinit` calls back (a token,
/// a subscription) that the library must never release while it holds a lock.
final class Token: Sendable, Hashable, CustomStringConvertible {
  let id: Int
  let witness: ReleaseWitness

  init(_ id: Int, _ witness: ReleaseWitness) {
    self.id = id
    self.witness = witness
    witness.made()
  }

  deinit { witness.released(id) }

  static func == (lhs: Token, rhs: Token) -> Bool { lhs.id == rhs.id }
  func hash(into hasher: inout Hasher) { hasher.combine(id) }
  var description: String { "t\(id)" }
}

/// What a release probe's body does after emitting its tokens.
enum ReleaseProbeEnd: Sendable {
  case finish
  case fail
  /// Waits until cancelled, then returns.
  case park
}

/// The environment of one release run: `ProbeEnvironment`'s shape, with `Token` elements.
final class ReleaseEnvironment: Sendable {
  let clock = TestClock()
  let lifetimes = Lifetimes()
  let witness = ReleaseWitness()
  let outerCount: Int
  let outerEnd: ReleaseProbeEnd
  let innerCount: Int
  let innerEnd: ReleaseProbeEnd
  private let never = Gate()

  init(outer outerCount: Int, then outerEnd: ReleaseProbeEnd, inners innerCount: Int = 2,
       then innerEnd: ReleaseProbeEnd = .finish) {
    self.outerCount = outerCount
    self.outerEnd = outerEnd
    self.innerCount = innerCount
    self.innerEnd = innerEnd
  }

  func token(_ id: Int) -> Token { Token(id, witness) }

  func upstream() -> Flow<Token, TestError> { probe(Array(0..<outerCount), then: outerEnd, id: -1) }

  func inner(_ outer: Token) -> Flow<Token, TestError> {
    witness.userCode("transform")
    return probe((0..<innerCount).map { outer.id * 100 + 10 + $0 }, then: innerEnd, id: outer.id)
  }

  func operation() async throws(TestError) -> Token {
    lifetimes.start()
    defer { lifetimes.end() }
    return token(1)
  }

  private func probe(_ ids: [Int], then end: ReleaseProbeEnd, id: Int) -> Flow<Token, TestError> {
    let (lifetimes, never, witness) = (lifetimes, never, witness)
    return Flow { emitter throws(TestError) in
      lifetimes.start()
      defer { lifetimes.end() }
      for element in ids { await emitter.emit(Token(element, witness)) }
      switch end {
      case .finish: return
      case .fail: throw TestError(id: id)
      case .park: await never.wait()
      }
    }
  }
}

/// One row of the release table: an operator applied to `Token` probes.
struct ReleaseCase: Sendable, CustomStringConvertible {
  var name: String
  var make: @Sendable (ReleaseEnvironment) -> AnyStepper
  var description: String { name }
}

/// Every row of `operatorTable`, over elements that report being released under a lock.
let releaseTable: [ReleaseCase] = [
  ReleaseCase(name: "Flow.map") { env in
    AnyStepper(env.upstream().map { (t: Token) throws(TestError) in env.witness.userCode("map"); return env.token(t.id + 1) })
  },
  ReleaseCase(name: "Flow.filter") { env in
    AnyStepper(env.upstream().filter { (t: Token) throws(TestError) in env.witness.userCode("filter"); return t.id % 2 == 0 })
  },
  ReleaseCase(name: "Flow.compactMap") { env in
    AnyStepper(env.upstream().compactMap { (t: Token) throws(TestError) -> Token? in t.id % 2 == 0 ? t : nil })
  },
  ReleaseCase(name: "Flow.eraseToFlow") { AnyStepper($0.upstream().eraseToFlow()) },
  ReleaseCase(name: "Flow.deferred") { env in AnyStepper(Flow<Token, TestError>.deferred { env.upstream() }) },
  ReleaseCase(name: "Flow.single") { env in
    AnyStepper(Flow<Token, TestError>.single { () async throws(TestError) -> Token in try await env.operation() })
  },
  ReleaseCase(name: "catch") { env in AnyStepper(env.upstream().catch { _ in env.inner(env.token(9)) }) },
  ReleaseCase(name: "catchInner") { env in
    AnyStepper(env.upstream().map { env.inner($0) }.catchInner { _ in env.inner(env.token(9)) }.switchToLatestFlow())
  },
  ReleaseCase(name: "mapError") { AnyStepper($0.upstream().mapError { TestError(id: $0.id + 1000) }) },
  ReleaseCase(name: "replaceError") { env in AnyStepper(env.upstream().replaceError(with: env.token(-7))) },
  ReleaseCase(name: "materialize") { AnyStepper($0.upstream().materialize()) },
  ReleaseCase(name: "dematerialize") { AnyStepper($0.upstream().materialize().dematerialize()) },
  ReleaseCase(name: "asLoadState") { AnyStepper($0.upstream().asLoadState()) },
  ReleaseCase(name: "prependState") { env in AnyStepper(env.upstream().prependState(env.token(-1))) },
  ReleaseCase(name: "retryWithBackoff") { env in
    AnyStepper(env.upstream().retryWithBackoff(maxRetries: 2, initialDelay: .seconds(1), clock: env.clock))
  },
  ReleaseCase(name: "retryWithBackoff(resetAfterElement: true)") { env in
    AnyStepper(
      env.upstream().retryWithBackoff(
        maxRetries: 2, initialDelay: .seconds(1), resetAfterElement: true, clock: env.clock))
  },
  ReleaseCase(name: "scanFlow") { env in
    AnyStepper(env.upstream().scanFlow(env.token(-1)) { (_: Token, t: Token) throws(TestError) in t })
  },
  ReleaseCase(name: "removeDuplicatesFlow()") { AnyStepper($0.upstream().removeDuplicatesFlow()) },
  ReleaseCase(name: "removeDuplicatesFlow(by:)") { AnyStepper($0.upstream().removeDuplicatesFlow { $0.id / 2 == $1.id / 2 }) },
  ReleaseCase(name: "collectFlow(count:)") { AnyStepper($0.upstream().collectFlow(count: 2)) },
  ReleaseCase(name: "handleEventsFlow") {
    AnyStepper(
      $0.upstream().handleEventsFlow(onStart: {}, onElement: { _ in }, onFinish: {}, onFailure: { _ in }, onCancel: {}))
  },
  ReleaseCase(name: "traceFlow") { AnyStepper($0.upstream().traceFlow("probe") { _ in }) },
  ReleaseCase(name: "debounceFlow") { env in AnyStepper(env.upstream().debounceFlow(for: .seconds(1), clock: env.clock)) },
  ReleaseCase(name: "throttleFlow(latest: true)") { env in
    AnyStepper(env.upstream().throttleFlow(for: .seconds(1), clock: env.clock, latest: true))
  },
  ReleaseCase(name: "throttleFlow(latest: false)") { env in
    AnyStepper(env.upstream().throttleFlow(for: .seconds(1), clock: env.clock, latest: false))
  },
  ReleaseCase(name: "delayFlow") { env in AnyStepper(env.upstream().delayFlow(for: .seconds(1), clock: env.clock)) },
  ReleaseCase(name: "timeoutFlow(after:)") { env in
    AnyStepper(env.upstream().timeoutFlow(after: .seconds(1000), clock: env.clock))
  },
  ReleaseCase(name: "timeoutFlow(finishingAfter:)") { env in
    AnyStepper(env.upstream().timeoutFlow(finishingAfter: .seconds(1000), clock: env.clock))
  },
  ReleaseCase(name: "collectFlow(every:)") { env in
    AnyStepper(env.upstream().collectFlow(every: .seconds(1), clock: env.clock))
  },
  ReleaseCase(name: "collectFlow(count:orEvery:)") { env in
    AnyStepper(env.upstream().collectFlow(count: 2, orEvery: .seconds(1), clock: env.clock))
  },
  ReleaseCase(name: "sampleFlow") { env in AnyStepper(env.upstream().sampleFlow(every: .seconds(1), clock: env.clock)) },
  ReleaseCase(name: "bufferFlow(.unbounded)") { AnyStepper($0.upstream().bufferFlow(policy: .unbounded)) },
  ReleaseCase(name: "bufferFlow(.bufferingNewest(2))") { AnyStepper($0.upstream().bufferFlow(policy: .bufferingNewest(2))) },
  ReleaseCase(name: "bufferFlow(.bufferingOldest(2))") { AnyStepper($0.upstream().bufferFlow(policy: .bufferingOldest(2))) },
  ReleaseCase(name: "Flow.merge") { env in AnyStepper(Flow.merge(env.upstream(), env.inner(env.token(7)))) },
  ReleaseCase(name: "Flow.combineLatest") { env in
    AnyStepper(Flow.combineLatest(env.upstream(), env.inner(env.token(7))))
  },
  ReleaseCase(name: "Flow.zip") { env in AnyStepper(Flow.zip(env.upstream(), env.inner(env.token(7)))) },
  ReleaseCase(name: "withLatestFromFlow") { env in
    AnyStepper(
      env.upstream().delayFlow(for: .seconds(1), clock: env.clock).withLatestFromFlow(env.inner(env.token(7))))
  },
  ReleaseCase(name: "switchToLatestFlow()") { env in AnyStepper(env.upstream().map { env.inner($0) }.switchToLatestFlow()) },
  ReleaseCase(name: "switchToLatestFlow(_:)") { env in AnyStepper(env.upstream().switchToLatestFlow { env.inner($0) }) },
  ReleaseCase(name: "switchToLatestFlow(by:_:)") { env in
    AnyStepper(env.upstream().switchToLatestFlow(by: { $0.id % 2 }) { env.inner($0) })
  },
  ReleaseCase(name: "mergeFlow(maxConcurrent: 1)") { env in
    AnyStepper(env.upstream().mergeFlow(maxConcurrent: 1) { env.inner($0) })
  },
  ReleaseCase(name: "mergeFlow()") { env in AnyStepper(env.upstream().mergeFlow { env.inner($0) }) },
  ReleaseCase(name: "concatFlow(_:)") { env in AnyStepper(env.upstream().concatFlow { env.inner($0) }) },
  ReleaseCase(name: "exhaustFlow(_:)") { env in AnyStepper(env.upstream().exhaustFlow { env.inner($0) }) },
  ReleaseCase(name: "grouped(by:) into mergeFlow") { env in
    AnyStepper(env.upstream().grouped(by: { $0.id % 2 }).mergeFlow { $0 })
  },
  ReleaseCase(name: "grouped(by:) (the groups alone)") { env in
    AnyStepper(env.upstream().grouped(by: { $0.id % 2 }).map(\.key))
  },
  ReleaseCase(name: "shareFlow()") { AnyStepper($0.upstream().shareFlow()) },
  ReleaseCase(name: "shareFlow(replay: 2)") { AnyStepper($0.upstream().shareFlow(replay: 2)) },
  ReleaseCase(name: "shareFlow(gracePeriod: 2 s)") { env in
    AnyStepper(env.upstream().shareFlow(replay: 2, gracePeriod: .seconds(2), clock: env.clock))
  },
]
