extension Optional where Wrapped: AsyncIteratorProtocol {
  /// Pulls the held iterator, and lets go of it once it has finished or thrown, so that it is
  /// never asked again (an iterator need not behave well after its end). `nil` once let go.
  mutating func nextOrRelease(isolation actor: isolated (any Actor)?) async throws(Wrapped.Failure) -> Wrapped.Element?
  {
    guard var iterator = self else { return nil }
    self = nil
    let element = try await iterator.next(isolation: actor)
    if element != nil { self = iterator }
    return element
  }

  /// ``nextOrRelease(isolation:)``, unless the consumer's task is cancelled: then the held iterator is
  /// ended (``endCancelled(isolation:)``) and the answer is `nil`, so nothing is delivered after
  /// cancellation even by a base that ignores it.
  mutating func nextUnlessCancelled(
    isolation actor: isolated (any Actor)?
  ) async throws(Wrapped.Failure) -> Wrapped.Element? {
    guard !Task.isCancelled else {
      await endCancelled(isolation: actor)
      return nil
    }
    return try await nextOrRelease(isolation: actor)
  }

  /// Ends the held iterator for a cancelled consumer and lets go of it: one last pull, so that an
  /// iterator running work (a `Flow` body, an operator's tasks) has ended it before the consumer's
  /// `next()` returns `nil`; releasing it instead would only cancel that work, not wait for it.
  /// What the pull gives is dropped: nothing is delivered after cancellation.
  mutating func endCancelled(isolation actor: isolated (any Actor)?) async {
    guard var iterator = self else { return }
    self = nil
    _ = try? await iterator.next(isolation: actor)
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
