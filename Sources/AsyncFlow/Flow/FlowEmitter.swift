/// Hands the elements of a ``Flow`` body to the flow's consumer.
///
/// ```swift
/// let numbers = Flow<Int, Never> { emitter in
///   await emitter.emit(1)
///   await emitter.emit(2)
/// }
/// ```
public struct FlowEmitter<Element: Sendable>: Sendable {
  // The flow's hand-off, as closures rather than a protocol existential, so that a client that
  // specializes the flow calls its specialized storage; and split in a synchronous offer and an
  // asynchronous wait, so that an `emit` with room left makes no asynchronous call at all.
  /// Hands the element over; returns a token to wait for room with, or `nil` to go on at once.
  @usableFromInline let offer: @Sendable (Element) -> Int?
  @usableFromInline let waitForRoom: @Sendable (Int) async -> Void

  @inlinable init(offer: @escaping @Sendable (Element) -> Int?, waitForRoom: @escaping @Sendable (Int) async -> Void) {
    self.offer = offer
    self.waitForRoom = waitForRoom
  }

  /// Delivers `value` to the consumer.
  ///
  /// Suspends only while the flow's `bufferSize` elements are already waiting for the consumer.
  /// Once the consumer has stopped iterating, or the body's task is cancelled, `emit` returns at
  /// once and the value is dropped: check `Task.isCancelled` to stop producing. Child tasks of the
  /// body may emit at once; each waiting one resumes when room is free, so with `n` of them the
  /// buffer may hold up to `n - 1` elements more than `bufferSize`.
  ///
  /// ```swift
  /// let lines = ["GET /", "GET /about"]  // a log, read line by line
  /// let requests = Flow<String, Never> { emitter in
  ///   for line in lines {
  ///     await emitter.emit(line)
  ///     if Task.isCancelled { return }
  ///   }
  /// }
  /// ```
  @inlinable
  public func emit(_ value: Element) async {
    if let token = offer(value) { await waitForRoom(token) }
  }
}

/// One iteration of a ``Flow`` body: the body is the single input of the one operator life cycle,
/// whose task runs it; its `emit`s push into an ``EmitterLogic``.
@usableFromInline
typealias EmitterStorage<Element: Sendable, Failure: Error> =
  OperatorStorage<EmitterLogic<Element, Failure, RoomWaiter>, TimelessClock>

/// An `emit` waiting for room, resumed when it is released: whoever takes it out of the logic (a
/// consumer's batch, a cancellation, the body's end, the logic retired with the iteration) lets it
/// go after the lock, and it resumes exactly once, whichever comes first.
@usableFromInline
final class RoomWaiter: Sendable {
  @usableFromInline let continuation: UnsafeContinuation<Void, Never>

  @inlinable
  init(_ continuation: UnsafeContinuation<Void, Never>) {
    self.continuation = continuation
  }

  deinit {
    continuation.resume()
  }
}

/// The consumer's end of one ``Flow`` body iteration. It serves the current batch without locking
/// and, as the life cycle's consumer, ends the iteration when it is released.
@usableFromInline
final class EmitterConsumer<Element: Sendable, Failure: Error> {
  @usableFromInline let consumer: OperatorConsumer<EmitterBatch<Element, RoomWaiter>, Failure>
  @usableFromInline var batch: [Element] = []
  @usableFromInline var position = 0

  @inlinable
  init(bufferSize: Int, body: @escaping @Sendable (FlowEmitter<Element>) async throws(Failure) -> Void) {
    let storage = EmitterStorage<Element, Failure>(logic: EmitterLogic(bufferSize: bufferSize), clock: TimelessClock())
    // The task holds the body, the storage does not.
    consumer = OperatorConsumer(storage) { storage in
      do throws(Failure) {
        try await body(FlowEmitter(offer: storage.offer, waitForRoom: storage.waitForRoom))
        storage.bodyEnded(nil)
      } catch {
        storage.bodyEnded(error)
      }
    }
  }

  /// The next element of the current batch, if the consumer holds one. The consumer's cancellation
  /// is `Flow.Iterator`'s to check, once per element, after the fused stages ran.
  @inlinable
  func takeBuffered() -> Element? {
    guard position < batch.count else { return nil }
    defer { position += 1 }
    return batch[position]
  }

  @inlinable
  func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    // Cancelled: the rest of the batch goes with it, and the pull below ends the body.
    if !Task.isCancelled, let element = takeBuffered() { return element }
    // The used-up batch is released here, before the lock: an element's `deinit` may call back in.
    batch = []
    position = 0
    // An empty batch only let waiting emitters go (as it is released): ask again.
    while let next = try await consumer.next(isolation: actor) {
      guard !next.elements.isEmpty else { continue }
      batch = next.elements
      position = 1
      return batch[0]
    }
    return nil
  }
}
