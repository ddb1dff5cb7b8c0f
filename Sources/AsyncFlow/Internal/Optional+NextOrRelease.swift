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
}
