import Synchronization

/// The consumer's end of one combining iteration: it holds the batch it took from the storage and
/// makes the outputs out of any lock, so that the element an output replaces is released here.
/// Releasing it (a consumer that leaves its loop) cancels the inputs.
@usableFromInline
final class CombiningConsumer<Values: CombiningValues, Failure: Error> {
  @usableFromInline let storage: CombiningStorage<Values, Failure>
  /// The batch being made into outputs, and every slot's latest element.
  @usableFromInline var values: Values
  /// combineLatest: the slots of the batch's elements, in the order they arrived.
  @usableFromInline var order = RingBuffer<Int>()
  /// zip and withLatestFrom: the outputs the batch still makes.
  @usableFromInline var rows = 0
  /// combineLatest: the batch's first output takes the first element of every slot.
  @usableFromInline var first = false

  @inlinable init(_ storage: CombiningStorage<Values, Failure>) {
    self.storage = storage
    self.values = Values(count: storage.inputs.count)
  }

  deinit {
    storage.cancel()
  }

  @inlinable var holdsOutputs: Bool { rows > 0 || first || !order.isEmpty }

  @inlinable func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Values.Output? {
    // A cancelled consumer, or an input's failure, ends the result before the rest of the batch.
    if holdsOutputs, !Task.isCancelled, !storage.failed.load(ordering: .acquiring) { return makeOutput() }
    if holdsOutputs {
      // What the batch still held is released here, out of the lock.
      values = Values(count: storage.inputs.count)
      (rows, first) = (0, false)
      order = RingBuffer()
    }
    // withLatestFrom shares the other's latest with each batch: this one goes here, not under the lock.
    if storage.mode == .withLatestFrom { values.clearLatest(1) }
    guard let batch = try await storage.next(into: &values, isolation: actor) else { return nil }
    switch batch {
    case .rows(let count), .base(let count):
      rows = count
    case .arrivals(let arrivals, let isFirst):
      order = arrivals
      first = isFirst
      if isFirst {
        // The first output takes the first arrival of each slot out of the order.
        var taken = Array(repeating: false, count: storage.inputs.count)
        var rest = RingBuffer<Int>()
        while let slot = order.popFirst() {
          if taken[slot] { rest.append(slot) } else { taken[slot] = true }
        }
        order = rest
      }
    }
    return makeOutput()
  }

  @inlinable func makeOutput() -> Values.Output {
    switch storage.mode {
    case .zip:
      rows -= 1
      return values.row()
    case .withLatestFrom:
      rows -= 1
      values.promote(0)
      return values.output()
    case .combineLatest:
      if first {
        first = false
        for slot in 0..<storage.inputs.count { values.promote(slot) }
      } else {
        values.promote(order.popFirst()!)
      }
      return values.output()
    }
  }
}
