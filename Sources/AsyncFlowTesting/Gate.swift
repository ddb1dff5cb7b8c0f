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
    var parked: [Int: UnsafeContinuation<Void, Never>] = [:]
    var nextID = 0
    var watchers = CountWatchers()
    /// Released callers not yet back on their own isolation (see ``WaitSource/returning``).
    var returning = 0
  }

  private let state = LockedState(State())
  /// The clock's executor in effect where the gate was made, if any: where a caller from a task
  /// that lost the clock's task-local (a `Task.detached { }`) moves its wait.
  private let home: TestExecutor?

  /// Creates a gate with nobody parked.
  ///
  /// ```swift
  /// let responseGate = Gate()
  /// ```
  public init() {
    home = FlowScheduling.executor as? TestExecutor
    home?.watch(self)
  }

  /// Parks the caller until the next ``release()``. A cancelled caller leaves at once, so a
  /// cancelled task never hangs on a gate.
  ///
  /// On a test clock's schedule, a caller from a task that does not run on the clock (a `Task { }`
  /// of the code under test's own, not on the main actor) moves its wait onto the clock and records
  /// a test issue: the clock cannot wait for what that task does once released.
  ///
  /// ```swift
  /// let fetch: @Sendable (String) async -> [String] = { query in
  ///   await gate.wait()
  ///   return [query]
  /// }
  /// ```
  public func wait(isolation: isolated (any Actor)? = #isolation) async {
    if let executor = OffClock.executor(home: home) {
      executor.watch(self)
      if OffClock.isOff(executor, isolation: isolation) {
        OffClock.report("Gate.wait()")
        // Nonisolated, under the clock's preference: the wake-up runs on the clock's executor.
        return await withTaskExecutorPreference(executor) { await self.park(isolation: nil) }
      }
    }
    await park(isolation: isolation)
  }

  private func park(isolation: isolated (any Actor)?) async {
    let id = state.withLock { state in
      defer { state.nextID += 1 }
      return state.nextID
    }
    await withTaskCancellationHandler {
      await withUnsafeContinuation(isolation: isolation) { (continuation: UnsafeContinuation<Void, Never>) in
        let (resumeNow, watchers) = state.withLock { state -> (Bool, [UnsafeContinuation<Void, Never>]) in
          if Task.isCancelled {
            state.returning += 1
            return (true, [])
          }
          state.parked[id] = continuation
          return (false, state.watchers.reached(state.parked.count))
        }
        for watcher in watchers { watcher.resume() }
        if resumeNow { continuation.resume() }
      }
      state.withLock { $0.returning -= 1 }
    } onCancel: {
      state.withLock { state in
        let continuation = state.parked.removeValue(forKey: id)
        if continuation != nil { state.returning += 1 }
        return continuation
      }?.resume()
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
    guard let executor = OffClock.executor(home: home) else { return await wait() }
    executor.watch(self)
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
      state.returning += state.parked.count
      return Array(state.parked.values)
    }
    for continuation in parked { continuation.resume() }
  }
}

extension Gate: WaitSource {
  var returning: Int { state.withLock { $0.returning } }

  func describeWaits() -> [String] {
    let parked = parkedCount
    return parked == 0 ? [] : ["Gate: \(parked) caller\(parked == 1 ? "" : "s") parked in wait(), until release()"]
  }
}
