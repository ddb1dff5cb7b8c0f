import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// An upstream that holds no lock of the library's: `Token`s made as they are asked for, then a
/// finish or a park until cancelled. What these tests find released under a lock was released by
/// the timed operator itself (a `Flow` upstream would mix in its own hand-off).
private struct TokenSource: AsyncSequence, Sendable {
  let count: Int
  let park: Bool
  let witness: ReleaseWitness
  let never = Gate()

  struct AsyncIterator: AsyncIteratorProtocol {
    let source: TokenSource
    var made = 0

    mutating func next() async -> Token? {
      if made < source.count {
        defer { made += 1 }
        return Token(made, source.witness)
      }
      if source.park { await source.never.wait() }
      return nil
    }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: self) }
}

private struct TimedReleaseCase: Sendable, CustomStringConvertible {
  var name: String
  var make: @Sendable (TokenSource, TestClock) -> AnyStepper
  var description: String { name }
}

private let timedReleaseTable: [TimedReleaseCase] = [
  TimedReleaseCase(name: "debounceFlow") { AnyStepper($0.debounceFlow(for: .seconds(1), clock: $1)) },
  TimedReleaseCase(name: "throttleFlow(latest: true)") {
    AnyStepper($0.throttleFlow(for: .seconds(1), clock: $1, latest: true))
  },
  TimedReleaseCase(name: "throttleFlow(latest: false)") {
    AnyStepper($0.throttleFlow(for: .seconds(1), clock: $1, latest: false))
  },
  TimedReleaseCase(name: "delayFlow") { AnyStepper($0.delayFlow(for: .seconds(1), clock: $1)) },
  TimedReleaseCase(name: "timeoutFlow(finishingAfter:)") {
    AnyStepper($0.timeoutFlow(finishingAfter: .seconds(1000), clock: $1))
  },
  TimedReleaseCase(name: "collectFlow(every:)") { AnyStepper($0.collectFlow(every: .seconds(1), clock: $1)) },
  TimedReleaseCase(name: "collectFlow(count:orEvery:)") {
    AnyStepper($0.collectFlow(count: 2, orEvery: .seconds(1), clock: $1))
  },
  TimedReleaseCase(name: "sampleFlow") { AnyStepper($0.sampleFlow(every: .seconds(1), clock: $1)) },
  TimedReleaseCase(name: "bufferFlow(.unbounded)") { source, _ in AnyStepper(source.bufferFlow(policy: .unbounded)) },
  TimedReleaseCase(name: "bufferFlow(.bufferingNewest(1))") { source, _ in
    AnyStepper(source.bufferFlow(policy: .bufferingNewest(1)))
  },
  TimedReleaseCase(name: "bufferFlow(.bufferingOldest(1))") { source, _ in
    AnyStepper(source.bufferFlow(policy: .bufferingOldest(1)))
  },
]

private enum TimedReleaseSituation: String, CaseIterable, Sendable, CustomStringConvertible {
  /// Eight tokens, then a finish: what is displaced on the way is released as the operator runs.
  case finish
  /// The first token released anywhere cancels the consumer from its `deinit`, while the upstream
  /// parks: the re-entrant call that deadlocks if the release happens under the operator's lock.
  case cancelFromARelease
  /// The consumer takes one element and drops its iterator.
  case dropIterator

  var description: String { rawValue }
}

/// Issue 24, item 1, for the timed family: an element a timed operator displaces (a debounce or
/// sample replacing its pending element, a conflation, a buffering policy's drop) is released
/// after the operator's lock. Before the fix, each row but `delayFlow`, `timeoutFlow` and the
/// collects released tokens under it (the `cancelFromARelease` case then deadlocks in an app:
/// here the witness sees the lock held and skips the call back, so the test fails, not hangs).
@Suite("Timed operators release what they displace outside their lock", .hangGuard)
struct TimedReleaseTests {
  @Test(arguments: timedReleaseTable, TimedReleaseSituation.allCases)
  fileprivate func displacedElementsAreReleasedOutsideTheLock(
    _ row: TimedReleaseCase, _ situation: TimedReleaseSituation
  ) async {
    let clock = TestClock()
    let witness = ReleaseWitness()
    let source = TokenSource(count: 8, park: situation != .finish, witness: witness)
    let returned = LockedState(false)
    let context = "\(row.name), \(situation)"

    // A clock made in nonisolated code runs its jobs at once: without the gate, a consumer that
    // took and dropped every token before the hook below was in place would wait for ever.
    let hookInPlace = Gate()
    let consumer = clock.task {
      defer { returned.withLock { $0 = true } }
      await hookInPlace.wait()
      let stepper = row.make(source, clock)
      guard situation != .dropIterator else {
        _ = await stepper.next()
        return
      }
      for _ in 0..<20 where await stepper.next().isElement {}
    }
    if situation == .cancelFromARelease { witness.onRelease { consumer.cancel() } }
    await hookInPlace.entered()
    hookInPlace.release()

    await clock.advance(by: .seconds(10))
    await clock.runCurrent()
    if situation == .cancelFromARelease, !returned.withLock({ $0 }) {
      // Operators that displace nothing (delay, timeout, collect, unbounded) release nothing
      // before the consumer has taken it: nothing cancels, so cancel here.
      consumer.cancel()
    }
    await clock.runCurrent()
    guard returned.withLock({ $0 }) else {
      Issue.record("\(context): next() did not return once the clock settled: it hangs")
      consumer.cancel()
      return
    }
    await bounded(consumer, "consumer")
    await clock.runCurrent()

    #expect(witness.releasedUnderLock.isEmpty, "\(context): tokens released under a lock: \(witness.releasedUnderLock)")
    #expect(witness.live == 0, "\(context): \(witness.live) tokens still held once the iteration ended")
    #expect(clock.pendingSleepers == 0, "\(context): sleepers left behind")
  }
}
