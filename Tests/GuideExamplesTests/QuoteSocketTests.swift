import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The socket bridged into a flow, shared by two screens with a grace period, reconnected with a
/// fresh backoff; all on the test's clock, with the test playing the server. Under `.onTestClock`
/// the screens are made straight from the test: the share's upstream task, the retries' sleeps and
/// the grace timer all run on `TestClock.current`'s schedule.
@Suite("Quote socket worked example", .onTestClock, .hangGuard)
@MainActor
struct QuoteSocketTests {
  /// A feed and both screens, connected.
  private func makeScreens(_ clock: TestClock) async -> (QuoteSocket, QuoteFeed, WatchlistModel, TickerModel) {
    let socket = QuoteSocket()
    let feed = QuoteFeed(socket: socket, clock: clock)
    let watchlist = WatchlistModel(feed: feed)
    let ticker = TickerModel(feed: feed)
    await clock.runCurrent()
    return (socket, feed, watchlist, ticker)
  }

  @Test func twoScreensShareOneConnection() async {
    let clock = TestClock.current
    let (socket, feed, watchlist, ticker) = await makeScreens(clock)
    #expect(socket.connects == 1 && socket.isConnected)
    #expect(feed.quotes.subscriberCount == 2)
    socket.serverSends(Quote("AAPL", 190))
    socket.serverSends(Quote("MSFT", 410))
    await clock.runCurrent()
    #expect(watchlist.prices == ["AAPL": 190, "MSFT": 410])
    #expect(ticker.latest == Quote("MSFT", 410))
  }

  @Test func aFailureReconnectsAndTheBackoffStartsOverOnceQuotesFlowed() async {
    let clock = TestClock.current
    let (socket, _, watchlist, ticker) = await makeScreens(clock)
    // Fails before any quote: 1 s, then 2 s, as a backoff should.
    socket.serverFails("no route")
    await clock.runCurrent()
    #expect(socket.disconnects == 1 && !socket.isConnected)
    await clock.advance(by: .seconds(1))
    #expect(socket.connects == 2)
    socket.serverFails("no route")
    await clock.advance(by: .seconds(1))
    #expect(socket.connects == 2)  // waiting 2 s this time
    await clock.advance(by: .seconds(1))
    #expect(socket.connects == 3)
    // Quotes flow again, then the connection fails: the next wait is 1 s again, not 4 s.
    socket.serverSends(Quote("AAPL", 191))
    await clock.runCurrent()
    socket.serverFails("reset by peer")
    await clock.advance(by: .seconds(1))
    #expect(socket.connects == 4 && socket.isConnected)
    socket.serverSends(Quote("AAPL", 192))
    await clock.runCurrent()
    #expect(watchlist.prices == ["AAPL": 192] && ticker.latest == Quote("AAPL", 192))
    // Both screens were kept across every reconnect: no failure reached them.
    #expect(watchlist.failure == nil)
    #expect(socket.disconnects == 3)
  }

  /// Twelve failures in a row, no quote between: the feed keeps reconnecting, a minute apart at
  /// most, and no screen sees a failure. A screen that comes later gets quotes, not an end.
  @Test func theFeedReconnectsForAsLongAsAScreenWatches() async {
    let clock = TestClock.current
    let (socket, feed, watchlist, _) = await makeScreens(clock)
    for attempt in 0..<12 {
      socket.serverFails("down \(attempt)")
      await clock.runCurrent()
      await clock.advance(by: .seconds(60))
      #expect(socket.connects == attempt + 2)
    }
    #expect(watchlist.failure == nil && socket.isConnected)
    let later = TickerModel(feed: feed)
    await clock.runCurrent()
    socket.serverSends(Quote("AAPL", 193))
    await clock.runCurrent()
    #expect(later.latest == Quote("AAPL", 193) && watchlist.prices == ["AAPL": 193])
  }

  @Test func theLastScreenLeavingDisconnectsOnlyAfterTheGracePeriod() async {
    let clock = TestClock.current
    var (socket, feed, watchlist, ticker): (QuoteSocket, QuoteFeed, WatchlistModel?, TickerModel?) =
      await makeScreens(clock)
    socket.serverSends(Quote("AAPL", 190))
    await clock.runCurrent()
    watchlist = nil
    await clock.runCurrent()
    #expect(socket.isConnected && feed.quotes.subscriberCount == 1)  // the ticker still watches
    ticker = nil
    await clock.runCurrent()
    #expect(feed.quotes.subscriberCount == 0)
    await clock.advance(by: .milliseconds(4999))
    #expect(socket.isConnected && socket.disconnects == 0)  // the grace period still runs
    await clock.advance(by: .milliseconds(1))
    #expect(!socket.isConnected && socket.disconnects == 1 && socket.onMessage == nil)
    #expect(socket.connects == 1 && clock.pendingSleepers == 0)
    _ = (watchlist, ticker)
  }

  @Test func aScreenComingBackWithinTheGracePeriodDoesNotReconnect() async {
    let clock = TestClock.current
    var (socket, feed, watchlist, ticker): (QuoteSocket, QuoteFeed, WatchlistModel?, TickerModel?) =
      await makeScreens(clock)
    socket.serverSends(Quote("AAPL", 190))
    await clock.runCurrent()
    (watchlist, ticker) = (nil, nil)  // the user leaves both screens...
    await clock.runCurrent()
    #expect(feed.quotes.subscriberCount == 0)
    await clock.advance(by: .milliseconds(4999))
    watchlist = WatchlistModel(feed: feed)  // ...and comes back just in time
    await clock.runCurrent()
    #expect(socket.connects == 1 && socket.disconnects == 0 && socket.isConnected)
    #expect(watchlist?.prices == ["AAPL": 190])  // the replay, before any new quote
    socket.serverSends(Quote("MSFT", 410))
    await clock.runCurrent()
    #expect(watchlist?.prices == ["AAPL": 190, "MSFT": 410])
    // Leaving again starts a new grace period, from now: 5 s later the socket is closed, and a
    // screen that comes after it connects again, with an empty replay.
    watchlist = nil
    await clock.runCurrent()
    await clock.advance(by: .milliseconds(4999))
    #expect(socket.isConnected)
    await clock.advance(by: .milliseconds(1))
    #expect(!socket.isConnected && socket.disconnects == 1)
    ticker = TickerModel(feed: feed)
    await clock.runCurrent()
    #expect(socket.connects == 2 && socket.isConnected)
    #expect(ticker?.latest == nil)
    ticker = nil
    await clock.runCurrent()
    await clock.run()  // the grace period runs out
    #expect(!socket.isConnected && socket.disconnects == 2 && socket.onMessage == nil)
    #expect(clock.pendingSleepers == 0)
  }

  /// A server close is a failure: the socket is cleaned up, and reconnected after the backoff's
  /// first wait; the screens keep their prices and see no failure.
  @Test func aServerCloseReconnectsAfterTheBackoff() async {
    let clock = TestClock.current
    let (socket, _, watchlist, ticker) = await makeScreens(clock)
    socket.serverSends(Quote("AAPL", 190))
    socket.serverCloses()
    await clock.runCurrent()
    #expect(watchlist.prices == ["AAPL": 190] && watchlist.failure == nil)
    #expect(socket.disconnects == 1 && socket.connects == 1)
    await clock.advance(by: .seconds(1))
    #expect(socket.connects == 2 && socket.isConnected)
    socket.serverSends(Quote("AAPL", 191))
    await clock.runCurrent()
    #expect(watchlist.prices == ["AAPL": 191] && ticker.latest == Quote("AAPL", 191))
    #expect(watchlist.failure == nil)
  }
}
