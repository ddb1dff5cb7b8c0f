import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// HotSources.md, "A share per key": screens of two symbols, one connection per symbol, kept
/// across a quick switch and forgotten once the grace period after the last screen ran out.
@Suite("A share per key worked example", .onTestClock, .hangGuard)
@MainActor
struct KeyedShareQuotesTests {
  let socket = PassthroughFlow<LiveQuote, Never>()
  let connections = LockedConnections()

  func source(_ clock: TestClock) -> SymbolQuotes {
    SymbolQuotes(clock: clock) { [socket, connections] symbol in
      Flow { emitter in
        connections.connected(symbol)
        for await quote in socket where quote.symbol == symbol { await emitter.emit(quote) }
      }
    }
  }

  func receive(_ symbol: String, _ price: Int, _ clock: TestClock) async {
    socket.send(LiveQuote(symbol: symbol, price: price))
    await clock.runCurrent()
  }

  @Test func eachSymbolHasOneConnectionSharedByItsScreens() async {
    let clock = TestClock.current
    let quotes = source(clock)
    let (apple, appleAgain, google) = (
      SymbolPriceModel(symbol: "AAPL", source: quotes), SymbolPriceModel(symbol: "AAPL", source: quotes),
      SymbolPriceModel(symbol: "GOOG", source: quotes)
    )
    apple.appear()
    google.appear()
    await clock.runCurrent()
    await socket.subscribers(count: 2)
    await receive("AAPL", 190, clock)
    await receive("GOOG", 140, clock)
    appleAgain.appear()
    await clock.runCurrent()
    #expect(appleAgain.price == 190)  // the symbol's last quote, at once
    await receive("AAPL", 191, clock)
    #expect([apple.price, appleAgain.price, google.price] == [191, 191, 140])
    #expect(connections.counts == ["AAPL": 1, "GOOG": 1])
    for screen in [apple, appleAgain, google] { screen.disappear() }
    await clock.run()  // the grace periods end: both connections close, both symbols are forgotten
    #expect(socket.subscriberCount == 0)
    #expect(quotes.quotes.keyCount == 0)
  }

  @Test func aQuickSwitchKeepsTheSymbolsConnectionAndALaterOneReconnects() async {
    let clock = TestClock.current
    let quotes = source(clock)
    let detail = SymbolPriceModel(symbol: "AAPL", source: quotes)
    detail.appear()
    await clock.runCurrent()
    await socket.subscribers(count: 1)
    detail.disappear()
    await clock.advance(by: .milliseconds(4_999))
    detail.appear()  // within the grace period: the same connection
    await clock.runCurrent()
    #expect(connections.counts == ["AAPL": 1])
    detail.disappear()
    await clock.advance(by: .seconds(5))
    #expect(quotes.quotes.keyCount == 0)
    detail.appear()  // after it: a new connection
    await clock.runCurrent()
    await socket.subscribers(count: 1)
    #expect(connections.counts == ["AAPL": 2])
    detail.disappear()
    await clock.run()
    #expect(quotes.quotes.keyCount == 0)
  }
}

/// How many times each symbol connected.
final class LockedConnections: Sendable {
  private let state = LockedState([String: Int]())

  func connected(_ symbol: String) { state.withLock { $0[symbol, default: 0] += 1 } }
  var counts: [String: Int] { state.withLock { $0 } }
}
