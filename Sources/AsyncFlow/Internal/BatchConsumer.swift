/// What hands its consumer the outputs in batches: everything ready, taken under one lock.
@usableFromInline
protocol BatchSource: AnyObject {
  associatedtype Batch
  associatedtype Failure: Error
  /// The next batch, never empty; `nil` at the end.
  func nextBatch(isolation actor: isolated (any Actor)?) async throws(Failure) -> Batch?
  /// The consumer's task was cancelled or it left.
  func cancel()
}

/// The consumer's end of an operator that hands over batches (`Flow.merge`, a `Flow` body,
/// `mergeFlow` and the rest of the flattening family): it serves the current batch without
/// locking. Releasing it ends the iteration as a cancellation does.
///
/// A used-up batch goes before the consumer waits for the next one, not when that one arrives:
/// kept while the inputs were quiet, it held the elements the consumer was done with, so a
/// `deinit` meant to run once the consumer let go of its element (a subscription's clean-up, one
/// that cancels the consumer) ran late, or never. It goes outside every lock and outside the
/// access to ``batch``: that `deinit` may call back in.
@usableFromInline
final class BatchConsumer<Source: BatchSource, Element> where Source.Batch == [Element] {
  @usableFromInline let source: Source
  @usableFromInline var batch: [Element] = []
  @usableFromInline var position = 0

  @inlinable init(_ source: Source) {
    self.source = source
  }

  deinit {
    source.cancel()
  }

  /// The next element of the current batch, without asking the source: for a consumer that checks
  /// its cancellation itself (`Flow.Iterator`, once per element, after its fused stages ran).
  @inlinable func takeBuffered() -> Element? {
    guard position < batch.count else { return nil }
    defer { position += 1 }
    return batch[position]
  }

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Source.Failure) -> Element? {
    // A cancelled consumer gets nothing more from its batch: it goes to the source, and ends.
    if !Task.isCancelled, let element = takeBuffered() { return element }
    releaseBatch()
    // After the release: an element's `deinit` may have cancelled this task just now.
    if Task.isCancelled { source.cancel() }
    guard let next = try await source.nextBatch(isolation: actor) else { return nil }
    batch = next
    position = 1
    return next[0]
  }

  @inlinable func releaseBatch() {
    guard !batch.isEmpty else { return }
    var used: [Element] = []
    swap(&used, &batch)
    position = 0
    withExtendedLifetime(used) {}  // released here
  }
}
