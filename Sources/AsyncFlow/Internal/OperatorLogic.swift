/// What comes out of an operator, in order.
@usableFromInline
enum OperatorOutput<Element, Failure: Error> {
  case element(Element)
  case end(Failure?)
}

/// A logic's end: known once its input ended (or it decided to end), delivered once, after what
/// it still holds for the consumer. The first end counts.
@usableFromInline
enum PendingEnd<Failure: Error>: Sendable {
  case notYet
  case waiting(Failure?)
  case delivered

  /// Whether the end is known: waiting or delivered (the logic's ``OperatorLogic/isEnding``).
  @inlinable
  var isKnown: Bool {
    if case .notYet = self { return false }
    return true
  }
  @inlinable
  var isWaiting: Bool {
    if case .waiting = self { return true }
    return false
  }

  @inlinable
  mutating func end(_ failure: Failure?) {
    if case .notYet = self { self = .waiting(failure) }
  }

  /// The end, if it waits: it is delivered now, and never again.
  @inlinable
  mutating func deliver<Element>() -> OperatorOutput<Element, Failure>? {
    guard case .waiting(let failure) = self else { return nil }
    self = .delivered
    return .end(failure)
  }
}

/// What a logic did with an input's element.
@usableFromInline
enum InputVerdict<Element> {
  case kept
  /// Kept; an element the logic held gives way (a newer one replaced it, a buffer dropped its
  /// oldest), to be released after the lock.
  case keptDisplacing(Element)
  /// Not kept (a full `bufferingOldest` buffer, a throttle window that has its element): handed
  /// back, to be released after the lock.
  case refused(Element)
}

/// The per-operator part of an ``OperatorLifecycle``: what to do with the input's elements, its
/// end and the timer's firings, and what the consumer gets next. A plain value, tested as a table
/// of inputs and outputs; the life cycle asks it, under the storage's lock, whether the consumer,
/// the input and the timer may go on.
///
/// An event that lets go of an element the logic held returns it rather than releasing it: the
/// storage calls the logic under its lock, and the element's `deinit` may call back into the
/// operator (cancel the consumer, send to the subject feeding it), so it is released after the lock.
///
/// Deadlines never move earlier while the timer sleeps (a debounce moves its deadline later, a
/// delay queue's head is always the earliest), so the timer only sleeps until `deadline`, then
/// reports; the logic decides whether that instant is still the one that matters.
@usableFromInline
protocol OperatorLogic: Sendable {
  /// What the input delivers.
  associatedtype Element: Sendable
  /// What the consumer receives: the input's elements, or what the logic makes of them
  /// (`collectFlow`'s arrays).
  associatedtype Output: Sendable = Element
  associatedtype InputFailure: Error
  associatedtype Failure: Error
  associatedtype Instant: InstantProtocol

  /// Whether the operator's task runs a timer beside its input (`false`: `deadline` is never set).
  static var usesTimer: Bool { get }

  mutating func start(at now: Instant)
  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element>
  /// Input `index` ended (`nil`: it finished); a single-input logic has only input 0. Returns the
  /// element a conflation displaced, if any.
  mutating func inputEnded(_ failure: InputFailure?, from index: Int, at now: Instant) -> Element?
  /// Returns the element a conflation displaced, if any.
  mutating func timerFired(at now: Instant) -> Element?

  /// When the timer should next fire, if it should.
  var deadline: Instant? { get }
  /// Whether the input may be pulled now (a logic that buffers nothing says no while it holds an
  /// element the consumer has not taken; one whose input pushes says no: its task waits for the end).
  var wantsInput: Bool { get }
  /// Whether input `index` may be pulled now: by default ``wantsInput``, one answer for all the
  /// inputs; combineLatest and zip bound each input's read-ahead on its own.
  func wantsInput(from index: Int) -> Bool
  /// Whether the consumer has something to take.
  var hasOutput: Bool { get }
  /// Takes the next output for the consumer at `now`. Once it has returned `.end`, the operator is over.
  mutating func nextOutput(at now: Instant) -> OperatorOutput<Output, Failure>?
  /// Whether an `.end` is waiting or delivered: the input and the timer are no longer needed.
  var isEnding: Bool { get }
  /// Whether the end, once known, drops the outputs the consumer has taken but not yet returned:
  /// a consumer that takes batches and makes its outputs out of the lock (combineLatest's, zip's)
  /// must not return one more after a failure that came meanwhile. The life cycle reads it when
  /// the end is known and hands it out in that event's wakeups (`dropsTakenOutputs`); the storage
  /// raises ``OperatorStorage/takenOutputsDropped``, which such a consumer checks before each output.
  var dropsTakenOutputs: Bool { get }

