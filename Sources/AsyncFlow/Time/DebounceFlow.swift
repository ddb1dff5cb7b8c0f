extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Delivers an element only once `interval` has passed without a newer one: the search-box
  /// operator, which waits for the typing to pause.
  ///
  /// When the upstream finishes, a pending element is delivered at once, then the finish; when it
  /// fails, the pending element is delivered first, then the failure: nothing is lost and a failure
  /// never turns into a finish. A consumer slower than the debounced elements sees the newest one.
  ///
  /// ```swift
  /// let keystrokes = PassthroughFlow<String, Never>()  // the search field's text, as typed
  /// let queries = keystrokes.debounceFlow(for: .milliseconds(300), clock: clock)
  /// ```
  public func debounceFlow<C: Clock>(for interval: C.Duration, clock: C) -> AsyncDebounceFlowSequence<Self, C> {
    precondition(interval >= .zero, "debounceFlow(for:clock:): interval must be 0 or greater, got \(interval)")
    return AsyncDebounceFlowSequence(base: self, interval: interval, clock: clock)
  }

  /// ``debounceFlow(for:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let queries = keystrokes.debounceFlow(for: .milliseconds(300))
  /// ```
  public func debounceFlow(for interval: Duration) -> AsyncDebounceFlowSequence<Self, ContinuousClock> {
    debounceFlow(for: interval, clock: ContinuousClock())
  }
}

/// The sequence made by ``_Concurrency/AsyncSequence/debounceFlow(for:clock:)``: an element is
/// delivered once the interval has passed without a newer one. A concrete type, so that it can be
/// stored in a property.
///
/// ```swift
/// struct SearchModel {
///   let queries: AsyncDebounceFlowSequence<PassthroughFlow<String, Never>, ContinuousClock>
/// }
/// ```
public struct AsyncDebounceFlowSequence<Base: AsyncSequence & Sendable, C: Clock>: AsyncSequence, Sendable
where Base.Element: Sendable {
  /// The upstream's element.
  ///
  /// ```swift
  /// for try await element in queries { print(element) }
  /// ```
  public typealias Element = Base.Element
  /// The upstream's failure: `try` is not needed when it is `Never`.
  ///
  /// ```swift
  /// for await element in queries { print(element) }  // Failure == Never
  /// ```
  public typealias Failure = Base.Failure
  typealias Logic = DebounceLogic<Element, Failure, C.Instant>

  let base: Base
  let interval: C.Duration
  let clock: C

  /// Starts an iteration: its task starts at the first `next()`.
  ///
  /// ```swift
  /// var iterator = keystrokes.debounceFlow(for: .milliseconds(300)).makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(Logic(interval: interval), pulling: base, clock: clock)
  }

  /// The iterator of an ``AsyncDebounceFlowSequence``: releasing it ends its iteration's task.
  ///
  /// ```swift
  /// var iterator = queries.makeAsyncIterator()
  /// while let query = try await iterator.next() { print(query) }
  /// ```
  public typealias Iterator = AsyncOperatorIterator<Element, Failure>
}
