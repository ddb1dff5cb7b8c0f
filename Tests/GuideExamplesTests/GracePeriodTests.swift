import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Synchronization
import Testing

/// HotSources.md, "Sharing across a screen switch": two screens watch one shared connection; a
/// quick switch (within the 5-second grace period) keeps it, a later one reconnects.
@Suite("Grace period worked example", .onTestClock, .hangGuard)
@MainActor
struct GracePeriodTests {
  let socket = PassthroughFlow<LiveQuote, Never>()
  let connections = ConnectionCount()

  func hub(_ clock: TestClock) -> QuotesHub {
    QuotesHub(clock: clock) { [socket, connections] in
      Flow { emitter in
        connections.increment()
        for await quote in socket { await emitter.emit(quote) }
      }
    }
  }

  /// Sends what the socket receives, and lets the screens show it.
  func receive(_ symbol: String, _ price: Int, _ clock: TestClock) async {
    socket.send(LiveQuote(symbol: symbol, price: price))
    await clock.runCurrent()
  }

  @Test func aQuickSwitchKeepsTheConnectionAndShowsTheLastQuoteAtOnce() async {
    let clock = TestClock.current
    let hub = hub(clock)
    let list = QuoteListModel(hub: hub)
    let detail = QuoteDetailModel(symbol: "AAPL", hub: hub)
    list.appear()
    await socket.subscribers(count: 1)
    await receive("AAPL", 190, clock)
    #expect(list.prices == ["AAPL": 190])
    list.disappear()  // the user taps a row
    await clock.advance(by: .seconds(1))
    detail.appear()
    await clock.runCurrent()
    #expect(detail.price == 190)  // the replay, before any new quote
    await receive("AAPL", 191, clock)
    #expect(detail.price == 191)
    #expect(connections.count == 1)
    detail.disappear()
    await clock.run()  // the grace period ends: the connection closes
    #expect(socket.subscriberCount == 0)
    #expect(clock.pendingSleepers == 0)
  }

  @Test func comingBackAfterTheGracePeriodReconnects() async {
    let clock = TestClock.current
    let hub = hub(clock)
    let list = QuoteListModel(hub: hub)
    list.appear()
    await socket.subscribers(count: 1)
    list.disappear()
    await clock.advance(by: .milliseconds(4999))
    #expect(socket.subscriberCount == 1)  // still connected
    await clock.advance(by: .milliseconds(1))
    #expect(socket.subscriberCount == 0)  // closed at 5 s
    list.appear()
    await socket.subscribers(count: 1)
    #expect(connections.count == 2)
    list.disappear()
    await clock.run()
  }
}

/// Counts the connections the hub opened.
final class ConnectionCount: Sendable {
  private let value = Atomic(0)
  func increment() { value.add(1, ordering: .relaxed) }
  var count: Int { value.load(ordering: .relaxed) }
}
