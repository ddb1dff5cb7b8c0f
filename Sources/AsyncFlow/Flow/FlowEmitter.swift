/// Hands the elements of a ``Flow`` body to the flow's consumer.
///
/// ```swift
/// let numbers = Flow<Int, Never> { emitter in
///   await emitter.emit(1)
///   await emitter.emit(2)
/// }
/// ```
public struct FlowEmitter<Element: Sendable>: Sendable {
  let sink: any EmitterSink<Element>

  /// Delivers `value` to the consumer.
  ///
  /// Suspends only while the flow's `bufferSize` elements are already waiting for the consumer.
  /// Once the consumer has stopped iterating, or the body's task is cancelled, `emit` returns at
  /// once and the value is dropped: check `Task.isCancelled` to stop producing.
  ///
  /// ```swift
  /// for line in lines {
  ///   await emitter.emit(line)
  ///   if Task.isCancelled { return }
  /// }
  /// ```
  public func emit(_ value: Element) async {
    await sink.emit(value)
  }
}

/// What a ``FlowEmitter`` delivers to; erases the flow's `Failure`, which the emitter does not know.
protocol EmitterSink<Element>: AnyObject, Sendable {
  associatedtype Element: Sendable
  func emit(_ value: Element) async
}
