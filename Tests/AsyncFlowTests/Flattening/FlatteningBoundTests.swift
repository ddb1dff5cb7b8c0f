import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// Counts the inners a flattening operator started.
final class StartCounter: Sendable {
  private let count = LockedState(0)
  func increment() { count.withLock { $0 += 1 } }
  var value: Int { count.withLock { $0 } }
}

/// The flattening operators under test, each over the same outer and inner.
enum FlattenOperator: String, CaseIterable, Sendable, CustomTestStringConvertible {
  case merge, concat, exhaust, switchToLatest, switchToLatestByKey

  var testDescription: String { rawValue }

  /// Each element `x` of `0..<count` maps to an inner that counts its start, emits `x` and ends:
  /// short inners, which end with their element not yet taken.
  func pipeline(count: Int, started: StartCounter) -> any AsyncSequence<Int, Never> & Sendable {
    let outer = Flow.sequence(0..<count)
    let inner: @Sendable (Int) -> Flow<Int, Never> = { x in
      Flow { emitter in
        started.increment()
        await emitter.emit(x)
      }
    }
    switch self {
    case .merge: return outer.mergeFlow(inner)
    case .concat: return outer.concatFlow(inner)
    case .exhaust: return outer.exhaustFlow(inner)
    case .switchToLatest: return outer.switchToLatestFlow(inner)
    case .switchToLatestByKey: return outer.switchToLatestFlow(by: { $0 }, inner)
    }
  }
}

/// Rule 5 of Guides/Flattening.md: behind a stalled consumer, a flattening operator starts only a
/// bounded number of inners, short ones included (issue 24, item 4: `mergeFlow` started all 20,000).
// Five minutes: under ThreadSanitizer on two cores its longest tests take most of one when idle.
@Suite("Flattening bound", .hangGuard)
struct FlatteningBoundTests {
  /// How many inners may start behind a consumer stalled after its first element: no inner starts
  /// while the consumer is behind 16 (started and not caught up with, or holding elements, or
  /// in the batch it has not delivered yet). Measured: `mergeFlow` 16, `concatFlow` 2,
  /// `exhaustFlow` and `switchToLatestFlow` 1 (before the fix: `mergeFlow` 20,000).
  static let startedBound = 16

  /// On the test clock's serial schedule: the count is read once everything has settled. Not the
  /// keyed `switchToLatestFlow(by:)`: it runs an inner for every key at once by design (rule 5),
  /// and each of these elements is a key of its own.
  @Test(arguments: FlattenOperator.allCases.filter { $0 != .switchToLatestByKey })
  func stalledConsumerStartsABoundedNumberOfInners(_ op: FlattenOperator) async {
    let clock = TestClock()
    let started = StartCounter()
    let stall = Gate()
    let pipeline = op.pipeline(count: 20_000, started: started)
    let consumer = clock.task {
      var iterator = pipeline.makeAsyncIterator()
      let first = await iterator.next(isolation: nil)
      await stall.wait()  // stalled: holds the iterator, takes nothing more
      withExtendedLifetime(iterator) {}
      return first
    }
    await clock.runCurrent()
    #expect(stall.parkedCount == 1, "\(op): the consumer never got a first element")
    #expect(started.value <= Self.startedBound, "\(op): \(started.value) inners started behind a stalled consumer")
    print("flattening-bound \(op): \(started.value) inners started behind a stalled consumer")
    stall.release()
    #expect(await bounded(consumer, "consumer") != .some(nil))
  }

  /// On the global executor, where the outer's task and the inners' tasks run in parallel: the
  /// bound holds at every moment, so it is checked while the operator's tasks keep running (a
  /// bounded number of yields; before the fix the count climbed into the thousands meanwhile).
  @Test func stalledConsumerStartsABoundedNumberOfMergeInnersOnTheGlobalExecutor() async {
    let started = StartCounter()
    let stall = Gate()
    let pipeline = FlattenOperator.merge.pipeline(count: 20_000, started: started)
    let consumer = Task {
      var iterator = pipeline.makeAsyncIterator()
      _ = await iterator.next(isolation: nil)
      await stall.wait()
      withExtendedLifetime(iterator) {}
    }
    await stall.entered()
    var highest = 0
    for _ in 0..<2_000 {
      highest = max(highest, started.value)
      await Task.yield()
    }
    highest = max(highest, started.value)
    #expect(highest <= Self.startedBound, "\(highest) inners started behind a stalled consumer")
    print("flattening-bound mergeFlow on the global executor: at most \(highest) inners started")
    stall.release()
    await bounded(consumer, "consumer")
  }

  /// The common case of the issue: one request per id behind a slow consumer.
  @Test func singleRequestPerIdFiresABoundedNumberOfRequestsBehindAStalledConsumer() async {
    let clock = TestClock()
    let requests = StartCounter()
    let stall = Gate()
    let results = Flow.sequence(0..<20_000).mergeFlow { id in
      Flow.single { () async -> Int in
        requests.increment()
        return id
      }
    }
    let consumer = clock.task {
      var iterator = results.makeAsyncIterator()
      _ = await iterator.next(isolation: nil)
      await stall.wait()
      withExtendedLifetime(iterator) {}
    }
    await clock.runCurrent()
    #expect(stall.parkedCount == 1)
    #expect(requests.value <= Self.startedBound, "\(requests.value) requests fired behind a stalled consumer")
    print("flattening-bound Flow.single requests: \(requests.value) fired behind a stalled consumer")
    stall.release()
    await bounded(consumer, "consumer")
  }

  /// The price of the default, written down: at most 16 inners run that have delivered nothing
  /// yet; the next starts once one of them delivers (or ends).
  @Test func byDefaultAtMostSixteenQuietInnersRunAtOnce() async {
    let clock = TestClock()
    let started = StartCounter()
    let gate = Gate()
    let merged = Flow.sequence(0..<20).mergeFlow { value in
      Flow<Int, Never> { emitter in
        started.increment()
        if value < 16 { await gate.wait() }
        await emitter.emit(value)
      }
    }
    let result = clock.task { await collect(merged).elements }
    await clock.runCurrent()
    #expect(started.value == 16)
    #expect(gate.parkedCount == 16)
    gate.release()
    #expect(await bounded(result, "result")?.sorted() == Array(0..<20))
  }

  /// An explicit `maxConcurrent` above 16 runs that many inners at once, quiet ones included.
  @Test func anExplicitMaxConcurrentAboveSixteenRunsThatManyQuietInners() async {
    let gate = Gate()
    let merged = Flow.sequence(0..<40).mergeFlow(maxConcurrent: 40) { value in
      Flow<Int, Never> { emitter in
        await gate.wait()
        await emitter.emit(value)
      }
    }
    let result = Task { await collect(merged).elements }
    await gate.entered(count: 40)
    gate.release()
    #expect(await bounded(result, "result")?.sorted() == Array(0..<40))
  }
}
