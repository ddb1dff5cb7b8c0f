import AsyncFlow

/// A stub for a remote call that answers only when the test says so, in the order the test
/// chooses: the way to force "sent A, B, C; returned C, A, B" without a single sleep. Like a real
/// request that was already sent, a call ignores cancellation and returns what the test answers.
public final class ControlledCalls<Request: Hashable & Sendable, Response: Sendable>: Sendable {
  private struct State {
    var waiting: [Request: [UnsafeContinuation<Response, Never>]] = [:]
    var requests: [Request] = []
    var watchers = CountWatchers()
  }

  private let state = LockedState(State())

  public init() {}

  /// Called by the stub: records `request` and waits for the test's answer.
  public func call(_ request: Request) async -> Response {
    await withUnsafeContinuation { continuation in
      let satisfied = state.withLock { state -> [UnsafeContinuation<Void, Never>] in
        state.requests.append(request)
        state.waiting[request, default: []].append(continuation)
        return state.watchers.reached(state.requests.count)
      }
      for watcher in satisfied { watcher.resume() }
    }
  }

  /// Every request made so far, in order.
  public var requests: [Request] { state.withLock { $0.requests } }

  /// Suspends until at least `count` requests have been made, or until the caller is cancelled.
  public func waitForRequests(_ count: Int) async {
    await state.waitUntil(count: count, of: { $0.requests.count }, watchers: \.watchers)
  }

  /// Answers the oldest waiting call for `request`.
  public func respond(to request: Request, with response: Response) {
    let continuation = state.withLock { state -> UnsafeContinuation<Response, Never>? in
      guard var waiting = state.waiting[request], !waiting.isEmpty else { return nil }
      let first = waiting.removeFirst()
      state.waiting[request] = waiting.isEmpty ? nil : waiting
      return first
    }
    precondition(continuation != nil, "ControlledCalls.respond(to:with:): no call is waiting for \(request)")
    continuation?.resume(returning: response)
  }
}
