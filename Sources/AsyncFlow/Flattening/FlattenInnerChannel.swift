/// One inner sequence's hand-off to the consumer of a flattening operator, behind a lock of its
/// own: an inner offering an element contends only with the consumer taking it, never with the
/// other inners, and touches the operator's shared state only when it goes from nothing to offer
/// to something (to be listed as ready) and when it ends.
///
/// Lock order: the operator's shared lock may be held while this one is taken, never the reverse.
@usableFromInline
final class FlattenInnerChannel<Element: Sendable, Failure: Error>: Sendable {
  @usableFromInline
  typealias Producer = UnsafeContinuation<Bool, Never>

  @usableFromInline
  struct State {
    @usableFromInline var pending: [Element] = []
    /// Listed in the operator's ready queue, so the consumer will look here: no need to list it again.
    @usableFromInline var isQueued = false
    /// Superseded, retired, or the operator is ending: nothing more is taken from it.
    @usableFromInline var isDropped = false
    /// The inner's task, waiting for room (`true`) or for being dropped (`false`).
    @usableFromInline var producer: Producer?
    /// The inner sequence ended (with `failure`, if any); it retires once its elements are taken.
    @usableFromInline var hasEnded = false
    @usableFromInline var failure: Failure?

    @inlinable init() {}
  }

  /// How many elements an inner may hold that the consumer has not taken yet.
  @inlinable static var bufferLimit: Int { 64 }

  @usableFromInline let id: Int
  @usableFromInline let state = LockedState(State())

  @inlinable init(id: Int) {
    self.id = id
  }

  // MARK: The inner's task

  @usableFromInline
  enum OfferResult {
    /// Taken; if `needsListing`, the channel must be listed as ready (and the consumer woken).
    case accepted(needsListing: Bool)
    /// The inner holds ``bufferLimit`` elements: wait for room, then offer again.
    case full
    /// Superseded, or the operator is ending: stop.
    case dropped
  }

  @inlinable func offer(_ element: Element) -> OfferResult {
    state.withLock { state in
      if state.isDropped { return .dropped }
      guard state.pending.count < Self.bufferLimit else { return .full }
      state.pending.append(element)
      defer { state.isQueued = true }
      return .accepted(needsListing: !state.isQueued)
    }
  }

  /// A full inner waits for room; returns the answer at once (`true`: offer again, `false`: stop)
  /// if it need not wait.
  @inlinable func waitForRoom(_ producer: Producer) -> Bool? {
    state.withLock { state in
      if state.isDropped { return false }
      guard state.pending.count >= Self.bufferLimit else { return true }
      state.producer = producer
      return nil
    }
  }

  @usableFromInline
  enum EndResult {
    /// Dropped already: the end, failure included, is stale.
    case stale
    /// Nothing left to take: the inner retires now (the channel is dropped with it).
    case retire
    /// Elements are still waiting: the consumer retires the inner after the last one, and the
    /// channel must be listed as ready if `needsListing`.
    case retireWhenDrained(needsListing: Bool)
  }

  /// The inner sequence ended; called under the operator's shared lock.
  @inlinable func end(failure: Failure?) -> EndResult {
    state.withLock { state in
      if state.isDropped { return .stale }
      if state.pending.isEmpty {
        state.isDropped = true
        return .retire
      }
      state.hasEnded = true
      state.failure = failure
      defer { state.isQueued = true }
      return .retireWhenDrained(needsListing: !state.isQueued)
    }
  }

  // MARK: The consumer (under the operator's shared lock)

  @usableFromInline
  struct Taken {
    /// The inner's task, to resume with `true`: half its room is free again.
    @usableFromInline var producer: Producer?
    /// Nothing is left to take: the channel leaves the ready queue.
    @usableFromInline var isDrained: Bool
    /// The inner had ended and its last element is taken: it retires, with its failure if any.
    @usableFromInline var retires: Bool
    @usableFromInline var failure: Failure?

    @inlinable init(producer: Producer? = nil, isDrained: Bool, retires: Bool, failure: Failure? = nil) {
      self.producer = producer
      self.isDrained = isDrained
      self.retires = retires
      self.failure = failure
    }
  }

  /// Appends the oldest pending element (or all of them, if `all`) to `elements`.
  @inlinable func take(all: Bool, into elements: inout [Element]) -> Taken {
    state.withLock { state in
      if state.isDropped { return Taken(isDrained: true, retires: false) }
      if all || state.pending.count == 1 {
        elements.append(contentsOf: state.pending)
        state.pending.removeAll(keepingCapacity: true)
      } else if !state.pending.isEmpty {
        elements.append(state.pending.removeFirst())
      }
      var taken = Taken(isDrained: state.pending.isEmpty, retires: false)
      // Waking a full inner only once half its room is free keeps a busy inner and consumer from
      // trading a suspension per element.
      if state.pending.count <= Self.bufferLimit / 2 { taken.producer = state.producer.take() }
      if taken.isDrained {
        state.isQueued = false
        if state.hasEnded {
          state.isDropped = true
          taken.retires = true
          taken.failure = state.failure
        }
      }
      return taken
    }
  }

  /// Superseded, or the operator is ending: what it holds is discarded and nothing more is taken.
  /// Returns its task if that waits for room (to resume with `false`), and whether the inner had
  /// ended already (so that no task will report its end).
  @inlinable func drop() -> (producer: Producer?, hadEnded: Bool) {
    state.withLock { state in
      state.isDropped = true
      state.pending = []
      return (state.producer.take(), state.hasEnded)
    }
  }
}
