extension AsyncSequence {
  /// Calls the given closures as an iteration goes, without changing what it delivers:
  /// Combine's `handleEvents`. `onStart` runs at the consumer's first request; `onElement` before
  /// each element is delivered; then exactly one of `onFinish`, `onFailure` and `onCancel` (the
  /// consumer's task was cancelled, however the base then ended, or the consumer stopped
  /// iterating before the end). Every closure is
  /// optional and runs synchronously in the consumer's task, so keep them short.
  ///
  /// A pull-based sequence has no dispose hook: the end hooks run when the consumer sees the end,
  /// so relative to the upstream's end (a `Flow` body's last line):
  /// - `onFinish` and `onFailure` run after it: the body has returned (or thrown) when they run.
  ///   (RxSwift's `do(onCompleted:)` runs before its source is disposed.)
  /// - `onCancel` for a cancelled consumer's task also runs after it: the base is pulled once more,
  ///   and has ended its work, before the hook.
  /// - `onCancel` for a released iterator runs first, in the release; the base, released just
  ///   after it, cancels its work, which ends later. (RxSwift's `onDispose` runs after its source
  ///   was disposed.)
  ///
  /// ```swift
  /// let results = api.search("swift").handleEventsFlow(
  ///   onStart: { print("searching") }, onFinish: { print("found") }, onCancel: { print("gave up") })
  /// ```
  ///
  /// - Parameters:
  ///   - onStart: At the first request of an iteration.
  ///   - onElement: With each element, before the consumer gets it.
  ///   - onFinish: When the base finished.
  ///   - onFailure: When the base failed, with its failure, before the consumer gets it.
  ///   - onCancel: When the consumer's task was cancelled or its iterator was released early.
  public func handleEventsFlow(
    onStart: (@Sendable () -> Void)? = nil, onElement: (@Sendable (Element) -> Void)? = nil,
    onFinish: (@Sendable () -> Void)? = nil, onFailure: (@Sendable (Failure) -> Void)? = nil,
    onCancel: (@Sendable () -> Void)? = nil
  ) -> AsyncHandleEventsFlowSequence<Self> {
    AsyncHandleEventsFlowSequence(
      base: self,
      handlers: EventHandlers(
        onStart: onStart, onElement: onElement, onFinish: onFinish, onFailure: onFailure, onCancel: onCancel))
  }
}

/// A sequence that reports its iterations' events to closures; made by
/// ``_Concurrency/AsyncSequence/handleEventsFlow(onStart:onElement:onFinish:onFailure:onCancel:)``.
///
/// ```swift
/// let logged: AsyncHandleEventsFlowSequence<Flow<Int, Never>> =
///   Flow.sequence([1, 2]).handleEventsFlow(onElement: { print("got \($0)") })
/// ```
public struct AsyncHandleEventsFlowSequence<Base: AsyncSequence>: AsyncSequence {
  /// The elements it delivers: `Base.Element`.
  public typealias Element = Base.Element
  /// How it can fail: `Base.Failure`.
  public typealias Failure = Base.Failure

  let base: Base
  let handlers: EventHandlers<Element, Failure>

  /// Starts an iteration; `onStart` runs at its first request.
  ///
  /// ```swift
  /// var iterator = logged.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    let handlers = handlers
    return Iterator(iteration: ObservedIteration(base: base.makeAsyncIterator()) { handlers })
  }

  /// The iterator of an ``AsyncHandleEventsFlowSequence``; releasing it before the end reports a
  /// cancellation.
  ///
  /// ```swift
  /// var iterator = logged.makeAsyncIterator()
  /// while let value = await iterator.next() { print(value) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncHandleEventsFlowSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncHandleEventsFlowSequence.Failure

    let iteration: ObservedIteration<Base.AsyncIterator, EventHandlers<Element, Failure>>

    /// The base's next element, reported to the handlers first.
    ///
    /// ```swift
    /// let value = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await iteration.next(isolation: actor)
    }

    /// Ends what the iterator holds; every step returns `nil` after it.
    ///
    /// ```swift
    /// await iterator._end(isolation: #isolation)
    /// ```
    public mutating func _end(isolation actor: isolated (any Actor)?) async {
      await iteration.end(isolation: actor)
    }
  }
}

/// The closures of `handleEventsFlow`, shared by its iterations.
struct EventHandlers<Element, Failure: Error>: IterationObserver, Sendable {
  let onStart: (@Sendable () -> Void)?
  let onElement: (@Sendable (Element) -> Void)?
  let onFinish: (@Sendable () -> Void)?
  let onFailure: (@Sendable (Failure) -> Void)?
  let onCancel: (@Sendable () -> Void)?

  func started() { onStart?() }
  func element(_ element: Element) { onElement?(element) }
  func finished() { onFinish?() }
  func failed(_ failure: Failure) { onFailure?(failure) }
  func cancelled() { onCancel?() }
}

extension AsyncHandleEventsFlowSequence: Sendable where Base: Sendable {}

@available(*, unavailable)
extension AsyncHandleEventsFlowSequence.Iterator: Sendable {}
