/// One inner sequence's hand-off to the consumer of a flattening operator: a
/// ``FlattenInnerStateMachine`` behind a lock of its own, so that an inner offering an element
/// contends only with the consumer taking it, never with the other inners. The inner touches the
/// operator's shared state only when it goes from nothing to offer to something (to be listed as
/// ready) and when it ends.
///
/// Only ``FlattenStorage`` takes this lock, never while it holds the operator's shared lock, nor
/// the reverse.
@usableFromInline
final class FlattenInnerChannel<Element: Sendable, Failure: Error>: Sendable {
  @usableFromInline
  typealias Machine = FlattenInnerStateMachine<Element, UnsafeContinuation<Bool, Never>>

  /// How many elements an inner may hold that the consumer has not taken yet.
  @inlinable static var bufferLimit: Int { 64 }

  @usableFromInline let id: Int
  @usableFromInline let state: LockedState<Machine>

  @inlinable init(id: Int) {
    self.id = id
    self.state = LockedState(Machine(bufferLimit: Self.bufferLimit))
  }
}

/// The hand-off of one inner sequence: the elements its task offered that the consumer has not
/// taken, and the task itself when it waits for room.
///
/// Generic over the waiting task's continuation (`Producer`) so that it can be tested with plain
/// tokens. It never locks or resumes anything: ``FlattenStorage`` does, after it returns.
///
/// The buffer is a stored property beside the state rather than a payload of it: looking at an
/// enum copies its payload, and a payload array copied on every offer was then copied again on
/// append (measured on `mergeFlow`'s hand-off). It holds elements only while `open` or `closed`.
/// It is a ``RingBuffer``: a `switchToLatestFlow` consumer takes one element at a time from the
/// front, which on an `Array` moved every remaining element each time.
@usableFromInline
struct FlattenInnerStateMachine<Element, Producer> {
  @usableFromInline
  enum State {
    /// The inner's task runs and offers elements. `isListed`: listed in the operator's ready
    /// queue, so the consumer will look here (no need to list it again). `producer`: the inner's
    /// task, waiting for room (`true`) or for being dropped (`false`).
    case open(isListed: Bool, producer: Producer?)
    /// The inner's sequence ended; its last elements wait for the consumer (listed as ready).
    case closed
    /// Superseded, retired, or the operator is ending: nothing more is taken from it, and the
    /// buffer is empty.
    case dropped
  }

  @usableFromInline let bufferLimit: Int
  @usableFromInline var pending = RingBuffer<Element>()
  @usableFromInline var state = State.open(isListed: false, producer: nil)

  @inlinable init(bufferLimit: Int) {
    self.bufferLimit = bufferLimit
  }

  // MARK: The inner's task

  @usableFromInline
  enum OfferAction: Equatable {
    /// Taken; if `needsListing`, the inner must be listed as ready (and the consumer woken).
    case accepted(needsListing: Bool)
    /// The inner holds `bufferLimit` elements: wait for room, then offer again.
    case full
    /// Superseded, or the operator is ending: stop.
    case dropped
  }

  @inlinable mutating func offer(_ element: Element) -> OfferAction {
    switch state {
    case .open(let isListed, let producer):
      guard pending.count < bufferLimit else { return .full }
      pending.append(element)
      if !isListed { state = .open(isListed: true, producer: producer) }
      return .accepted(needsListing: !isListed)
    case .dropped:
      return .dropped
    case .closed:
      preconditionFailure("Internal inconsistency: state \(state), event offer")
    }
  }

  /// A full inner waits for room; returns the answer at once (`true`: offer again, `false`: stop)
  /// if it need not wait.
  @inlinable mutating func waitForRoom(_ producer: Producer) -> Bool? {
    switch state {
    case .open(let isListed, let waiting):
      guard pending.count >= bufferLimit else { return true }
      precondition(waiting == nil, "Internal inconsistency: state open with a producer waiting, event waitForRoom")
      state = .open(isListed: isListed, producer: producer)
      return nil
    case .dropped:
      return false
    case .closed:
      preconditionFailure("Internal inconsistency: state \(state), event waitForRoom")
    }
  }

