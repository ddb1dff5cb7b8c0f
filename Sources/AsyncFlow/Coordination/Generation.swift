/// "The late writer loses": a counter whose tokens tell whether the work that took them is still
/// current, so that a result (or a failure) that arrives after the state moved on is dropped.
///
/// Take the token together with the request's context, with no `await` in between, and check it
/// before writing.
///
/// ```swift
/// @MainActor final class History {
///   var generation = Generation()
///   var items: [Item] = []
///   func refresh() async {
///     let token = generation.advance()          // every load-more in flight is now stale
///     let page = try? await api.articles(page: 1)
///     guard generation.isCurrent(token), let page else { return }
///     items = page
///   }
/// }
/// ```
public struct Generation: Sendable, Equatable {
  private var value: UInt64 = 0

  /// A counter at its first generation.
  ///
  /// ```swift
  /// var generation = Generation()
  /// ```
  public init() {}

  /// Starts a new generation and returns its token; every earlier token is now stale.
  ///
  /// ```swift
  /// let token = generation.advance()
  /// ```
  public mutating func advance() -> Token {
    value += 1
    return Token(value: value)
  }

  /// The token of the current generation, for work that must not invalidate others (a load-more
  /// that a refresh will invalidate, but that does not invalidate anything itself).
  ///
  /// ```swift
  /// let token = generation.current
  /// ```
  public var current: Token {
    Token(value: value)
  }

  /// Whether `token` belongs to the current generation.
  ///
  /// ```swift
  /// guard generation.isCurrent(token) else { return }  // stale: write nothing
  /// ```
  public func isCurrent(_ token: Token) -> Bool {
    token.value == value
  }

  /// Marks work as belonging to one generation.
  ///
  /// ```swift
  /// let token: Generation.Token = generation.current
  /// ```
  public struct Token: Sendable, Hashable {
    let value: UInt64
  }
}