  /// The input that the task starts first, in the caller of the first `next()`, before the others
  /// (`nil`: all at once, in the task). It runs there until it suspends, and at the latest until its
  /// first element is handed over (``OperatorStorage/pull(_:as:)`` yields after it, so that an input
  /// that never suspends cannot hold the caller): what it has at once is in the logic before any
  /// other input's first element (withLatestFrom's other and its current value).
  static var inputStartedFirst: Int? { get }

  /// What waits on the logic besides the life cycle's own inputs, consumer and timer: a `Flow`
  /// body's emitters waiting for room. By default nothing does.
  associatedtype Waiter: LogicWaiter = Never
  /// The life cycle retired the logic (the iteration ended, or its consumer left): the waiters it
  /// still holds, which the storage resumes after the lock (they find the iteration over).
  mutating func retire() -> [Waiter]
}

/// What waits on a logic besides the life cycle's own (``OperatorLogic/Waiter``): the logic holds
/// it and hands it out when it may go on; whoever it hands it to resumes it, after the lock.
@usableFromInline
protocol LogicWaiter: Sendable {
  func resume()
}

extension UnsafeContinuation: LogicWaiter where T == Void, E == Never {}

extension Never: LogicWaiter {
  @usableFromInline
  func resume() {}
}

extension OperatorLogic {
  @inlinable
  static var usesTimer: Bool { true }
  @inlinable
  var dropsTakenOutputs: Bool { false }
  @inlinable
  static var inputStartedFirst: Int? { nil }
  @inlinable
  mutating func start(at now: Instant) {}
  @inlinable
  func wantsInput(from index: Int) -> Bool { wantsInput }
}

extension OperatorLogic where Waiter == Never {
  @inlinable
  mutating func retire() -> [Never] { [] }
}

/// A logic that measures no time (`bufferFlow`, `Flow.callbacks`, `Flow.merge`, a Flow body, the
/// combining logics): the life cycle starts no timer for it, so it has no deadline and its timer
/// never fires.
@usableFromInline
protocol TimelessOperatorLogic: OperatorLogic where Instant == TimelessClock.Instant {}

extension TimelessOperatorLogic {
  @inlinable
  static var usesTimer: Bool { false }
  @inlinable
  var deadline: Instant? { nil }
  @inlinable
  mutating func timerFired(at now: Instant) -> Element? {
    preconditionFailure("Internal inconsistency: the timer of a logic that measures no time fired")
  }
}

/// What a logic holds for its consumer. Elements are conflated when asked (a newer one replaces
/// one the consumer has not taken yet), so a slow consumer sees the latest, in bounded memory; the
/// end is never conflated away.
@usableFromInline
struct OutputQueue<Element, Failure: Error> {
  @usableFromInline
  var outputs = RingBuffer<OperatorOutput<Element, Failure>>()
  @usableFromInline
  var hasEnded = false

  @inlinable
  init() {}

  @inlinable
  var isEmpty: Bool { outputs.isEmpty }
  /// The outputs the consumer has not taken, the end included.
  @inlinable
  var count: Int { outputs.count }

  /// Returns the element a conflation replaced, to be released after the lock.
  @inlinable
  @discardableResult
  mutating func append(_ element: Element, conflating: Bool) -> Element? {
    if conflating, case .element(let replaced) = outputs.last {
      outputs.last = .element(element)
      return replaced
    }
    outputs.append(.element(element))
    return nil
  }

  @inlinable
  mutating func end(_ failure: Failure?) {
    guard !hasEnded else { return }
    hasEnded = true
    outputs.append(.end(failure))
  }

  @inlinable
  mutating func popFirst() -> OperatorOutput<Element, Failure>? {
    outputs.popFirst()
  }
}

/// The clock of an operator that measures no time (`bufferFlow`, `Flow.callbacks`): every instant
/// is the same one, reading it costs nothing, and nothing sleeps on it (their logics set no timer).
@usableFromInline
struct TimelessClock: Clock {
  @usableFromInline
  struct Instant: InstantProtocol {
    @inlinable
    init() {}

    @inlinable
    func advanced(by duration: Duration) -> Instant { self }
    @inlinable
    func duration(to other: Instant) -> Duration { .zero }
    @inlinable
    static func < (lhs: Instant, rhs: Instant) -> Bool { false }
  }

  @inlinable
  init() {}

  @inlinable
  var now: Instant { Instant() }
  @inlinable
  var minimumResolution: Duration { .zero }

  @inlinable
  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    preconditionFailure("Internal inconsistency: a TimelessClock was asked to sleep")
  }
}

extension OperatorOutput: Sendable where Element: Sendable {}
extension OutputQueue: Sendable where Element: Sendable {}