  @usableFromInline
  enum EndAction: Equatable {
    /// Dropped already: the end, failure included, is stale.
    case stale
    /// Nothing left to take: the inner retires now (and is dropped).
    case retire
    /// Elements are still waiting: the consumer retires the inner after the last one, and the
    /// inner must be listed as ready if `needsListing`.
    case retireWhenDrained(needsListing: Bool)
  }

  /// The inner sequence ended (its task reports it; it is not waiting for room, then).
  @inlinable mutating func end() -> EndAction {
    switch state {
    case .open(let isListed, let producer):
      precondition(producer == nil, "Internal inconsistency: state open with a producer waiting, event end")
      if pending.isEmpty {
        state = .dropped
        return .retire
      }
      state = .closed
      return .retireWhenDrained(needsListing: !isListed)
    case .dropped:
      return .stale
    case .closed:
      preconditionFailure("Internal inconsistency: state \(state), event end")
    }
  }

  // MARK: The consumer

  @usableFromInline
  struct Taken {
    /// The inner's task, to resume with `true`: half its room is free again.
    @usableFromInline var producer: Producer?
    /// Nothing is left to take: the inner leaves the ready queue.
    @usableFromInline var isDrained: Bool
    /// The inner had ended and its last element is taken: it retires (and is dropped).
    @usableFromInline var retires: Bool

    @inlinable init(producer: Producer? = nil, isDrained: Bool, retires: Bool = false) {
      self.producer = producer
      self.isDrained = isDrained
      self.retires = retires
    }
  }

  /// Appends the oldest pending element (or all of them, if `all`) to `elements`.
  @inlinable mutating func take(all: Bool, into elements: inout [Element]) -> Taken {
    switch state {
    case .open(let isListed, var producer):
      takePending(all: all, into: &elements)
      var taken = Taken(isDrained: pending.isEmpty)
      // Waking a full inner only once half its room is free keeps a busy inner and consumer from
      // trading a suspension per element.
      if pending.count <= bufferLimit / 2 { taken.producer = producer.take() }
      state = .open(isListed: isListed && !taken.isDrained, producer: producer)
      return taken
    case .closed:
      takePending(all: all, into: &elements)
      guard pending.isEmpty else { return Taken(isDrained: false) }
      state = .dropped
      return Taken(isDrained: true, retires: true)
    case .dropped:
      // Superseded or retired while listed as ready: nothing to take.
      return Taken(isDrained: true)
    }
  }

  @inlinable mutating func takePending(all: Bool, into elements: inout [Element]) {
    if all {
      elements.reserveCapacity(elements.count + pending.count)
      while let element = pending.popFirst() { elements.append(element) }
    } else if let element = pending.popFirst() {
      elements.append(element)
    }
  }

  @usableFromInline
  struct Dropped {
    /// The inner's task if it waits for room, to resume with `false`.
    @usableFromInline var producer: Producer?
    /// What it held, discarded: the caller releases it once it has let go of its locks, since an
    /// element's `deinit` may call back into the operator (cancel it, release its iterator).
    @usableFromInline var discarded: RingBuffer<Element>

    @inlinable init(producer: Producer?, discarded: RingBuffer<Element>) {
      self.producer = producer
      self.discarded = discarded
    }
  }

  /// Superseded, retired, or the operator is ending: what it holds is discarded (handed out, not
  /// released here) and nothing more is taken. Dropping twice is harmless: an inner may retire on
  /// its own between the decision to drop it and the drop.
  @inlinable mutating func drop() -> Dropped {
    var discarded = RingBuffer<Element>()
    swap(&discarded, &pending)
    switch state {
    case .open(_, let producer):
      state = .dropped
      return Dropped(producer: producer, discarded: discarded)
    case .closed, .dropped:
      state = .dropped
      return Dropped(producer: nil, discarded: discarded)
    }
  }
}
