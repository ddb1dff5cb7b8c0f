import AsyncFlow
import Testing

@testable import AsyncFlow

/// A small seeded generator, so that a failing interleaving can be replayed by its seed.
struct SplitMix64: RandomNumberGenerator, Sendable {
  var state: UInt64

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

private func yields(_ count: Int) async {
  for _ in 0..<count { await Task.yield() }
}

@Suite("Flattening stress", .timeLimit(.minutes(1)))
struct FlatteningStressTests {
  /// Seeded schedules of outer and inner events (random yields between them, inners that ignore
  /// cancellation or fail after being superseded), checked against rules 1 to 6.
  @Test func switchToLatestHoldsItsRulesUnderSeededInterleavings() async {
    for seed in UInt64(0)..<1500 {
      var random = SplitMix64(state: seed)
      let outerCount = Int.random(in: 1...5, using: &random)
      let innerLength = Int.random(in: 1...4, using: &random)
      let outerYields = (0..<outerCount).map { _ in Int.random(in: 0...3, using: &random) }
      let innerPlans = (0..<outerCount).map { _ in
        (
          yields: Int.random(in: 0...3, using: &random), stubborn: Bool.random(using: &random),
          failsWhenStale: Bool.random(using: &random)
        )
      }
      let started = LockedState(0)
      let ended = LockedState(0)
      let outer = Flow<Int, Never> { emitter in
        for index in 0..<outerCount {
          await yields(outerYields[index])
          await emitter.emit(index)
        }
      }
      let flattened = outer.switchToLatestFlow { index in
        Flow<String, TestError> { emitter throws(TestError) in
          started.withLock { $0 += 1 }
          defer { ended.withLock { $0 += 1 } }
          let plan = innerPlans[index]
          for step in 1...innerLength {
            await yields(plan.yields)
            if Task.isCancelled {
              if plan.failsWhenStale { throw TestError(id: index) }
              if !plan.stubborn { return }
            }
            await emitter.emit("\(index).\(step)")
          }
        }
      }
      let result = await collect(flattened)
      let delivered = result.elements.map { element -> (inner: Int, step: Int) in
        let parts = element.split(separator: ".")
        return (Int(parts[0])!, Int(parts[1])!)
      }
      // Rule 2 and 3: no stale failure; the last inner never fails.
      #expect(result.failure == nil, "seed \(seed)")
      // Rule 1: once a newer inner delivered, an older one never does again.
      #expect(zip(delivered, delivered.dropFirst()).allSatisfy { $0.inner <= $1.inner }, "seed \(seed)")
      // Rule 5: each inner's elements arrive in order, without gaps.
      for inner in Set(delivered.map(\.inner)) {
        let steps = delivered.filter { $0.inner == inner }.map(\.step)
        #expect(steps == Array(1...steps.count), "seed \(seed)")
      }
      // Rule 4: the last inner was delivered completely.
      #expect(delivered.filter { $0.inner == outerCount - 1 }.count == innerLength, "seed \(seed)")
      // Rule 6: every inner iteration has ended by the time the sequence ended.
      #expect(started.withLock { $0 } == ended.withLock { $0 }, "seed \(seed)")
    }
  }

  /// Seeded schedules for `mergeFlow` (and `concatFlow`, its `maxConcurrent: 1` case): inners long
  /// enough to fill their buffers, a consumer that lags at random, and sometimes one inner that
  /// fails. Checks that nothing is lost or reordered within an inner, that no more than
  /// `maxConcurrent` inners run, that a failure ends the sequence with it, and that every inner
  /// has ended when the sequence ends.
  @Test func mergeHoldsItsRulesUnderSeededInterleavings() async {
    for seed in UInt64(0)..<300 {
      var random = SplitMix64(state: seed)
      let outerCount = Int.random(in: 1...4, using: &random)
      let maxConcurrent = [1, 2, Int.max].randomElement(using: &random)!
      let lengths = (0..<outerCount).map { _ in Int.random(in: 1...150, using: &random) }
      let innerYields = (0..<outerCount).map { _ in Int.random(in: 0...2, using: &random) }
      let failing: (inner: Int, step: Int)? =
        Bool.random(using: &random)
        ? {
          let inner = Int.random(in: 0..<outerCount, using: &random)
          return (inner, Int.random(in: 1...lengths[inner], using: &random))
        }() : nil
      let consumerLag = Int.random(in: 0...2, using: &random)
      let running = LockedState((now: 0, most: 0, started: 0, ended: 0))
      let merged = Flow.sequence(0..<outerCount).mergeFlow(maxConcurrent: maxConcurrent) { index in
        Flow<String, TestError> { emitter throws(TestError) in
          running.withLock {
            $0.now += 1
            $0.most = max($0.most, $0.now)
            $0.started += 1
          }
          defer {
            running.withLock {
              $0.now -= 1
              $0.ended += 1
            }
          }
          for step in 1...lengths[index] {
            if step % 16 == 0 { await yields(innerYields[index]) }
            if let failing, failing.inner == index, failing.step == step { throw TestError(id: index) }
            await emitter.emit("\(index).\(step)")
            if Task.isCancelled { return }
          }
        }
      }
      var delivered: [(inner: Int, step: Int)] = []
      var failure: TestError?
      var iterator = merged.makeAsyncIterator()
      do {
        while let element = try await iterator.next(isolation: nil) {
          let parts = element.split(separator: ".")
          delivered.append((Int(parts[0])!, Int(parts[1])!))
          if delivered.count % 32 == 0 { await yields(consumerLag) }
        }
      } catch {
        failure = error
      }
      let counts = running.withLock { $0 }
      // Each inner's elements arrive in order, without gaps or repeats.
      for inner in Set(delivered.map(\.inner)) {
        let steps = delivered.filter { $0.inner == inner }.map(\.step)
        #expect(steps == Array(1...steps.count), "seed \(seed)")
      }
      #expect(counts.most <= maxConcurrent, "seed \(seed)")
      if let failing {
        #expect(failure == TestError(id: failing.inner), "seed \(seed)")
        #expect(delivered.filter { $0.inner == failing.inner }.count == failing.step - 1, "seed \(seed)")
      } else {
        #expect(failure == nil, "seed \(seed)")
        #expect(delivered.count == lengths.reduce(0, +), "seed \(seed)")
        if maxConcurrent == 1 {  // concat: the inners one after another
          #expect(delivered.map(\.inner) == delivered.map(\.inner).sorted(), "seed \(seed)")
        }
      }
      // Every inner iteration has ended by the time the sequence ended.
      #expect(counts.started == counts.ended, "seed \(seed)")
    }
  }
}
