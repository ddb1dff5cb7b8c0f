import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Where a stress scenario runs. On a `TestClock`'s serial executor the whole interleaving is a
/// function of the seed: the random yields below are the only scheduling decisions, and they come
/// from the seed. On the global executor only the plan replays; the threads race for real.
enum StressSchedule: Sendable, CustomStringConvertible {
  case testClock, globalExecutor

  var description: String { self == .testClock ? "test clock" : "global executor" }

  /// `body`'s result, or `nil` (and an issue) if the test was cancelled first.
  func run<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T? {
    switch self {
    case .testClock: await bounded(TestClock().task(body), "the stress run")
    case .globalExecutor: await bounded(Task.detached(operation: body), "the stress run")
    }
  }
}

/// The seeds a stress test runs: all of `range`, or only `ASYNCFLOW_SEED` when it is set.
///
/// The seeds stop coming once the test's task is cancelled: a run that is slow (a loaded machine,
/// ThreadSanitizer) then ends at its suite's `.timeLimit` instead of going through every seed.
func stressSeeds(_ range: Range<UInt64>) -> some Sequence<UInt64> {
  let seeds: [UInt64]
  if let value = getenv("ASYNCFLOW_SEED"), let seed = UInt64(String(cString: value)) {
    seeds = [seed]
  } else {
    seeds = Array(range)
  }
  return seeds.lazy.prefix { _ in !Task.isCancelled }
}

/// What a failing expectation prints: the seed and the one command that replays it.
func replay(_ seed: UInt64, _ test: String, on schedule: StressSchedule = .testClock) -> Comment {
  let command = "ASYNCFLOW_SEED=\(seed) swift test --filter FlatteningStressTests/\(test)"
  switch schedule {
  case .testClock:
    return Comment(rawValue: "seed \(seed); replay this interleaving with: \(command)")
  case .globalExecutor:
    return Comment(
      rawValue: "seed \(seed) on the global executor (its interleaving does not replay); "
        + "the same plan on the test clock: \(command)")
  }
}

/// A schedule point the seed decides: `count` yields. On the test clock's FIFO executor each one
/// lets every other runnable task take a step, so the seed picks the interleaving.
private func yields(_ count: Int) async {
  for _ in 0..<count { await Task.yield() }
}

/// Seeded schedules of outer and inner events (random yields between them, inners that ignore
/// cancellation or fail after being superseded), checked against rules 1 to 6. Returns the event
/// log: what each inner did and what the consumer received, in the order it happened.
@discardableResult
private func checkSwitchToLatest(seed: UInt64, on schedule: StressSchedule = .testClock) async -> [String] {
  let test = "switchToLatestHoldsItsRulesUnderSeededInterleavings"
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
  let log = EventLog<String>()
  let started = LockedState(0)
  let ended = LockedState(0)
  let outcome = await schedule.run {
    let outer = Flow<Int, Never> { emitter in
      for index in 0..<outerCount {
        await yields(outerYields[index])
        log.append("outer \(index)")
        await emitter.emit(index)
      }
    }
    let flattened = outer.switchToLatestFlow { index in
      Flow<String, TestError> { emitter throws(TestError) in
        started.withLock { $0 += 1 }
        log.append("start \(index)")
        defer {
          ended.withLock { $0 += 1 }
          log.append("end \(index)")
        }
        let plan = innerPlans[index]
        for step in 1...innerLength {
          await yields(plan.yields)
          if Task.isCancelled {
            log.append("stale \(index).\(step)")
            if plan.failsWhenStale { throw TestError(id: index) }
            if !plan.stubborn { return }
          }
          await emitter.emit("\(index).\(step)")
        }
      }
    }
    var elements: [String] = []
    var iterator = flattened.makeAsyncIterator()
    do throws(TestError) {
      while let element = try await iterator.next(isolation: nil) {
        log.append("got \(element)")
        elements.append(element)
      }
      return (elements: elements, failure: TestError?.none)
    } catch {
      return (elements, error)
    }
  }
  guard let result = outcome else { return log.all }
  let delivered = result.elements.map { element -> (inner: Int, step: Int) in
    let parts = element.split(separator: ".")
    return (Int(parts[0])!, Int(parts[1])!)
  }
  // Rule 2 and 3: no stale failure; the last inner never fails.
  #expect(result.failure == nil, replay(seed, test, on: schedule))
  // Rule 1: once a newer inner delivered, an older one never does again.
  #expect(zip(delivered, delivered.dropFirst()).allSatisfy { $0.inner <= $1.inner }, replay(seed, test, on: schedule))
  // Rule 5: each inner's elements arrive in order, without gaps.
  for inner in Set(delivered.map(\.inner)) {
    let steps = delivered.filter { $0.inner == inner }.map(\.step)
    #expect(steps == Array(1...steps.count), replay(seed, test, on: schedule))
  }
  // Rule 4: the last inner was delivered completely.
  #expect(delivered.filter { $0.inner == outerCount - 1 }.count == innerLength, replay(seed, test, on: schedule))
  // Rule 6: every inner iteration has ended by the time the sequence ended.
  #expect(started.withLock { $0 } == ended.withLock { $0 }, replay(seed, test, on: schedule))
  return log.all
}

