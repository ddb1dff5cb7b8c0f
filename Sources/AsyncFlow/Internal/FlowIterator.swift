/// An iterator that writes only `next(isolation:)`; its `next()` is that with no actor. The library's
/// serial operators' iterators conform, so the pair is written once (public because a protocol's
/// default implementation can stand in for a public requirement only if it is public itself; the
/// leading underscore says it is not API).
///
/// ```swift
/// var iterator = Flow.sequence([1, 2]).materialize().makeAsyncIterator()
/// let first = await iterator.next()  // .element(1)
/// ```
public protocol _FlowIterator: AsyncIteratorProtocol {}

extension _FlowIterator {
  /// The next element; the same as `next(isolation: nil)`, which runs the base off any actor.
  ///
  /// ```swift
  /// var iterator = Flow.sequence([1, 2]).prependState(0).makeAsyncIterator()
  /// let first = await iterator.next()  // 0
  /// ```
  @inlinable
  public mutating func next() async throws(Failure) -> Element? {
    try await next(isolation: nil)
  }
}
