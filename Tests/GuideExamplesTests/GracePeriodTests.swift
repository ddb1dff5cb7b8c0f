import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Synchronization
import Testing

/// HotSources.md, "Sharing across a screen switch": two screens watch one shared connection; a
/// quick switch (within the 5-second grace period) keeps it, a later one reconnects.
@Suite("Grace period worked example", .timeLimit(.minutes(1)))
@MainActor
struct GracePeriodTests {
  let clock = TestClock()
  let socket = PassthroughFlow<LiveQuote, Never>()
  let connections = ConnectionCount()

  func hub() -> QuotesHub {
    QuotesHub(clock: clock) { [socket, connections] in
      Flow { emitter in
        connections.increment()
        for await quote in socket { await emitter.emit(quote) }
      }
    }
  }

  /// Sends what the socket receives, and lets the screens show it.
  func receive(_ symbol: String, _ price: Int) async {
    socket.send(LiveQuote(symbol: symbol, price: price))
    await clock.runCurrent()
  }

  func onSchedule(_ step: () -> Void) async {
    await clock.onSchedule { step() }
    await clock.runCurrent()
  }

  @Test func aQuickSwitchKeepsTheConnectionAndShowsTheLastQuoteAtOnce() async {
    let hub = hub()
    let list = QuoteListModel(hub: hub)
    let detail = QuoteDetailModel(symbol: "AAPL", hub: hub)
    await onSchedule { list.appear() }
    await socket.subscribers(count: 1)
    await receive("AAPL", 190)
    #expect(list.prices == ["AAPL": 190])
    await onSchedule { list.disappear() }  // the user taps a row
    await clock.advance(by: .seconds(1))
    await onSchedule { detail.appear() }
    #expect(detail.price == 190)  // the replay, before any new quote
    await receive("AAPL", 191)
    #expect(detail.price == 191)
    #expect(connections.count == 1)
    await onSchedule { detail.disappear() }
    await clock.run()  // the grace period ends: the connection closes
    #expect(socket.subscriberCount == 0)
    #expect(clock.pendingSleepers == 0)
  }

  @Test func comingBackAfterTheGracePeriodReconnects() async {
    let hub = hub()
    let list = QuoteListModel(hub: hub)
    await onSchedule { list.appear() }
    await socket.subscribers(count: 1)
    await onSchedule { list.disappear() }
    await clock.advance(by: .milliseconds(4999))
    #expect(socket.subscriberCount == 1)  // still connected
    await clock.advance(by: .milliseconds(1))
    #expect(socket.subscriberCount == 0)  // closed at 5 s
    await onSchedule { list.appear() }
    await socket.subscribers(count: 1)
    #expect(connections.count == 2)
    await onSchedule { list.disappear() }
    await clock.run()
  }
}

/// Counts the connections the hub opened.
final class ConnectionCount: Sendable {
  private let value = Atomic(0)
  func increment() { value.add(1, ordering: .relaxed) }
  var count: Int { value.load(ordering: .relaxed) }
}
