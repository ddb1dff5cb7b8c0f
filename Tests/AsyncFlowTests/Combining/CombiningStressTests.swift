import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// An input of `count` elements `0..<count` that yields a random number of times before each, and
/// logs when its body ended.
private func jittery(_ count: Int, seed: UInt64, ended: EventLog<Int>, id: Int) -> Flow<Int, Never> {
  Flow(bufferSize: 0) { emitter in
    defer { ended.append(id) }
    var random = SplitMix64(state: seed)
    for value in 0..<count {
      for _ in 0..<Int.random(in: 0...3, using: &random) { await Task.yield() }
      await emitter.emit(value)
    }
  }
}

// Five minutes: under ThreadSanitizer on two cores its longest tests take most of one when idle.
@Suite("Combining stress", .hangGuard)
struct CombiningStressTests {
  /// Random interleavings of two inputs of random lengths, each consumer stopping at a random
  /// point. Checked on every run: zip pairs equal indices and stops at the shorter input;
  /// combineLatest's outputs never go back in either input and number one per element after the
  /// first pair; merge delivers everything.
  /// A failing run, or one that the time limit cut (its loops end early, breaking every rule),
  /// ends the test with one issue that names its seed, not one a run for the runs after it.
  @Test(arguments: 0..<6)
  func randomInterleavingsKeepTheRules(_ batch: Int) async throws {
    for run in 0..<50 where !Task.isCancelled {
      let seed = UInt64(batch * 1000 + run)
      var random = SplitMix64(state: seed)
      let lengths = (Int.random(in: 0...20, using: &random), Int.random(in: 0...20, using: &random))
      let stopAfter = Int.random(in: 0...30, using: &random)

      let zipEnded = EventLog<Int>()
      var pairs: [(Int, Int)] = []
      for await pair in Flow.zip(
        jittery(lengths.0, seed: seed &+ 1, ended: zipEnded, id: 0),
        jittery(lengths.1, seed: seed &+ 2, ended: zipEnded, id: 1))
      {
        pairs.append(pair)
        if pairs.count == stopAfter { break }
      }
      let expectedPairs = min(min(lengths.0, lengths.1), stopAfter == 0 ? .max : stopAfter)
      try #require(!Task.isCancelled, "cut (by the time limit?) at seed \(seed)")
      try #require(pairs.count == expectedPairs, "seed \(seed)")
      try #require(pairs.allSatisfy { $0.0 == $0.1 }, "seed \(seed)")

      let latestEnded = EventLog<Int>()
      var outputs: [(Int, Int)] = []
      for await output in Flow.combineLatest(
        jittery(lengths.0, seed: seed &+ 3, ended: latestEnded, id: 0),
        jittery(lengths.1, seed: seed &+ 4, ended: latestEnded, id: 1))
      {
        outputs.append(output)
      }
      let expectedOutputs = lengths.0 == 0 || lengths.1 == 0 ? 0 : lengths.0 + lengths.1 - 1
      try #require(!Task.isCancelled, "cut (by the time limit?) at seed \(seed)")
      try #require(outputs.count == expectedOutputs, "seed \(seed)")
      try #require(zip(outputs, outputs.dropFirst()).allSatisfy { $0.0 <= $1.0 && $0.1 <= $1.1 }, "seed \(seed)")

      let mergeEnded = EventLog<Int>()
      var merged: [Int] = []
      for await element in Flow.merge(
        jittery(lengths.0, seed: seed &+ 5, ended: mergeEnded, id: 0),
        jittery(lengths.1, seed: seed &+ 6, ended: mergeEnded, id: 1))
      {
        merged.append(element)
      }
      try #require(!Task.isCancelled, "cut (by the time limit?) at seed \(seed)")
      try #require(merged.count == lengths.0 + lengths.1, "seed \(seed)")
    }
  }

  /// Consumers cancelled at a random moment: the loop ends, with nothing delivered after the
  /// cancellation. (That every input's task has ended is checked with scripted inputs in
  /// `CombiningTests`; a `Flow` input's body is its own, cancelled but not awaited when released.)
  @Test(arguments: 0..<4)
  func randomCancellationsEndEverything(_ batch: Int) async {
    // One bound around the runs, not one per run.
    await bounded("50 runs of random cancellations") {
      for run in 0..<50 where !Task.isCancelled {
        let seed = UInt64(10_000 + batch * 1000 + run)
        var random = SplitMix64(state: seed)
        let cancelAfter = Int.random(in: 1...10, using: &random)
        let operatorIndex = Int.random(in: 0...3, using: &random)
        let ended = EventLog<Int>()
        let a = jittery(1000, seed: seed &+ 1, ended: ended, id: 0)
        let b = jittery(1000, seed: seed &+ 2, ended: ended, id: 1)
        let consumer = Task {
          var count = 0
          var afterCancel = 0
          func consume<S: AsyncSequence>(_ sequence: S) async where S.Failure == Never {
            for await _ in sequence {
              if Task.isCancelled { afterCancel += 1 }
              count += 1
              if count == cancelAfter { withUnsafeCurrentTask { $0?.cancel() } }
            }
          }
          switch operatorIndex {
          case 0: await consume(Flow.merge(a, b))
          case 1: await consume(Flow.zip(a, b))
          case 2: await consume(Flow.combineLatest(a, b))
          default: await consume(a.withLatestFromFlow(b))
          }
          return afterCancel
        }
        #expect(await consumer.value == 0, "seed \(seed)")
      }
    }
  }
}
