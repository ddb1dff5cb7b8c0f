/// An upstream's iterator, made where the consumer makes its own (its `makeAsyncIterator()`) and
/// taken, once, by the task that pulls it.
///
/// So a hot upstream (a subject's iterator subscribes when it is made) has its subscriber as soon
/// as the operator's iterator exists, not only once the operator's task first runs: a value sent
/// right after a `sink` returns reaches it, through every operator between them. An iterator that
/// is never pulled goes with the last reference to this hand-off (its consumer's), so a subject
/// subscriber made for nothing unsubscribes, and no task was started for it.
///
/// Unchecked: the iterator is touched by one party at a time. The consumer makes it before the
/// task exists and never touches it again; the task, started by the consumer's first `next()`
/// (which orders the two), takes it out; whoever holds the last reference releases what is left.
@usableFromInline
final class IteratorHandOff<Iterator: AsyncIteratorProtocol>: @unchecked Sendable {
  @usableFromInline var iterator: Iterator?

  @inlinable
  init(_ iterator: Iterator) {
    self.iterator = iterator
  }

  /// The iterator, for the one task that pulls it.
  @inlinable
  func take() -> Iterator {
    guard let iterator = iterator.take() else {
      preconditionFailure("Internal inconsistency: an upstream's iterator taken twice")
    }
    return iterator
  }
}

/// An input's pull of an ``IteratorHandOff``, erased to the storage it pulls into, so that the
/// `@Sendable` input that runs it captures no metatype of the iterator (not `Sendable`). Sound for
/// the reason the hand-off is: the one task that runs it takes the iterator, once.
@usableFromInline
final class ErasedPull<Storage>: @unchecked Sendable {
  @usableFromInline let run: (Storage, Int) async -> Void

  @inlinable
  init(_ run: @escaping (Storage, Int) async -> Void) {
    self.run = run
  }
}
