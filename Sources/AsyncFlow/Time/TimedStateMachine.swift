/// What comes out of a timed operator, in order.
enum TimedOutput<Element, Failure: Error> {
  case element(Element)
  case end(Failure?)
}

/// The pure decision logic of a timed operator (`debounceFlow`, `throttleFlow`, `delayFlow`,
/// `timeoutFlow`). ``TimedStorage`` feeds it the upstream's events and the timer's firings, and
/// carries out what it asks: when to wake the timer, whether to pull upstream, what to deliver.
///
/// An event that lets go of an element the logic held (a newer one replaced it, a conflation
/// overwrote it, a buffering policy dropped it) returns it rather than releasing it: the storage
/// calls the logic under its lock, and the element's `deinit` may call back into the operator
/// (cancel the consumer, send to the subject feeding it), so it is released after the lock.
///
/// Deadlines never move earlier while the timer sleeps (a debounce moves its deadline later, a
/// delay queue's head is always the earliest), so the timer only sleeps until `deadline`, then
/// reports; the machine decides whether that instant is still the one that matters.
protocol TimedStateMachine: Sendable {
  associatedtype Element: Sendable
  /// What the consumer receives: the upstream's elements, or what the machine makes of them
  /// (`collectFlow`'s arrays).
  associatedtype Output: Sendable = Element
  associatedtype UpstreamFailure: Error
  associatedtype Failure: Error
  associatedtype Instant: InstantProtocol

  mutating func start(at now: Instant)
  /// Returns the element this one displaced, or this one if the logic does not keep it.
  mutating func upstreamElement(_ element: Element, at now: Instant) -> Element?
  /// Returns the element a conflation displaced, if any.
  mutating func upstreamEnded(_ failure: UpstreamFailure?, at now: Instant) -> Element?
  /// Returns the element a conflation displaced, if any.
  mutating func timerFired(at now: Instant) -> Element?

  /// When the timer should next fire, if it should.
  var deadline: Instant? { get }
  /// Whether upstream may be pulled now (a machine that buffers nothing says no while it holds an
  /// element the consumer has not taken).
  var wantsUpstream: Bool { get }
  /// Whether the consumer has something to take.
  var hasOutput: Bool { get }
  /// Takes the next output for the consumer at `now`. Once it has returned `.end`, the operator is over.
  mutating func nextOutput(at now: Instant) -> TimedOutput<Output, Failure>?
  /// Whether an `.end` is waiting or delivered: the upstream and the timer are no longer needed.
  var isEnding: Bool { get }
}

/// What a timed operator holds for its consumer. Elements are conflated when asked (a newer one
/// replaces one the consumer has not taken yet), so a slow consumer sees the latest, in bounded
/// memory; the end is never conflated away.
struct TimedOutputQueue<Element, Failure: Error> {
  private var outputs = RingBuffer<TimedOutput<Element, Failure>>()
  private(set) var hasEnded = false

  var isEmpty: Bool { outputs.isEmpty }
  /// The outputs the consumer has not taken, the end included.
  var count: Int { outputs.count }

  /// Returns the element a conflation replaced, to be released after the lock.
  @discardableResult
  mutating func append(_ element: Element, conflating: Bool) -> Element? {
    if conflating, case .element(let replaced) = outputs.last {
      outputs.last = .element(element)
      return replaced
    }
    outputs.append(.element(element))
    return nil
  }

  mutating func end(_ failure: Failure?) {
    guard !hasEnded else { return }
    hasEnded = true
    outputs.append(.end(failure))
  }

  mutating func popFirst() -> TimedOutput<Element, Failure>? {
    outputs.popFirst()
  }
}

extension TimedOutput: Sendable where Element: Sendable {}
extension TimedOutputQueue: Sendable where Element: Sendable {}

extension Duration {
  /// The longest interval a time operator waits: `Int64.max` seconds, about 292 billion years.
  static let longestInterval = Duration.seconds(Int64.max)
}

extension DurationProtocol {
  /// This interval, capped at ``Swift/Duration/longestInterval`` when it is a `Duration`: a
  /// deadline `now + interval` then stays far below `Duration`'s limit (about 5 trillion years)
  /// instead of trapping there, and nobody can tell a longer wait from this one. Other duration
  /// types are the clock's business.
  var cappedInterval: Self {
    guard let duration = self as? Duration, duration > .longestInterval else { return self }
    return Duration.longestInterval as! Self
  }
}
