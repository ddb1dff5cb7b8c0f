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
  @usableFromInline let offer: @Sendable (Element) -> Bool
  @usableFromInline let waitForRoom: @Sendable () async -> Void

  @inlinable init(offer: @escaping @Sendable (Element) -> Bool, waitForRoom: @escaping @Sendable () async -> Void) {
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
    if offer(value) { return }
    await waitForRoom()
  }
}
