import AsyncFlow

@testable import AsyncFlow

/// An input for the combining tests that produces exactly what the test sends, when it sends it:
/// its iterator's `next()` returns the oldest sent event, or waits for the next one. One iteration
/// per script. The test can wait until the input has been asked for its n-th element (the previous
/// one was taken), until it saw its cancellation, and until its iterator was released.
final class CombiningScript<Element: Sendable, Failure: Error>: AsyncSequence, Sendable {
  private struct State {
    var queue: [Result<Element?, Failure>] = []
    var waiter: UnsafeContinuation<Result<Element?, Failure>, Never>?
    var pulls = 0
    var pullWatchers = CountWatchers()
  }

  private let state = LockedState(State())
  /// When set, `next()` goes on waiting after its task is cancelled, as a request that cannot be
  /// stopped would; otherwise a cancelled `next()` returns `nil`.
  let ignoresCancellation: Bool
  /// Fired when `next()` saw its task cancelled.
  let sawCancellation = Signal()
  /// Fired when the iterator was released: the input's iteration is over.
  let released = Signal()

  init(ignoresCancellation: Bool = false) {
    self.ignoresCancellation = ignoresCancellation
  }

  func send(_ element: Element) { push(.success(element)) }
  func finish() { push(.success(nil)) }
  func fail(_ failure: Failure) { push(.failure(failure)) }

  private func push(_ event: Result<Element?, Failure>) {
    let waiter = state.withLock { state -> UnsafeContinuation<Result<Element?, Failure>, Never>? in
      guard let waiter = state.waiter.take() else {
        state.queue.append(event)
        return nil
      }
      return waiter
    }
    waiter?.resume(returning: event)
  }

  /// Waits until `next()` has been called `count` times.
  func pulled(count: Int) async {
    await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
      let registered = state.withLock { $0.pullWatchers.register(continuation, until: count, current: $0.pulls) }
      if !registered { continuation.resume() }
    }
  }

  var pullCount: Int { state.withLock { $0.pulls } }

  fileprivate func next() async throws(Failure) -> Element? {
    let watchers = state.withLock { state in
      state.pulls += 1
      return state.pullWatchers.reached(state.pulls)
    }
    for watcher in watchers { watcher.resume() }
    let event = await withTaskCancellationHandler {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Element?, Failure>, Never>) in
        let now = state.withLock { state -> Result<Element?, Failure>? in
          if !state.queue.isEmpty { return state.queue.removeFirst() }
          if Task.isCancelled && !ignoresCancellation { return .success(nil) }
          state.waiter = continuation
          return nil
        }
        if let now { continuation.resume(returning: now) }
      }
    } onCancel: {
      sawCancellation.fire()
      if !ignoresCancellation {
        state.withLock { $0.waiter.take() }?.resume(returning: .success(nil))
      }
    }
    return try event.get()
  }

  func makeAsyncIterator() -> Iterator {
    Iterator(script: self, token: ReleaseToken(released))
  }

  final class ReleaseToken: Sendable {
    let signal: Signal
    init(_ signal: Signal) { self.signal = signal }
    deinit { signal.fire() }
  }

  struct Iterator: AsyncIteratorProtocol {
    let script: CombiningScript
    let token: ReleaseToken

    mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await script.next()
    }

    mutating func next() async throws(Failure) -> Element? {
      try await script.next()
    }
  }
}
