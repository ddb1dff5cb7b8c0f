import AsyncFlow

/// A suspension seam for tests: code under test parks in ``wait(isolation:)``, the test waits until it is
/// parked with ``entered(count:fileID:filePath:line:column:)``, inspects the state, then lets it go with ``release()``.
///
/// Forcing an order this way replaces sleeps: the test knows that the code reached the seam.
///
/// ```swift
/// let gate = Gate()
/// let search: @Sendable (String) async -> [String] = { query in await gate.wait(); return [query] }
/// let request = Task { await search("swift") }
/// await gate.entered()          // the request is in flight: check what the screen shows meanwhile
/// gate.release()
/// #expect(await request.value == ["swift"])
/// ```
public final class Gate: Sendable {
  private struct State {
    /// Each with the clock that accounts for it once released (see ``TestExecutor/beginTransit()``).
    var parked: [Int: (continuation: UnsafeContinuation<Void, Never>, clock: TestExecutor?)] = [:]
    var nextID = 0
    var watchers = CountWatchers()
    /// The clock's executor in effect where the gate was made or registered, if any: the clock of
    /// a caller from a task that lost the clock's task-local (a `Task.detached { }`).
    var home: TestExecutor?
  }

  private let state = LockedState(State())

  /// Creates a gate with nobody parked.
  ///
  /// ```swift
  /// let responseGate = Gate()
  /// ```
  public init() {
    if let executor = FlowScheduling.executor as? TestExecutor { adopt(executor) }
  }

  /// Parks the caller until the next ``release()``. A cancelled caller leaves at once, so a
  /// cancelled task never hangs on a gate.
  ///
  /// On a test clock's schedule, the clock waits for a released caller until it is back on its own
  /// isolation. A caller from a task that does not run on the clock (a `Task { }` of the code under
  /// test's own, not on the main actor) records a test issue: the clock cannot wait for what that
  /// task does once released.
  ///
  /// ```swift
  /// let fetch: @Sendable (String) async -> [String] = { query in
  ///   await gate.wait()
  ///   return [query]
  /// }
  /// ```
  public func wait(isolation: isolated (any Actor)? = #isolation) async {
    let clock = TestExecutor.current(home: state.withLock { $0.home }, for: self, isolation: isolation) {
      "Gate.wait()"
    }
    let id = state.withLock { state in
      defer { state.nextID += 1 }
      return state.nextID
    }
    await withTaskCancellationHandler {
      await withUnsafeContinuation(isolation: isolation) { (continuation: UnsafeContinuation<Void, Never>) in
        let (resumeNow, watchers) = state.withLock { state -> (Bool, [UnsafeContinuation<Void, Never>]) in
          if Task.isCancelled { return (true, []) }
          state.parked[id] = (continuation, clock)
          return (false, state.watchers.reached(state.parked.count))
        }
        for watcher in watchers { watcher.resume() }
        if resumeNow {
          clock?.beginTransit()
          continuation.resume()
        }
      }
      clock?.endTransit()
    } onCancel: {
      if let parked = state.withLock({ $0.parked.removeValue(forKey: id) }) {
        parked.clock?.beginTransit()
        parked.continuation.resume()
      }
    }
  }

  /// Suspends until at least `count` callers are parked in ``wait(isolation:)``.
  ///
  /// On a test clock's schedule the clock runs meanwhile, and when it is idle with fewer callers
  /// parked, nothing it can see will bring more: this records an issue naming what is parked and
  /// returns, in milliseconds. Off a clock it waits until they come or the waiting task is
  /// cancelled (a `.timeLimit` then ends the test instead of hanging it).
  ///
  /// ```swift
  /// let first = Task { await fetch("a") }
  /// let second = Task { await fetch("b") }
  /// await gate.entered(count: 2)   // both requests are in flight
  /// ```
  public func entered(
    count: Int = 1, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column
  ) async {
    precondition(count >= 0, "Gate.entered(count:): count must be 0 or greater, got \(count)")
    let wait: @Sendable () async -> Void = {
      await self.state.waitUntil(count: count, of: { $0.parked.count }, watchers: \.watchers)
    }
    guard let executor = TestExecutor.current(home: state.withLock({ $0.home }), for: self) else { return await wait() }
    await executor.barrier(
      {
        let parked = self.parkedCount
        return "Gate.entered(count: \(count)): \(parked) caller\(parked == 1 ? "" : "s") parked"
      }, isMet: { self.parkedCount >= count }, wait: wait,
      at: SourceCaller(fileID: fileID, filePath: filePath, line: line, column: column))
  }

  /// The number of callers parked in ``wait(isolation:)`` right now.
  ///
  /// ```swift
  /// #expect(gate.parkedCount == 0)
  /// ```
  public var parkedCount: Int {
    state.withLock { $0.parked.count }
  }

  /// Resumes every caller parked in ``wait(isolation:)``; later callers park until the next release.
  ///
  /// ```swift
  /// await gate.entered()
  /// gate.release()
  /// ```
  public func release() {
    let parked = state.withLock { state in
      defer { state.parked.removeAll() }
      return Array(state.parked.values)
    }
    for (continuation, clock) in parked {
      clock?.beginTransit()
      continuation.resume()
    }
  }
}

extension Gate: WaitSource {
  func adopt(_ executor: TestExecutor) {
    state.withLock { $0.home = $0.home ?? executor }
    executor.watch(self)
  }

  func describeWaits() -> [String] {
    let parked = parkedCount
    return parked == 0 ? [] : ["Gate: \(parked) caller\(parked == 1 ? "" : "s") parked in wait(), until release()"]
  }
}
