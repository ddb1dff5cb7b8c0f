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
  OperatorStorage<EmitterLogic<Element, Failure, UnsafeContinuation<Void, Never>>, TimelessClock>

/// The batches of one ``Flow`` body iteration, which its consumer (a ``BatchConsumer``) serves:
/// what the life cycle's consumer hands over, the waiting emitters a batch let go resumed once its
/// elements are out. A batch with no element only let emitters go.
@usableFromInline
final class EmitterBatches<Element: Sendable, Failure: Error>: BatchSource {
  @usableFromInline let consumer: OperatorConsumer<EmitterBatch<Element, UnsafeContinuation<Void, Never>>, Failure>

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

  @inlinable
  func nextBatch(isolation actor: isolated (any Actor)?) async throws(Failure) -> [Element]? {
    while let next = try await consumer.next(isolation: actor) {
      for waiter in next.released { waiter.resume() }
      if !next.elements.isEmpty { return next.elements }
    }
    return nil
  }

  @inlinable
  func cancel() {
    consumer.cancel()
  }
}