/// Seeded schedules for `mergeFlow` (and `concatFlow`, its `maxConcurrent: 1` case): inners long
/// enough to fill their buffers, a consumer that lags at random, and sometimes one inner that
/// fails. Checks that nothing is lost or reordered within an inner, that no more than
/// `maxConcurrent` inners run, that a failure ends the sequence with it, and that every inner
/// has ended when the sequence ends. Returns the event log, as `checkSwitchToLatest` does.
@discardableResult
private func checkMerge(seed: UInt64, on schedule: StressSchedule = .testClock) async -> [String] {
  let test = "mergeHoldsItsRulesUnderSeededInterleavings"
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
  let log = EventLog<String>()
  let running = LockedState((now: 0, most: 0, started: 0, ended: 0))
  let outcome = await schedule.run {
    let merged = Flow.sequence(0..<outerCount).mergeFlow(maxConcurrent: maxConcurrent) { index in
      Flow<String, TestError> { emitter throws(TestError) in
        running.withLock {
          $0.now += 1
          $0.most = max($0.most, $0.now)
          $0.started += 1
        }
        log.append("start \(index)")
        defer {
          running.withLock {
            $0.now -= 1
            $0.ended += 1
          }
          log.append("end \(index)")
        }
        for step in 1...lengths[index] {
          if step % 16 == 0 { await yields(innerYields[index]) }
          if let failing, failing.inner == index, failing.step == step {
            log.append("throw \(index).\(step)")
            throw TestError(id: index)
          }
          await emitter.emit("\(index).\(step)")
          if Task.isCancelled { return }
        }
      }
    }
    var delivered: [(inner: Int, step: Int)] = []
    var iterator = merged.makeAsyncIterator()
    do throws(TestError) {
      while let element = try await iterator.next(isolation: nil) {
        log.append("got \(element)")
        let parts = element.split(separator: ".")
        delivered.append((Int(parts[0])!, Int(parts[1])!))
        if delivered.count % 32 == 0 { await yields(consumerLag) }
      }
      return (delivered: delivered, failure: TestError?.none)
    } catch {
      return (delivered, error)
    }
  }
  guard let result = outcome else { return log.all }
  let delivered = result.delivered
  let counts = running.withLock { $0 }
  // Each inner's elements arrive in order, without gaps or repeats.
  for inner in Set(delivered.map(\.inner)) {
    let steps = delivered.filter { $0.inner == inner }.map(\.step)
    #expect(steps == Array(1...steps.count), replay(seed, test, on: schedule))
  }
  #expect(counts.most <= maxConcurrent, replay(seed, test, on: schedule))
  if let failing {
    #expect(result.failure == TestError(id: failing.inner), replay(seed, test, on: schedule))
    #expect(
      delivered.filter { $0.inner == failing.inner }.count == failing.step - 1, replay(seed, test, on: schedule))
  } else {
    #expect(result.failure == nil, replay(seed, test, on: schedule))
    #expect(delivered.count == lengths.reduce(0, +), replay(seed, test, on: schedule))
    if maxConcurrent == 1 {  // concat: the inners one after another
      #expect(delivered.map(\.inner) == delivered.map(\.inner).sorted(), replay(seed, test, on: schedule))
    }
  }
  // Every inner iteration has ended by the time the sequence ended.
  #expect(counts.started == counts.ended, replay(seed, test, on: schedule))
  return log.all
}

/// The stress tests run on a `TestClock`'s serial executor, where a seed fixes the interleaving:
/// a failure prints its seed and the command that replays exactly that run. The global-executor
/// variants keep real parallel threads in the mix (races a serial schedule cannot produce), at the
/// price of a seed that replays only the plan.
// Five minutes: under ThreadSanitizer on two cores its longest tests take most of one when idle.
@Suite("Flattening stress", .hangGuard)
struct FlatteningStressTests {
  @Test func switchToLatestHoldsItsRulesUnderSeededInterleavings() async {
    for seed in stressSeeds(0..<1500) { await checkSwitchToLatest(seed: seed) }
  }

  @Test func mergeHoldsItsRulesUnderSeededInterleavings() async {
    for seed in stressSeeds(0..<300) { await checkMerge(seed: seed) }
  }

  @Test func switchToLatestHoldsItsRulesOnParallelThreads() async {
    for seed in stressSeeds(0..<500) { await checkSwitchToLatest(seed: seed, on: .globalExecutor) }
  }

  @Test func mergeHoldsItsRulesOnParallelThreads() async {
    for seed in stressSeeds(0..<100) { await checkMerge(seed: seed, on: .globalExecutor) }
  }

  /// The replay promise itself: the same seed run twice gives the same event log, event for event.
  @Test func aSeedReplaysTheSameInterleavingOnTheTestClock() async {
    for seed in UInt64(0)..<40 {
      let first = await checkSwitchToLatest(seed: seed)
      let second = await checkSwitchToLatest(seed: seed)
      #expect(first == second, "switchToLatestFlow, seed \(seed)")
      #expect(!first.isEmpty)
    }
    for seed in UInt64(0)..<20 {
      let first = await checkMerge(seed: seed)
      let second = await checkMerge(seed: seed)
      #expect(first == second, "mergeFlow, seed \(seed)")
      #expect(!first.isEmpty)
    }
  }
}
