extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Delivers an element only once `interval` has passed without a newer one: the search-box
  /// operator, which waits for the typing to pause.
  ///
  /// When the upstream finishes, a pending element is delivered at once, then the finish; when it
  /// fails, the pending element is delivered first, then the failure: nothing is lost and a failure
  /// never turns into a finish. A consumer slower than the debounced elements sees the newest one.
  ///
  /// ```swift
  /// let queries = keystrokes.debounceFlow(for: .milliseconds(300), clock: clock)
  /// ```
  public func debounceFlow<C: Clock>(for interval: C.Duration, clock: C) -> some AsyncSequence<Element, Failure>
    & Sendable
  {
    precondition(interval >= .zero, "debounceFlow(for:clock:): interval must be 0 or greater, got \(interval)")
    return TimedSequence(
      machine: DebounceStateMachine<Element, Failure, C.Instant>(interval: interval), base: self, clock: clock)
  }

  /// ``debounceFlow(for:clock:)`` on the `ContinuousClock`.
  ///
  /// ```swift
  /// let queries = keystrokes.debounceFlow(for: .milliseconds(300))
  /// ```
  public func debounceFlow(for interval: Duration) -> some AsyncSequence<Element, Failure> & Sendable {
    debounceFlow(for: interval, clock: ContinuousClock())
  }
}

/// `debounceFlow`: an element is delivered once `interval` has passed without a newer one; at the
/// upstream's end the pending element is delivered at once, then the finish or the failure.
struct DebounceStateMachine<Element: Sendable, Failure: Error, Instant: InstantProtocol>: TimedStateMachine, Sendable {
  typealias UpstreamFailure = Failure

  private let interval: Instant.Duration
  private var pending: (element: Element, deadline: Instant)?
  private var outputs = TimedOutputQueue<Element, Failure>()

  init(interval: Instant.Duration) {
    self.interval = interval
  }

  mutating func start(at now: Instant) {}

  mutating func upstreamElement(_ element: Element, at now: Instant) {
    pending = (element, now.advanced(by: interval))
  }

  mutating func upstreamEnded(_ failure: Failure?, at now: Instant) {
    if let pending = pending.take() { outputs.append(pending.element, conflating: false) }
    outputs.end(failure)
  }

  mutating func timerFired(at now: Instant) {
    guard let pending, now >= pending.deadline else { return }
    self.pending = nil
    outputs.append(pending.element, conflating: true)
  }

  var deadline: Instant? { pending?.deadline }
  var wantsUpstream: Bool { !outputs.hasEnded }
  var hasOutput: Bool { !outputs.isEmpty }
  var isEnding: Bool { outputs.hasEnded }

  mutating func nextOutput(at now: Instant) -> TimedOutput<Element, Failure>? {
    outputs.popFirst()
  }
}
