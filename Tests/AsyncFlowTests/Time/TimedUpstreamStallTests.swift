import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// Operators that pull ahead keep pulling while the consumer is not asking (issue 24, item 2).
@Suite("Timed operators: the upstream is not held back", .hangGuard)
struct TimedUpstreamStallTests {
  /// The repro: after the consumer took 1 and stopped asking, the producer runs to its end.
  @Test func bufferingNewestKeepsPullingWhileTheConsumerIsNotAsking() async {
    let result = await bounded("the producer's run to its end while the consumer is not asking") {
      let gate = Gate()
      let done = CurrentValueFlow(false)
      let source = Flow<Int, Never>(bufferSize: 0) { e in
        await e.emit(1)
        await gate.wait()
        for i in 2...10 { await e.emit(i) }
        done.send(true)
      }
      var it = source.bufferFlow(policy: .bufferingNewest(2)).makeAsyncIterator()
      var elements: [Int?] = [await it.next(isolation: nil)]
      await gate.entered()
      gate.release()
      for await finished in done where finished { break }
      if Task.isCancelled { return elements }
      for _ in 0..<3 { elements.append(await it.next(isolation: nil)) }
      return elements
    }
    #expect(result == [1, 9, 10, nil])
  }
}

/// One operator that must pull its upstream to the end while its consumer is not asking.
private struct PullAheadCase: Sendable, CustomStringConvertible {
  var name: String
  var make: @Sendable (Flow<Int, Never>, TestClock) -> AnyStepper
  var description: String { name }
}

// delayFlow, timeoutFlow and the collects hold their upstream back behind a stalled consumer by
// design (their documented bounds), so they are not rows here.
private let pullAheadTable: [PullAheadCase] = [
  PullAheadCase(name: "bufferFlow(.unbounded)") { source, _ in AnyStepper(source.bufferFlow(policy: .unbounded)) },
  PullAheadCase(name: "bufferFlow(.bufferingNewest(2))") { source, _ in
    AnyStepper(source.bufferFlow(policy: .bufferingNewest(2)))
  },
  PullAheadCase(name: "bufferFlow(.bufferingOldest(2))") { source, _ in
    AnyStepper(source.bufferFlow(policy: .bufferingOldest(2)))
  },
  PullAheadCase(name: "debounceFlow") { AnyStepper($0.debounceFlow(for: .seconds(1), clock: $1)) },
  PullAheadCase(name: "throttleFlow(latest: true)") {
    AnyStepper($0.throttleFlow(for: .seconds(1), clock: $1, latest: true))
  },
  PullAheadCase(name: "throttleFlow(latest: false)") {
    AnyStepper($0.throttleFlow(for: .seconds(1), clock: $1, latest: false))
  },
  PullAheadCase(name: "sampleFlow") { AnyStepper($0.sampleFlow(every: .seconds(1), clock: $1)) },
]

extension TimedUpstreamStallTests {
  /// Ten elements from a producer that runs only as far as it is pulled, while the consumer,
  /// after one `next()` (which may not return: the clock stands still), asks for nothing more.
  @Test(arguments: pullAheadTable)
  fileprivate func theProducerRunsToItsEndWhileTheConsumerIsNotAsking(_ row: PullAheadCase) async {
    let clock = TestClock()
    let produced = LockedState(0)
    let source = Flow<Int, Never>(bufferSize: 0) { emitter in
      for value in 1...10 {
        await emitter.emit(value)
        produced.withLock { $0 = value }
      }
    }
    let hold = Gate()
    let consumer = clock.task {
      let stepper = row.make(source, clock)
      _ = await stepper.next()
      await hold.wait()  // holds the iterator without asking; leaves when cancelled
      withExtendedLifetime(stepper) {}
    }
    await clock.runCurrent()
    #expect(produced.withLock { $0 } == 10, "\(row.name): the producer was held back")
    consumer.cancel()
    await bounded(consumer, "consumer")
  }
}
