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

/// The iterator of a serial operator (one that pulls its base in its consumer's `next()` and runs
/// no task): it writes one step and what ending it means, and this protocol writes
/// `next(isolation:)` around them, so that two rules of every serial operator live here:
/// - nothing is delivered once the consumer's task is cancelled: an element made after the
///   cancellation (by the base, or by the operator's own closure, which runs in the consumer's
///   task and may be what cancelled it) is dropped, what the iterator holds is ended, and the
///   answer is `nil`;
/// - a failure goes on only once what the iteration started has ended: when the step throws while
///   the iterator still holds a base (its own closure failed; a failed base is let go by
///   `nextOrRelease`), that base is ended first, so that its body and tasks have ended when
///   `next()` throws.
///
/// Public for the same reason as ``_FlowIterator``; the leading underscores say it is not API.
///
/// ```swift
/// var iterator = Flow.sequence([1, 2]).scanFlow(0, +).makeAsyncIterator()
/// let first = await iterator.next()  // 1
/// ```
public protocol _SerialFlowIterator: _FlowIterator {
  /// One step of the operator: its next element, or `nil` at its end. Pulls its base through
  /// `Optional.nextOrRelease(isolation:)`, so that an ended or failed base is no longer held.
  ///
  /// ```swift
  /// let first = try await iterator._step(isolation: #isolation)
  /// ```
  mutating func _step(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element?

  /// Ends and lets go of what the iterator still holds (its base, a fallback), after which every
  /// step returns `nil`: `Optional.end(isolation:)` on each.
  ///
  /// ```swift
  /// await iterator._end(isolation: #isolation)
  /// ```
  mutating func _end(isolation actor: isolated (any Actor)?) async
}

extension _SerialFlowIterator {
  /// The operator's next element, or `nil` at its end or once the consumer's task is cancelled.
  ///
  /// ```swift
  /// var iterator = Flow.sequence([1, 2]).scanFlow(0, +).makeAsyncIterator()
  /// let first = try await iterator.next(isolation: #isolation)  // 1
  /// ```
  @inlinable
  public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    do throws(Failure) {
      guard let element = try await _step(isolation: actor) else { return nil }
      guard Task.isCancelled else { return element }
      await _end(isolation: actor)
      return nil
    } catch {
      await _end(isolation: actor)
      throw error
    }
  }
}
