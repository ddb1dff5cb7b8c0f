import AsyncFlow

// The working forms of the guide "Known toolchain issues": Swift 6.3.1's SILGen crashes on the
// standard library's `rethrows` algorithms (`reduce`, `contains`, `first(where:)`) called on a
// sequence whose `Failure` is a concrete error type, under `try?`, `do`/`catch` or a typed
// `throws`. These forms compile, and `ToolchainWorkaroundsTests` runs them.

/// What a quote feed fails with.
public enum FeedError: Error, Equatable { case disconnected }

// region: toolchain-typed-loop
/// The total of a feed whose failure is typed: a `for try await` loop in a typed `do` keeps the
/// failure's type, and compiles where `try? await feed.reduce(0, +)` crashes the compiler.
public func total(of feed: Flow<Int, FeedError>) async -> Result<Int, FeedError> {
  var total = 0
  do throws(FeedError) {
    for try await quote in feed { total += quote }
  } catch {
    return .failure(error)  // error: FeedError
  }
  return .success(total)
}
// endregion: toolchain-typed-loop

// region: toolchain-untyped-throws
/// The algorithm itself, called with a plain `try` from a function that throws `any Error`: this
/// form compiles too, at the cost of the failure's type.
public func sum(of feed: Flow<Int, FeedError>) async throws -> Int {
  try await feed.reduce(0, +)
}
// endregion: toolchain-untyped-throws
