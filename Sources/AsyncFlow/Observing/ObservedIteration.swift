/// What one iteration reports, in order: `started` once, at the first request; then `element`
/// per element; then at most one of `finished`, `failed` and `cancelled`. Once the consumer's task
/// is cancelled, however the base then ends, the end is `cancelled`.
protocol IterationObserver {
  associatedtype Element
  associatedtype Failure: Error

  func started()
  func element(_ element: Element)
  func finished()
  func failed(_ failure: Failure)
  func cancelled()
}

/// One observed iteration of a base sequence. A class, so that releasing the iterator before its
/// end reports `cancelled`, as cancelling the consumer's task does.
final class ObservedIteration<Base: AsyncIteratorProtocol, Observer: IterationObserver>
where Observer.Element == Base.Element, Observer.Failure == Base.Failure {
  private enum Phase {
    case idle
    case running
    case ended
  }

  private var base: Base?
  private var phase = Phase.idle
  private let makeObserver: () -> Observer
  private var observer: Observer?

  init(base: Base, makeObserver: @escaping () -> Observer) {
    self.base = base
    self.makeObserver = makeObserver
  }

  deinit {
    if case .running = phase { observer?.cancelled() }
  }

  func next(isolation actor: isolated (any Actor)?) async throws(Base.Failure) -> Base.Element? {
    let observer: Observer
    switch phase {
    case .ended:
      return nil
    case .idle:
      observer = makeObserver()
      self.observer = observer
      phase = .running
      observer.started()
    case .running:
      observer = self.observer!
    }
    do throws(Base.Failure) {
      if Task.isCancelled {
        await base.end(isolation: actor)
      } else if let element = try await base.nextOrRelease(isolation: actor) {
        observer.element(element)
        return element
      }
      phase = .ended
      base = nil
      // A base that ends because its consumer was cancelled has not finished: it was cancelled.
      if Task.isCancelled { observer.cancelled() } else { observer.finished() }
      return nil
    } catch {
      phase = .ended
      // A failure once the consumer was cancelled is most often the cancellation itself (a
      // request that throws when cancelled): it is reported as what it is.
      if Task.isCancelled { observer.cancelled() } else { observer.failed(error) }
      throw error
    }
  }

  /// Ends the base of an iteration still running (an element came once the consumer's task was
  /// cancelled): that is a cancellation. An iteration already ended reported its end.
  func end(isolation actor: isolated (any Actor)?) async {
    guard case .running = phase else { return }
    phase = .ended
    await base.end(isolation: actor)
    observer?.cancelled()
  }
}
