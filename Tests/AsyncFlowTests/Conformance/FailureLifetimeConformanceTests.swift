import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// One operator whose own closure fails (or under which one fails) over upstreams that run work
/// of their own: the probe's body, parked after its elements until it is cancelled, and inners
/// parked after one element. `handOff` records the bodies still running where a failure is
/// handed to a handler (`catch`'s, `retryWithBackoff`'s `while`); `nil` when there is none.
struct FailureCase: Sendable, CustomStringConvertible {
  var name: String
  var make: @Sendable (ProbeEnvironment, _ handOff: @escaping @Sendable () -> Void) -> AnyStepper

  var description: String { name }
}

/// Fails at 1: the closure every row's operator is given (or is fed by).
@Sendable func failingAtOne(_ value: Int) throws(TestError) -> Int {
  if value == 1 { throw TestError(id: 1) }
  return value
}

/// Fails at once: an inner's closure.
@Sendable func failing(_ value: Int) throws(TestError) -> Int { throw TestError(id: 2) }

let failureTable: [FailureCase] = [
  FailureCase(name: "Flow.map") { env, _ in AnyStepper(env.upstream().map(failingAtOne)) },
  FailureCase(name: "Flow.filter") { env, _ in
    AnyStepper(env.upstream().filter { (value: Int) throws(TestError) -> Bool in try failingAtOne(value) >= 0 })
  },
  FailureCase(name: "Flow.compactMap") { env, _ in
    AnyStepper(env.upstream().compactMap { (value: Int) throws(TestError) -> Int? in try failingAtOne(value) })
  },
  FailureCase(name: "Flow.map (async)") { env, _ in
    AnyStepper(env.upstream().map { (value: Int) async throws(TestError) -> Int in try failingAtOne(value) })
  },
  FailureCase(name: "Flow.filter (async)") { env, _ in
    AnyStepper(env.upstream().filter { (value: Int) async throws(TestError) -> Bool in try failingAtOne(value) >= 0 })
  },
  FailureCase(name: "Flow.compactMap (async)") { env, _ in
    AnyStepper(env.upstream().compactMap { (value: Int) async throws(TestError) -> Int? in try failingAtOne(value) })
  },
  // An upstream pulled asynchronously rather than from a batch.
  FailureCase(name: "Flow.map over Flow.deferred") { env, _ in
    AnyStepper(Flow.deferred { env.upstream() }.map(failingAtOne))
  },
  FailureCase(name: "Flow.map over an operator with a task") { env, _ in
    AnyStepper(Flow(env.upstream().bufferFlow(policy: .unbounded)).map(failingAtOne))
  },
  FailureCase(name: "scanFlow") { env, _ in
    AnyStepper(env.upstream().scanFlow(0) { (_: Int, value: Int) throws(TestError) -> Int in try failingAtOne(value) })
  },
  FailureCase(name: "scanFlow over an operator with a task") { env, _ in
    AnyStepper(
      env.upstream().bufferFlow(policy: .unbounded).scanFlow(0) { (_: Int, value: Int) throws(TestError) -> Int in
        try failingAtOne(value)
      })
  },
  FailureCase(name: "handleEventsFlow") { env, _ in
    AnyStepper(env.upstream().map(failingAtOne).handleEventsFlow(onFailure: { _ in }))
  },
  FailureCase(name: "traceFlow") { env, _ in AnyStepper(env.upstream().map(failingAtOne).traceFlow("probe") { _ in }) },
  FailureCase(name: "catch") { env, handOff in
    AnyStepper(
      env.upstream().scanFlow(0) { (_: Int, value: Int) throws(TestError) -> Int in try failingAtOne(value) }
        .catch { _ in
          handOff()
          return Flow<Int, Never>.just(-1)
        })
  },
  FailureCase(name: "replaceError") { env, _ in AnyStepper(env.upstream().map(failingAtOne).replaceError(with: -1)) },
  FailureCase(name: "retryWithBackoff") { env, handOff in
    AnyStepper(
      env.upstream().map(failingAtOne).retryWithBackoff(maxRetries: 1, initialDelay: .zero, clock: env.clock) { _ in
        handOff()
        return true
      })
  },
  // The outer fails in its transform while inners run, and an inner fails in its own.
  FailureCase(name: "switchToLatestFlow (outer)") { env, _ in
    AnyStepper(env.upstream().map(failingAtOne).switchToLatestFlow { env.inner($0) })
  },
  FailureCase(name: "switchToLatestFlow (inner)") { env, _ in
    AnyStepper(env.upstream().switchToLatestFlow { env.inner($0).map(failing) })
  },
  FailureCase(name: "mergeFlow (outer)") { env, _ in
    AnyStepper(env.upstream().map(failingAtOne).mergeFlow { env.inner($0) })
  },
  FailureCase(name: "mergeFlow (inner)") { env, _ in
    AnyStepper(env.upstream().mergeFlow { env.inner($0).map(failing) })
  },
  FailureCase(name: "concatFlow (inner)") { env, _ in
    AnyStepper(env.upstream().concatFlow { env.inner($0).map(failing) })
  },
  FailureCase(name: "exhaustFlow (inner)") { env, _ in
    AnyStepper(env.upstream().exhaustFlow { env.inner($0).map(failing) })
  },
]

/// What the consumer saw of one failure run.
private final class FailureRecord: Sendable {
  let steps = LockedState<[Step]>([])
  /// Bodies running when `next()` threw, or returned the replacement (`replaceError`).
  let liveAtFailure = LockedState<Int?>(nil)
  /// Bodies running at each hand-off of the failure to a handler.
  let liveAtHandOff = LockedState<[Int]>([])
}

@Suite("A failure ends the iteration only after what it started has ended", .hangGuard)
struct FailureLifetimeConformanceTests {
  @Test(arguments: failureTable, EdgeSchedule.allCases)
  func nothingTheIterationStartedRunsWhenTheFailureGoesOn(_ row: FailureCase, _ schedule: EdgeSchedule) async {
    let context = "\(row.name), \(schedule)"
    let env = ProbeEnvironment(outer: [0, 1, 2], then: .park, inners: 1, then: .park)
    let record = FailureRecord()
    let handOff: @Sendable () -> Void = { [lifetimes = env.lifetimes] in
      let live = lifetimes.live
      record.liveAtHandOff.withLock { $0.append(live) }
    }
    let body: @Sendable () async -> Void = {
      let stepper = row.make(env, handOff)
      for _ in 0..<20 {
        let step = await stepper.next()
        let live = env.lifetimes.live
        record.steps.withLock { $0.append(step) }
        if case .failure = step {
          record.liveAtFailure.withLock { $0 = $0 ?? live }
          break
        }
        if step == .element("-1") { record.liveAtFailure.withLock { $0 = $0 ?? live } }
        if step == .end { break }
      }
    }
    let task = schedule == .testClock ? env.clock.task(body) : Task { await body() }
    if schedule == .testClock { await env.clock.run() }
    await bounded(task, "\(context): the consumer")

    let steps = record.steps.withLock { $0 }
    #expect(env.lifetimes.started > 0, "\(context): no body started")
    #expect(record.liveAtFailure.withLock { $0 } == 0, "\(context): bodies running when the failure went on: \(steps)")
    #expect(record.liveAtHandOff.withLock { $0 }.allSatisfy { $0 == 0 }, "\(context): bodies running at a hand-off")
  }
}
