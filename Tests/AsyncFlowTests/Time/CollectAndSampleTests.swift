import AsyncFlow
import AsyncFlowTesting
import Testing

@Suite("collectFlow by time, sampleFlow, on marbles", .hangGuard)
struct CollectAndSampleTests {
  let marbles = Marbles(tick: .seconds(1))
  var clock: TestClock { marbles.clock }

  /// Draws an array as its size, so that a diagram shows when each array came.
  static let size: @Sendable ([String]) -> Character = { Character(String($0.count)) }

  // MARK: collectFlow(every:)

  @Test func collectByTimeDeliversEachIntervalsElementsAtItsEnd() async {
    // Intervals end at 3, 6, 9 and 12 s; the one from 6 to 9 s is empty and delivers nothing.
    let output = await marbles.record(
      marbles.input("a-b--c-----d|").collectFlow(every: .seconds(3), clock: clock), ticks: 14, symbol: Self.size)
    #expect(output == "---2--1-----[1|]")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func collectByTimeDeliversTheArraysInOrderAndTheRemainderBeforeTheFailure() async {
    let batches = LockedBatches()
    let output = await marbles.record(
      marbles.input("ab-c#").collectFlow(every: .seconds(2), clock: clock).map { batch in
        batches.append(batch)
        return batch
      }, ticks: 6, symbol: Self.size)
    #expect(output == "--2-[1#]")
    #expect(batches.all == [["a", "b"], ["c"]])
    #expect(clock.pendingSleepers == 0)
  }

  @Test func collectByTimeCancelledLeavesNoSleeper() async {
    let output = await marbles.record(
      marbles.input("a-b-c-d-e-f-g").collectFlow(every: .seconds(10), clock: clock), ticks: 5, symbol: Self.size)
    #expect(output == "")
    #expect(clock.pendingSleepers == 0)
  }

  // MARK: collectFlow(count:orEvery:)

  @Test func collectByCountOrTimeDeliversWhicheverComesFirst() async {
    // "c" (at 2 s) fills an array of 3 at once; "d" waits for the interval ending at 6 s; "ef" for
    // the end of the input. The intervals stay where the start put them (3, 6, 9, ... s).
    let output = await marbles.record(
      marbles.input("abc--d---ef|").collectFlow(count: 3, orEvery: .seconds(3), clock: clock), ticks: 14,
      symbol: Self.size)
    #expect(output == "--3---1----[2|]")
    #expect(clock.pendingSleepers == 0)
  }

  // MARK: sampleFlow

  @Test func sampleDeliversTheNewestOfEachIntervalAndNothingForAQuietOne() async {
    // Intervals end at 3, 6, 9 and 12 s: "b" (newest of a, b), nothing, "d", then "e" keeps its
    // turn at 12 s and the finish follows it.
    let output = await marbles.record(
      marbles.input("ab-----cd-e|").sampleFlow(every: .seconds(3), clock: clock), ticks: 14)
    #expect(output == "---b-----d--[e|]")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func sampleDeliversTheWaitingElementAtItsTurnThenTheFailure() async {
    let output = await marbles.record(marbles.input("a#").sampleFlow(every: .seconds(3), clock: clock), ticks: 5)
    #expect(output == "---[a#]")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func anElementAtAnIntervalsEndCountsInTheNextIntervalAfterTheTick() async {
    // kotlinx `SampleTest.testPace` on 50 ms ticks, sampling every 100 ms: -0, -1, -2, -3 every
    // 50 ms (a-d), then 0, 1, 2, 3 every 100 ms (e-h), the end at 600 ms. c, e, f, g, h and the end
    // arrive at the very instant an interval ends: the tick samples what came before (b, d, e,
    // f, g, h), and the arrival counts in the next interval. Kotlin: -1, -3, 0, 1, 2, 3.
    let output = await marbles.record(
      marbles.input("abcde-f-g-h-|").sampleFlow(every: .seconds(2), clock: clock), ticks: 14)
    #expect(output == "--b-d-e-f-g-[h|]")
    #expect(clock.pendingSleepers == 0)
  }

  @Test func sampleFinishesAtOnceWhenNothingWaits() async {
    let output = await marbles.record(marbles.input("a---|").sampleFlow(every: .seconds(2), clock: clock), ticks: 6)
    #expect(output == "--a-|")
  }

  // MARK: Bounds and arguments

  @Test func collectByTimeHoldsUpTheUpstreamBehindAStalledConsumer() async {
    let clock = TestClock()
    let pulled = LockedCount()
    let upstream = Flow<Int, Never>(bufferSize: 0) { emitter in
      for value in 0..<1_000 {
        do { try await clock.sleep(for: .milliseconds(100)) } catch { return }
        pulled.increment()
        await emitter.emit(value)
      }
    }
    let consumer = clock.task {
      var iterator = upstream.collectFlow(every: .seconds(1), clock: clock).makeAsyncIterator()
      return await iterator.next()  // takes one array, then stalls
    }
    await clock.advance(by: .seconds(1))
    #expect(await bounded(consumer, "consumer")??.count == 9)  // 0.1 s ... 0.9 s; the one at 1.0 s opens the next interval
    await clock.advance(by: .seconds(20))
    // Only the next interval's elements (and the one on its way) were pulled: not 200.
    #expect(pulled.value <= 9 + 10 + 1)
  }

  @Test func nonPositiveIntervalsAndCountsStopWithAPrecondition() async {
    await #expect(processExitsWith: .failure) { _ = Flow.just(1).collectFlow(every: .zero, clock: TestClock()) }
    await #expect(processExitsWith: .failure) {
      _ = Flow.just(1).collectFlow(count: 0, orEvery: .seconds(1), clock: TestClock())
    }
    await #expect(processExitsWith: .failure) { _ = Flow.just(1).sampleFlow(every: .seconds(-1), clock: TestClock()) }
  }
}

/// Arrays seen, in order.
final class LockedBatches: Sendable {
  private let batches = LockedState<[[String]]>([])
  func append(_ batch: [String]) { batches.withLock { $0.append(batch) } }
  var all: [[String]] { batches.withLock { $0 } }
}

final class LockedCount: Sendable {
  private let count = LockedState(0)
  func increment() { count.withLock { $0 += 1 } }
  var value: Int { count.withLock { $0 } }
}
