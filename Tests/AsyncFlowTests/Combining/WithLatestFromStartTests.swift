import AsyncFlow
import AsyncFlowTesting
import Testing

/// `withLatestFromFlow` starts `other` first, and lets it run until it suspends before the base is
/// started: a value `other` has at once pairs with the base's first element, whatever the
/// scheduling (RxSwift's `testWithLatestFrom_TwoObservablesWithImmediateValues`).
@Suite("withLatestFromFlow: the other's immediate value", .timeLimit(.minutes(1)))
struct WithLatestFromStartTests {
  /// The first output of `base.withLatestFromFlow(other)`; if the base's first element was
  /// dropped, the consumer would wait for a second one forever: after a bounded, clock-free wait
  /// it is cancelled (and returns "nil"), so that the test fails instead of hanging.
  private static func firstOutput(_ base: CurrentValueFlow<Int>, _ other: CurrentValueFlow<String>) async -> String {
    let done = Signal()
    let consumer = Task {
      var iterator = base.withLatestFromFlow(other).makeAsyncIterator()
      defer { done.fire() }
      return await iterator.next().map { "\($0.0)\($0.1)" } ?? "nil"
    }
    for _ in 0..<1_000_000 {
      if done.isFired { break }
      await Task.yield()
    }
    if !done.isFired { consumer.cancel() }
    return await bounded(consumer, "the first output") ?? "stuck"
  }

  @Test func theBasesFirstElementPairsWithTheOthersCurrentValue() async {
    for run in 0..<50 {
      let output = await Self.firstOutput(CurrentValueFlow(1), CurrentValueFlow("a"))
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
      let done = Signal()
      let consumer = Task { @MainActor in
        defer { done.fire() }
        return await Self.firstOutputOnTheMainActor()
      }
      for _ in 0..<1_000_000 {
        if done.isFired { break }
        await Task.yield()
      }
      if !done.isFired {
        Issue.record("the base's first element was dropped (run \(run))")
        consumer.cancel()
        return
      }
      #expect(await bounded(consumer, "consumer") == "2b", "run \(run)")
    }
  }
}
