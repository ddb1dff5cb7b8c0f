import AsyncFlow

// region: grace-period-shared-connection
/// A live quote: what the socket sends.
public struct LiveQuote: Sendable, Equatable {
  public var symbol: String
  public var price: Int

  public init(symbol: String, price: Int) {
    (self.symbol, self.price) = (symbol, price)
  }
}

/// One connection, shared by every screen that shows quotes. When the last screen leaves, the
/// connection stays open for 5 seconds: a quick switch from the list to a detail screen joins it,
/// and first shows the last quote, instead of reconnecting.
public final class QuotesHub: Sendable {
  public let quotes: AsyncShareFlowSequence<LiveQuote, Never>

  /// `connect` opens the socket and streams its quotes; it runs once per connection.
  public init(clock: some Clock<Duration> = ContinuousClock(), connect: @escaping @Sendable () -> Flow<LiveQuote, Never>) {
    quotes = Flow { emitter in
      for await quote in connect() { await emitter.emit(quote) }
    }.shareFlow(replay: 1, gracePeriod: .seconds(5), clock: clock)
  }
}

/// The list screen: shows the latest price of every symbol while it is on screen.
@MainActor
public final class QuoteListModel {
  public private(set) var prices: [String: Int] = [:]
  private let hub: QuotesHub
  private var subscription: FlowSubscription?

  public init(hub: QuotesHub) { self.hub = hub }

  public func appear() {
    subscription = hub.quotes.sink { @MainActor [weak self] quote in self?.prices[quote.symbol] = quote.price }
  }

  public func disappear() { subscription = nil }
}

/// The detail screen: shows one symbol's price while it is on screen.
@MainActor
public final class QuoteDetailModel {
  public let symbol: String
  public private(set) var price: Int?
  private let hub: QuotesHub
  private var subscription: FlowSubscription?

  public init(symbol: String, hub: QuotesHub) { (self.symbol, self.hub) = (symbol, hub) }

  public func appear() {
    subscription = hub.quotes
      .sink { @MainActor [weak self] quote in
        guard let self, quote.symbol == self.symbol else { return }
        self.price = quote.price
      }
  }

  public func disappear() { subscription = nil }
}
// endregion: grace-period-shared-connection
