import AsyncFlow
import AsyncFlowTesting
import Synchronization
import Testing

/// `withLatestFromFlow` starts `other` first, and lets it run until it suspends before the base is
/// started: a value `other` has at once pairs with the base's first element, whatever the
/// scheduling (RxSwift's `testWithLatestFrom_TwoObservablesWithImmediateValues`).
@Suite("withLatestFromFlow: the other's immediate value", .hangGuard)
struct WithLatestFromStartTests {
  /// The first output of `base.withLatestFromFlow(other)`, or `nil` (and an issue) if the consumer
  /// did not have it before the test was cancelled: had the base's first element been dropped, it
  /// would wait for a second one forever, and the suite's time limit, not a count of yields that a
  /// loaded machine may exhaust before the consumer runs, ends the wait.
  private static func firstOutput(
    _ base: CurrentValueFlow<Int>, _ other: CurrentValueFlow<String>, run: Int
  ) async -> String? {
    let consumer = Task {
      var iterator = base.withLatestFromFlow(other).makeAsyncIterator()
      return await iterator.next().map { "\($0.0)\($0.1)" } ?? "nil"
    }
    guard let output = await bounded(consumer, "the first output (run \(run))") else {
      consumer.cancel()
      return nil
    }
    return output
  }

  @Test func theBasesFirstElementPairsWithTheOthersCurrentValue() async {
    for run in 0..<50 where !Task.isCancelled {
      guard let output = await Self.firstOutput(CurrentValueFlow(1), CurrentValueFlow("a"), run: run) else { return }
      #expect(output == "1a", "run \(run)")
      if output != "1a" { return }
    }
  }

  /// An input that never suspends: 0, 1, 2, … until its task is cancelled (or a hundred million).
  private struct Unending: AsyncSequence, Sendable {
    struct AsyncIterator: AsyncIteratorProtocol {
      var next = 0
      mutating func next() async -> Int? {
        guard !Task.isCancelled, next < 100_000_000 else { return nil }
        defer { next += 1 }
        return next
      }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
  }

  /// `other` runs in the caller of the first `next()` only until its first element is in the
  /// operator: the life cycle yields there, so that an input that never suspends gives the caller
  /// back (before, it ran the whole input there, and `next()` never returned).
  @Test func anOtherThatNeverSuspendsGivesTheCallerBack() async {
    for run in 0..<5 where !Task.isCancelled {
      let consumer = Task {
        var iterator = CurrentValueFlow(1).withLatestFromFlow(Unending()).makeAsyncIterator()
        return await iterator.next()?.0
      }
      guard let first = await bounded(consumer, "the first output (run \(run))") else {
        consumer.cancel()
        return
      }
      #expect(first == 1, "run \(run)")
    }
  }

  private final class PullCount: Sendable {
    let value = Atomic(0)
  }

  /// An input that never suspends: 0, 1, 2, … up to `count`, counting what was pulled.
  private struct Counted: AsyncSequence, Sendable {
    let count: Int
    let pulled: PullCount
    struct AsyncIterator: AsyncIteratorProtocol {
      let count: Int
      let pulled: PullCount
      mutating func next() async -> Int? {
        let index = pulled.value.add(1, ordering: .relaxed).oldValue
        return index < count ? index : nil
      }
    }
    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count, pulled: pulled) }
  }

  /// On one serial executor (a test clock's), an other that never suspends still lets the base run:
  /// the input yields its thread every few hundred elements, so the first output comes while the
  /// other still produces. (When it kept its thread, the base ran only once the other had ended;
  /// on a pool with one thread to spare, a busy machine, `next()` waited for all of it.)
  @Test func anOtherThatNeverSuspendsLetsTheBaseRunOnOneThread() async {
    let clock = TestClock()
    let pulled = PullCount()
    let count = 100_000
    let consumer = clock.task {
      var iterator = CurrentValueFlow(1).withLatestFromFlow(Counted(count: count, pulled: pulled)).makeAsyncIterator()
      let first = await iterator.next()?.0
      return (first: first, pulledBefore: pulled.value.load(ordering: .relaxed))
    }
    guard let result = await clock.value(of: consumer) else { return }
    #expect(result.first == 1)
    #expect(result.pulledBefore < count, "the base ran only once the other had ended")
  }

  @MainActor private static func firstOutputOnTheMainActor() async -> String {
    var iterator = CurrentValueFlow(2).withLatestFromFlow(CurrentValueFlow("b")).makeAsyncIterator()
    return await iterator.next().map { "\($0.0)\($0.1)" } ?? "nil"
  }

  /// The consumer on an actor: `other`'s first pull still runs in the caller until it suspends.
  @Test func theBasesFirstElementPairsWhenTheConsumerIsOnAnActor() async {
    for run in 0..<20 where !Task.isCancelled {
      let consumer = Task { @MainActor in await Self.firstOutputOnTheMainActor() }
      guard let output = await bounded(consumer, "the first output on the main actor (run \(run))") else {
        consumer.cancel()
        return
      }
      #expect(output == "2b", "run \(run)")
      if output != "2b" { return }
    }
  }
}
