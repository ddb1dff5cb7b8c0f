import AsyncFlow

/// One price update.
public struct Quote: Hashable, Sendable {
  public var symbol: String
  public var price: Int

  public init(_ symbol: String, _ price: Int) {
    self.symbol = symbol
    self.price = price
  }
}

/// Why the socket dropped the connection.
public struct SocketError: Error, Hashable, Sendable {
  public var reason: String

  public init(_ reason: String) { self.reason = reason }

  /// The server closed the connection.
  public static let closedByServer = SocketError("closed by the server")
}

// region: quote-socket
/// A socket with a callback API, as SDKs ship them: handlers set as properties, `connect()` and
/// `disconnect()`, all on the main actor. This one is fake: a test plays the server with
/// `serverSends`, `serverFails` and `serverCloses`.
@MainActor
public final class QuoteSocket {
  public var onMessage: ((Quote) -> Void)?
  public var onError: ((SocketError) -> Void)?
  public var onClose: (() -> Void)?
  public private(set) var isConnected = false
  public private(set) var connects = 0
  public private(set) var disconnects = 0

  public init() {}

  public func connect() {
    connects += 1
    isConnected = true
  }

  public func disconnect() {
    disconnects += 1
    isConnected = false
  }

  public func serverSends(_ quote: Quote) {
    if isConnected { onMessage?(quote) }
  }

  public func serverFails(_ reason: String) {
    guard isConnected else { return }
    isConnected = false
    onError?(SocketError(reason))
  }

  public func serverCloses() {
    guard isConnected else { return }
    isConnected = false
    onClose?()
  }
}
// endregion: quote-socket

// region: quote-connection
extension QuoteSocket {
  /// One connection as a cold flow: each iteration connects, and its cleanup disconnects exactly
  /// once, whatever ends it. Written on the main actor, the setup runs there; the cleanup says so.
  /// A live feed has no natural end, so a server close is a failure, like a dropped connection:
  /// a retry reconnects after either, where `finish()` would end a shared feed for good.
  public func quotes() -> Flow<Quote, SocketError> {
    // Quotes are state: a consumer that falls behind wants the newest, not the oldest 64.
    Flow.callbacks(bufferingPolicy: .bufferingNewest(16)) { callbacks in
      self.onMessage = { callbacks.send($0) }
      self.onError = { callbacks.fail($0) }
      self.onClose = { callbacks.fail(.closedByServer) }
      self.connect()
      return { @MainActor in
        self.onMessage = nil
        self.onError = nil
        self.onClose = nil
        self.disconnect()
      }
    }
  }
}
// endregion: quote-connection

// region: quote-feed
/// The app's one live feed: one connection for every screen that watches it (`shareFlow`), kept
/// open for 5 s after the last screen left (`gracePeriod`), so that switching screens does not
/// reconnect, and reconnected after every failure or close for as long as a screen watches it
/// (`maxRetries: .max`), waiting at most a minute (`maxDelay`), with a backoff that starts over
/// once quotes flowed again (`resetAfterElement: true`): a connection that worked for an hour and
/// then failed waits 1 s, not as long as one that never worked. With a limit, the failure after
/// the last retry would end the shared feed, and every screen that came later would end at once.
@MainActor
public final class QuoteFeed {
  public let quotes: AsyncShareFlowSequence<Quote, SocketError>

  public init<C: Clock>(socket: QuoteSocket, clock: C) where C.Duration == Duration {
    quotes = socket.quotes()
      .retryWithBackoff(maxRetries: .max, initialDelay: .seconds(1), resetAfterElement: true, clock: clock)
      .shareFlow(replay: 1, gracePeriod: .seconds(5), clock: clock)
  }
}
// endregion: quote-feed

// region: quote-screens
/// A watchlist screen's model: every symbol's latest price.
@MainActor
public final class WatchlistModel {
  public private(set) var prices: [String: Int] = [:]
  public private(set) var failure: SocketError?
  private var subscription: FlowSubscription?

  public init(feed: QuoteFeed) {
    subscription = feed.quotes.sink(
      receiveCompletion: { @MainActor [weak self] completion in
        if case .failure(let error) = completion { self?.failure = error }
      },
      receiveValue: { @MainActor [weak self] quote in self?.prices[quote.symbol] = quote.price })
  }
}

/// A ticker screen's model: the last quote, whatever its symbol.
@MainActor
public final class TickerModel {
  public private(set) var latest: Quote?
  private var subscription: FlowSubscription?

  public init(feed: QuoteFeed) {
    subscription = feed.quotes.sink { @MainActor [weak self] quote in self?.latest = quote }
  }
}
// endregion: quote-screens
