import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// How a release run ends: the moments at which an operator lets go of elements it holds.
enum ReleaseSituation: String, CaseIterable, Sendable, CustomStringConvertible {
  /// The upstream finishes after four tokens: what the operator dropped, conflated or replaced
  /// on the way is released as it runs, the rest at the end.
  case finish
  /// The upstream fails after four tokens: what the operator held is dropped for the failure.
  case fail
  /// The first token released anywhere cancels the consumer from its `deinit` (the re-entrant
  /// call), while the upstream parks: what the operator holds is dropped for the cancellation.
  case cancelFromARelease
  /// The consumer takes one element and drops its iterator without cancelling.
  case dropIterator

  var description: String { rawValue }
}

@Suite("Re-entrant release: no user value is released and no user code runs under a lock", .hangGuard)
struct ReentrantReleaseConformanceTests {
  @Test(arguments: releaseTable, ReleaseSituation.allCases)
  func operatorReleasesElementsOutsideItsLocks(_ row: ReleaseCase, _ situation: ReleaseSituation) async {
    let env: ReleaseEnvironment =
      switch situation {
      case .finish: ReleaseEnvironment(outer: 4, then: .finish)
      case .fail: ReleaseEnvironment(outer: 4, then: .fail)
      case .cancelFromARelease, .dropIterator: ReleaseEnvironment(outer: 4, then: .park, inners: 2, then: .park)
      }
    let clock = env.clock
    let returned = LockedState(false)
    let context = "\(row.name), \(situation)"

    // A clock made in nonisolated code runs its jobs at once: without the gate, a consumer that
    // took and dropped every token before the hook below was in place would wait for ever.
    let hookInPlace = Gate()
    let consumer = clock.task {
      defer { returned.withLock { $0 = true } }
      await hookInPlace.wait()
      let stepper = row.make(env)
      guard situation != .dropIterator else {
        _ = await stepper.next()
        return  // the stepper, and the iterator in it, go with this closure
      }
      for _ in 0..<20 where await stepper.next().isElement {}
    }
    if situation == .cancelFromARelease { env.witness.onRelease { consumer.cancel() } }
    await hookInPlace.entered()
    hookInPlace.release()

    await clock.advance(by: .seconds(10))
    await clock.runCurrent()
    guard returned.withLock({ $0 }) else {
      Issue.record("\(context): next() did not return once the clock settled: it hangs")
      consumer.cancel()
      return
    }
    await bounded(consumer, "consumer")
    // Past any grace period, so that a share's upstream and replay have gone too.
    await clock.advance(by: .seconds(5))

    #expect(env.witness.releasedUnderLock.isEmpty, "\(context): tokens released under a lock: \(env.witness.releasedUnderLock)")
    #expect(env.witness.userCodeUnderLock.isEmpty, "\(context): user code run under a lock: \(env.witness.userCodeUnderLock)")
    #expect(env.witness.live == 0, "\(context): \(env.witness.live) tokens still held once the iteration ended")
    #expect(env.lifetimes.live == 0, "\(context): bodies still running after the iteration")
    #expect(clock.pendingSleepers == 0, "\(context): sleepers left behind")
  }
}

@Suite("ReleaseWitness", .hangGuard)
struct ReleaseWitnessTests {
  @Test func aTokenReleasedOutsideEveryLockIsNotReported() {
    let witness = ReleaseWitness()
    do { _ = Token(0, witness) }
    #expect(LocksHeld.count == 0)
    #expect(witness.releasedUnderLock.isEmpty && witness.live == 0)
  }

  @Test func aTokenReleasedUnderALockIsReported() {
    let witness = ReleaseWitness()
    let box = LockedState<Token?>(Token(1, witness))
    box.withLock { $0 = nil }
    #expect(witness.releasedUnderLock == [1])
  }
}
