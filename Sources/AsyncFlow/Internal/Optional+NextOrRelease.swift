extension Optional where Wrapped: AsyncIteratorProtocol {
  /// Pulls the held iterator, and lets go of it once it has finished or thrown, so that it is
  /// never asked again (an iterator need not behave well after its end). `nil` once let go.
  ///
  /// An element that arrives once the consumer's task is cancelled (a base that ignores the
  /// cancellation, parked when it came, then returns one more) is dropped, and the base is ended
  /// (``end(isolation:)``): the answer is `nil`, as if the base had finished.
  mutating func nextOrRelease(isolation actor: isolated (any Actor)?) async throws(Wrapped.Failure) -> Wrapped.Element?
  {
    guard var iterator = self else { return nil }
    self = nil
    guard let element = try await iterator.next(isolation: actor) else { return nil }
    self = iterator
    if Task.isCancelled {
      await end(isolation: actor)
      return nil
    }
    return element
  }

  /// ``nextOrRelease(isolation:)``, unless the consumer's task is cancelled: then the held iterator is
  /// ended (``end(isolation:)``) and the answer is `nil`, so that a cancelled consumer starts no pull.
  mutating func nextUnlessCancelled(
    isolation actor: isolated (any Actor)?
  ) async throws(Wrapped.Failure) -> Wrapped.Element? {
    guard !Task.isCancelled else {
      await end(isolation: actor)
      return nil
    }
    return try await nextOrRelease(isolation: actor)
  }

  /// Ends the held iterator and lets go of it: one last pull in a cancelled task (in
  /// place, or ``runInCancelledTask(_:)``), so that an iterator running work (a `Flow` body, an
  /// operator's tasks) has ended it when this returns; releasing it instead would only cancel that
  /// work, not wait for it. What the pull gives is dropped. A plain sequence pulled in the
  /// consumer's task runs nothing between pulls: its pull returns at once (one that ignores
  /// cancellation is waited for, as the flattening operators wait for their inners).
  mutating func end(isolation actor: isolated (any Actor)?) async {
    guard var iterator = self else { return }
    self = nil
    if Task.isCancelled {
      _ = try? await iterator.next(isolation: actor)
      return
    }
    // Erased to a closure, so that the task's closure captures no generic type.
    let pull = HeldForEnd<() async -> Void> { _ = try? await iterator.next(isolation: nil) }
    await runInCancelledTask { await pull.value() }
  }
}

/// Runs `operation` in a task of AsyncFlow's, cancelled from its start, and returns once it has
/// ended: how an upstream pulled in a consumer's task that is not cancelled is ended, when the
/// operator's own closure failed (in a cancelled consumer's task, the pull is made in place). One
/// last pull in a cancelled task ends an upstream's work (a `Flow` body, an operator's tasks).
@usableFromInline
func runInCancelledTask(_ operation: @escaping @Sendable () async -> Void) async {
  await FlowScheduling.startTask {
    withUnsafeCurrentTask { $0?.cancel() }
    await operation()
  }.value
}

/// What a task that ends an upstream holds. Sound: the consumer, its only other user, waits for
/// that task and does not touch it again.
@usableFromInline
final class HeldForEnd<Value>: @unchecked Sendable {
  @usableFromInline var value: Value

  @usableFromInline
  init(_ value: Value) {
    self.value = value
  }
}

extension AsyncIteratorProtocol {
  /// An operator's input task that stops pulling while its input may still be running: it cancels
  /// itself, then pulls once more, so that the input's work (a `Flow` body, an operator's tasks)
  /// has ended when the task ends; dropping the iterator instead would only cancel that work, not
  /// wait for it. What the pull gives is dropped. An input that ignores cancellation is waited
  /// for, as the flattening operators wait for their inners.
  @inlinable
  mutating func stopPulling() async {
    withUnsafeCurrentTask { $0?.cancel() }
    _ = try? await next(isolation: nil)
  }
}
