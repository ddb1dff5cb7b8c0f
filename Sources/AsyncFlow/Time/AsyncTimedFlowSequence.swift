/// The one sequence type behind the operators that measure time on a clock (`debounceFlow`,
/// `throttleFlow`, `delayFlow`, `timeoutFlow`, `sampleFlow`, `collectFlow(every:)`), told apart
/// by `Kind` (`_TimedFlowKind`): each operator's public name is a typealias of it
/// (``AsyncDebounceFlowSequence``, ``AsyncThrottleFlowSequence``, ``AsyncDelayFlowSequence``,
/// ``AsyncTimeoutFlowSequence``, ``AsyncSampleFlowSequence``, ``AsyncCollectByTimeFlowSequence``),
/// whose documentation gives the rules. `Base` and `C` name the upstream and the clock, so that a
/// stored pipeline's type says what it runs on; each iteration runs on the one operator life cycle.
///
/// ```swift
/// let keystrokes = PassthroughFlow<String, Never>()  // the search field's text, as typed
/// let queries: AsyncTimedFlowSequence<
///   PassthroughFlow<String, Never>, ContinuousClock, String, Never, _TimedFlowKind.Debounce> =
///   keystrokes.debounceFlow(for: .milliseconds(300))  // an AsyncDebounceFlowSequence
/// ```
public struct AsyncTimedFlowSequence<Base: AsyncSequence, C: Clock, Element: Sendable, Failure: Error, Kind>:
  AsyncSequence, Sendable
{
  @usableFromInline let makeIterator: @Sendable () -> AsyncOperatorIterator<Element, Failure>

  @inlinable init(_ makeIterator: @escaping @Sendable () -> AsyncOperatorIterator<Element, Failure>) {
    self.makeIterator = makeIterator
  }

  /// Starts an iteration: its task starts at the first `next()`.
  ///
  /// ```swift
  /// var iterator = keystrokes.debounceFlow(for: .milliseconds(300)).makeAsyncIterator()
  /// ```
  @inlinable public func makeAsyncIterator() -> Iterator {
    makeIterator()
  }

  /// The iterator of a timed operator: releasing it ends its iteration's task.
  ///
  /// ```swift
  /// var iterator = queries.makeAsyncIterator()
  /// while let query = await iterator.next() { print(query) }
  /// ```
  public typealias Iterator = AsyncOperatorIterator<Element, Failure>
}

/// The operators an ``AsyncTimedFlowSequence`` is told apart by: public for technical reasons (a
/// public typealias names them), not API. Write the operator's own type instead.
///
/// ```swift
/// let queries: AsyncDebounceFlowSequence<PassthroughFlow<String, Never>, ContinuousClock> =
///   keystrokes.debounceFlow(for: .milliseconds(300))  // not _TimedFlowKind.Debounce
/// ```
public enum _TimedFlowKind {
  /// `debounceFlow`: ``AsyncDebounceFlowSequence``.
  ///
  /// ```swift
  /// let settled: AsyncDebounceFlowSequence<PassthroughFlow<String, Never>, ContinuousClock> =
  ///   keystrokes.debounceFlow(for: .seconds(1))
  /// ```
  public enum Debounce {}
  /// `throttleFlow`: ``AsyncThrottleFlowSequence``.
  ///
  /// ```swift
  /// let throttled: AsyncThrottleFlowSequence<PassthroughFlow<String, Never>, ContinuousClock> =
  ///   keystrokes.throttleFlow(for: .seconds(1))
  /// ```
  public enum Throttle {}
  /// `delayFlow`: ``AsyncDelayFlowSequence``.
  ///
  /// ```swift
  /// let delayed: AsyncDelayFlowSequence<PassthroughFlow<String, Never>, ContinuousClock> =
  ///   keystrokes.delayFlow(for: .seconds(1))
  /// ```
  public enum Delay {}
  /// `timeoutFlow`: ``AsyncTimeoutFlowSequence``.
  ///
  /// ```swift
  /// let timed: AsyncTimeoutFlowSequence<PassthroughFlow<String, Never>, ContinuousClock, FlowTimeoutError> =
  ///   keystrokes.timeoutFlow(after: .seconds(1))
  /// ```
  public enum Timeout {}
  /// `sampleFlow`: ``AsyncSampleFlowSequence``.
  ///
  /// ```swift
  /// let sampled: AsyncSampleFlowSequence<PassthroughFlow<String, Never>, ContinuousClock> =
  ///   keystrokes.sampleFlow(every: .seconds(1))
  /// ```
  public enum Sample {}
  /// `collectFlow(every:)` and `collectFlow(count:orEvery:)`: ``AsyncCollectByTimeFlowSequence``.
  ///
  /// ```swift
  /// let batches: AsyncCollectByTimeFlowSequence<PassthroughFlow<String, Never>, ContinuousClock> =
  ///   keystrokes.collectFlow(every: .seconds(1))
  /// ```
  public enum CollectByTime {}
}
