/// The logic of a ``Flow`` body on the one operator life cycle: the body is the input, each `emit`
/// hands it an element, and an `emit` that finds no room waits here as a `Waiter` until the
/// consumer wants more.
///
/// The consumer takes everything buffered in one step (a batch), so a busy body and consumer meet
/// under the lock once per batch rather than once per element. The body may run ahead of the
/// consumer's demand by at most `bufferSize` elements, counting the ones the consumer still holds
/// from its last batch (plus one per further task of the body emitting at once: each `emit`
/// buffers its element before it waits).
///
/// An `emit` waiting for room is a ``LogicWaiter``: every event that lets waiters go returns them
/// (a consumer's batch, a cancellation, the body's end, the logic retired with the iteration), to
/// be resumed after the lock; a waiter is in the logic or with one of them, so it resumes exactly
/// once. Generic over the waiter, so that its table test counts plain values.
@usableFromInline
struct EmitterLogic<Element: Sendable, Failure: Error, Waiter: LogicWaiter>: TimelessOperatorLogic {
  @usableFromInline
  typealias InputFailure = Failure
  @usableFromInline
  typealias Output = EmitterBatch<Element, Waiter>

  @usableFromInline let bufferSize: Int
  @usableFromInline var buffer: [Element] = []
  /// Elements of the consumer's last batch beyond the one it returned at once.
  @usableFromInline var consumerBacklog = 0
  /// The consumer has asked for an element and has not taken a batch since.
  @usableFromInline var demand = true
  /// Every `emit` waiting for room, by token. Usually one, but the emitter is `Sendable`: a body
  /// may emit from several child tasks at once, and each waiting one must be resumed.
  @usableFromInline var waiters: [(token: Int, waiter: Waiter)] = []
  @usableFromInline var nextToken = 0
  /// The body's end (it returned or threw), delivered once the buffer is empty.
  @usableFromInline var end = PendingEnd<Failure>.notYet

  @inlinable
  init(bufferSize: Int) {
    self.bufferSize = bufferSize
  }

  @inlinable
  mutating func input(_ element: Element, at now: Instant) -> InputVerdict<Element> {
    buffer.append(element)
    return .kept
  }

  @inlinable
  mutating func inputEnded(_ failure: Failure?, from _: Int, at now: Instant) -> Element? {
    end.end(failure)
    return nil
  }

  /// Whether an `emit` may return at once: its element is within `bufferSize` of the demand.
  @inlinable var wantsInput: Bool {
    !isEnding && buffer.count + consumerBacklog < bufferSize + (demand ? 1 : 0)
  }
  @inlinable var hasOutput: Bool { end.isWaiting || !buffer.isEmpty }
  // The body is over once it returned or threw: what the buffer holds still comes first.
  @inlinable var isEnding: Bool { end.isKnown }

  /// The consumer has used up its batch: it takes the buffer whole, with the waiting emitters
  /// that this leaves room for. With nothing buffered, its demand alone may leave them room: they
  /// leave in an empty batch, since the life cycle lets nothing go on a `next` that finds nothing.
  @inlinable
  mutating func nextOutput(at now: Instant) -> OperatorOutput<Output, Failure>? {
    if !buffer.isEmpty {
      var batch: [Element] = []
      swap(&batch, &buffer)
      demand = false
      consumerBacklog = batch.count - 1
      return .element(EmitterBatch(elements: batch, released: waitersWithRoom()))
    }
    if end.isWaiting { return end.deliver() }
    demand = true
    consumerBacklog = 0
    let released = waitersWithRoom()
    return released.isEmpty ? nil : .element(EmitterBatch(elements: [], released: released))
  }

  /// The waiting emitters that may go on now, to be resumed.
  @inlinable
  mutating func waitersWithRoom() -> [Waiter] {
    wantsInput ? takeWaiters() : []
  }

  // MARK: Emitter events (they change neither `hasOutput` nor `isEnding`: no life-cycle wakeup)

  /// A token for an `emit` about to wait for room, so that its cancellation finds that one.
  @inlinable
  mutating func makeToken() -> Int {
    defer { nextToken += 1 }
    return nextToken
  }

  /// An `emit` waits for room; returns its waiter if it may go on at once (the consumer took a
  /// batch since its element, the body ended, or its task is cancelled).
  @inlinable
  mutating func wait(_ waiter: Waiter, token: Int, isCancelled: Bool) -> Waiter? {
    guard !isCancelled, !isEnding, !wantsInput else { return waiter }
    waiters.append((token, waiter))
    return nil
  }

  /// The task of the `emit` with `token` was cancelled while it waited.
  @inlinable
  mutating func waiterCancelled(token: Int) -> Waiter? {
    waiters.firstIndex { $0.token == token }.map { waiters.remove(at: $0).waiter }
  }

  /// Retired with emitters still waiting (the consumer left while the body waited for room): they
  /// go on, and find the iteration over.
  @inlinable
  mutating func retire() -> [Waiter] {
    takeWaiters()
  }

  /// Takes every waiting `emit`, to be resumed (the body ended: they come from tasks it left).
  @inlinable
  mutating func takeWaiters() -> [Waiter] {
    guard !waiters.isEmpty else { return [] }
    defer { waiters.removeAll() }
    return waiters.map(\.waiter)
  }
}

/// What the consumer of a ``Flow`` body takes in one step: the buffered elements, and the waiting
/// emitters its demand let go (resumed by the consumer once it has the batch, after the lock).
@usableFromInline
struct EmitterBatch<Element: Sendable, Waiter: LogicWaiter>: Sendable {
  @usableFromInline var elements: [Element]
  @usableFromInline var released: [Waiter]

  @inlinable
  init(elements: [Element], released: [Waiter]) {
    self.elements = elements
    self.released = released
  }
}
