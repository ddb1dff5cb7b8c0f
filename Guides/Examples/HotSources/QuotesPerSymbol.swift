import AsyncFlow

// region: keyed-share-quotes
/// One connection per symbol, shared by every screen that shows that symbol. The first screen of a
/// symbol connects; the others join and first show its last quote; when the symbol's last screen
/// has left, its connection stays open for 5 seconds and then closes, and the symbol is forgotten.
public final class SymbolQuotes: Sendable {
  public let quotes: KeyedShareFlow<String, LiveQuote, Never>

  /// `connect` opens the socket of one symbol and streams its quotes; it runs once per connection.
  public init(
    clock: some Clock<Duration> = ContinuousClock(), connect: @escaping @Sendable (String) -> Flow<LiveQuote, Never>
  ) {
    quotes = KeyedShareFlow(replay: 1, gracePeriod: .seconds(5), clock: clock, upstream: connect)
  }
}

/// A screen that shows one symbol's price while it is on screen.
@MainActor
public final class SymbolPriceModel {
  public let symbol: String
  public private(set) var price: Int?
  private let source: SymbolQuotes
  private var subscription: FlowSubscription?

  public init(symbol: String, source: SymbolQuotes) { (self.symbol, self.source) = (symbol, source) }

  public func appear() {
    subscription = source.quotes[symbol].sink { @MainActor [weak self] quote in self?.price = quote.price }
  }

  public func disappear() { subscription = nil }
}
// endregion: keyed-share-quotes
