extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Delivers an element only once `interval` has passed without a newer one: the search-box
  /// operator, which waits for the typing to pause.
  ///
  /// When the upstream finishes, a pending element is delivered at once, then the finish; when it
  /// fails, the pending element is delivered first, then the failure: nothing is lost and a failure
  /// never turns into a finish. A consumer slower than the debounced elements sees the newest one.
  ///
  /// A zero `interval` conflates: of the elements that arrive at one instant, only the last is
  /// delivered (`[abc]-d` gives `c-d`), as Combine's and RxSwift's `debounce` do; elements at
  /// different instants all pass. (Kotlin's `debounce(0)` returns the flow unchanged.)
  ///
  /// ```swift
  /// let keystrokes = PassthroughFlow<String, Never>()  // the search field's text, as typed
  /// let queries = keystrokes.debounceFlow(for: .milliseconds(300), clock: clock)
  /// ```
  public func debounceFlow<C: Clock>(for interval: C.Duration, clock: C) -> AsyncDebounceFlowSequence<Self, C> {
    precondition(interval >= .zero, "debounceFlow(for:clock:): interval must be 0 or greater, got \(interval)")
    return AsyncDebounceFlowSequence {
      AsyncOperatorIterator(DebounceLogic<Element, Failure, C.Instant>(interval: interval), pulling: self, clock: clock)
    }
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
public typealias AsyncDebounceFlowSequence<Base: AsyncSequence & Sendable, C: Clock> =
  AsyncTimedFlowSequence<Base, C, Base.Element, Base.Failure, _TimedFlowKind.Debounce>
where Base.Element: Sendable
