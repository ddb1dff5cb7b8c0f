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
  /// The parked callers, as the calls of a stub that answers a cancelled call at once: the clock
  /// accounts for each released caller until it is back (see ``TestExecutor/beginTransit()``),
  /// and the barriers and issues are the stub's, in a gate's words.
  private let callers = ControlledCalls<Int, Void>(gateReleasing: ())

  /// Creates a gate with nobody parked.
  ///
  /// ```swift
  /// let responseGate = Gate()
  /// ```
  public init() {}

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
  public func wait(isolation: isolated (any Actor)? = #isolation) async { await callers.call(0, isolation: isolation) }

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
    await callers.parked(count: count, fileID: fileID, filePath: filePath, line: line, column: column)
  }

  /// The number of callers parked in ``wait(isolation:)`` right now.
  ///
  /// ```swift
  /// #expect(gate.parkedCount == 0)
  /// ```
  public var parkedCount: Int { callers.waitingCalls.count }

  /// Resumes every caller parked in ``wait(isolation:)``; later callers park until the next release.
  ///
  /// ```swift
  /// await gate.entered()
  /// gate.release()
  /// ```
  public func release() { for caller in callers.waitingCalls { _ = callers.answer(caller.index, with: ()) } }

  /// Makes `executor` the gate's clock if it has none yet, as a registered stub's.
  func adopt(_ executor: TestExecutor) { callers.adopt(executor) }
}
