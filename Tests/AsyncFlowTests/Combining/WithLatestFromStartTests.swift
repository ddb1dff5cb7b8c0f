import AsyncFlow
import AsyncFlowTesting
import Testing

/// `withLatestFromFlow` starts `other` first, and lets it run until it suspends before the base is
/// started: a value `other` has at once pairs with the base's first element, whatever the
/// scheduling (RxSwift's `testWithLatestFrom_TwoObservablesWithImmediateValues`).
@Suite("withLatestFromFlow: the other's immediate value", .timeLimit(.minutes(1)))
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
    for run in 0..<50 {
      guard let output = await Self.firstOutput(CurrentValueFlow(1), CurrentValueFlow("a"), run: run) else { return }
      #expect(output == "1a", "run \(run)")
      if output != "1a" { return }
    }
  }

  @MainActor private static func firstOutputOnTheMainActor() async -> String {
    var iterator = CurrentValueFlow(2).withLatestFromFlow(CurrentValueFlow("b")).makeAsyncIterator()
    return await iterator.next().map { "\($0.0)\($0.1)" } ?? "nil"
  }

  /// The consumer on an actor: `other`'s first pull still runs in the caller until it suspends.
  @Test func theBasesFirstElementPairsWhenTheConsumerIsOnAnActor() async {
    for run in 0..<20 {
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
