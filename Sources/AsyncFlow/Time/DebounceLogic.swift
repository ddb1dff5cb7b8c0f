/// `debounceFlow`: an element is delivered once `interval` has passed without a newer one; at the
/// upstream's end the pending element is delivered at once, then the finish or the failure.
///
/// The model of an operator on the one life cycle (`Internal/README.md`): a plain value that says
/// what to do with each input element, the input's end and the timer's firing, and what the life
/// cycle reads back (`deadline`, `wantsInput`, `hasOutput`, `isEnding`). Starting, cancelling,
/// ending and waiting for the task are ``OperatorLifecycle``'s; its tests are a table of events
/// (`OperatorLogicTests`).
struct DebounceLogic<Element: Sendable, Failure: Error, Instant: InstantProtocol>: OperatorLogic {
  typealias InputFailure = Failure

  private let interval: Instant.Duration
  private var pending: (element: Element, deadline: Instant)?
  private var outputs = OutputQueue<Element, Failure>()

  init(interval: Instant.Duration) {
    self.interval = interval.cappedInterval
  }

  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element> {
    defer { pending = (element, now.advanced(by: interval)) }
    return pending.map { .keptDisplacing($0.element) } ?? .kept
  }

  mutating func inputEnded(_ failure: Failure?, from _: Int, at now: Instant) -> Element? {
    if let pending = pending.take() { outputs.append(pending.element, conflating: false) }
    outputs.end(failure)
    return nil
  }

  mutating func timerFired(at now: Instant) -> Element? {
    guard let deadline = pending?.deadline, now >= deadline, let pending = pending.take() else { return nil }
    return outputs.append(pending.element, conflating: true)
  }

  var deadline: Instant? { pending?.deadline }
  var wantsInput: Bool { !outputs.hasEnded }
  var hasOutput: Bool { !outputs.isEmpty }
  var isEnding: Bool { outputs.hasEnded }

  mutating func nextOutput(at now: Instant) -> OperatorOutput<Element, Failure>? {
    outputs.popFirst()
  }
}
