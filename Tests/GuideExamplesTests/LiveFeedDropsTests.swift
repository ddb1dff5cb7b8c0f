import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// HotSources.md, "Counting drops": a client that stops reading loses the oldest events; what
/// each client was sent and what it lost add up to what the feed produced, and the meter has the
/// total.
@Suite("Counting drops worked example", .hangGuard)
struct LiveFeedDropsTests {
  @Test func aClientThatFallsBehindLosesTheOldestAndEveryLossIsCounted() async {
    let clock = TestClock()
    let source = PassthroughFlow<Int, Never>()
    let feed = LiveFeed(upstream: source, keepingPerClient: 16)
    let gate = Gate()
    let gaps = LockedState<[Int]>([])
    let fast = clock.task { await serve(feed) { _, _ in } }
    let slow = clock.task {
      await serve(feed) { event, missed in
        if missed > 0 { gaps.withLock { $0.append(missed) } }
        if event == 1 { await gate.wait() }  // the slow client stops reading after its first event
      }
    }
    await clock.runCurrent()
    await source.subscribers(count: 1)  // the feed's upstream listens
    source.send(1)
    await clock.runCurrent()
    await gate.entered()
    for event in 2...200 {
      source.send(event)
      await clock.runCurrent()  // the fast client keeps up
    }
    source.finish()
    gate.release()
    await clock.runCurrent()
    let results = (await bounded(fast, "the fast client"), await bounded(slow, "the slow client"))
    #expect(results.0?.sent == 200 && results.0?.lost == 0)
    #expect(results.1?.sent == 17 && results.1?.lost == 183)  // its first event and the newest 16
    #expect(gaps.withLock { $0 } == [183])  // told once, before the first event after the gap
    #expect(feed.meter.total == 183)
  }
}
