import AsyncFlow

/// A clock whose time moves only when a test says so, with a deterministic schedule.
///
/// Sleepers fire in deadline order (registration order for equal deadlines). Before each firing,
/// and after the last, the clock waits until every task on its executor has run until it
/// suspends again, so a task woken at 1 s has registered its next sleep before anything at 2 s
/// fires: timed operators behave exactly as on a real clock, in microseconds.
///
/// Nothing moves between two statements of a test; the clock runs while the test awaits. The
/// clock's executor runs its jobs on the actor of the code that made it (the main actor under
/// `.onTestClock`), so a `@MainActor` test body and the clock take turns: no job of the clock runs
/// while a statement of the body does, and any `await` of the body (a clock's wait, a barrier, a
/// task's value, a loop over a flow) lets them run.
///
/// Tasks take part in that schedule when they run on the clock's executor. Mark the test
/// `@Test(.onTestClock)` (or wrap it in ``withTestClock(isolation:_:)``) and read the clock from
/// ``current``: every task AsyncFlow starts in the test (operators, sinks, `TaskSlots`) then runs
/// there, so the code under test is called directly. ``task(_:)`` starts work that the test itself
/// awaits there, and ``onSchedule(isolation:_:)`` puts a piece of code there outside such a scope.
/// Settling also lets the main actor run what those tasks hand over to it, so a `@MainActor` model
/// is up to date when ``runCurrent()`` or `advance` returns. Waking a task that is not on the
/// executor records a test issue: the clock could not wait for it.
///
/// ```swift
/// @Test(.onTestClock) func debouncesTheTerms() async {
///   let clock = TestClock.current
///   let terms = Flow.sequence(["s", "sw", "swift"])
///   let results = clock.task {
///     await terms.debounceFlow(for: .milliseconds(300), clock: clock).reduce(into: []) { $0.append($1) }
///   }
///   await clock.advance(by: .seconds(1))
///   #expect(await clock.value(of: results) == ["swift"])
/// }
/// ```
public final class TestClock: Clock, Sendable {
  /// The standard library's `Duration`, so ``TestClock`` stands in wherever a `Clock<Duration>` is expected.
  ///
  /// ```swift
  /// let step: TestClock.Duration = .milliseconds(300)
  /// ```
  public typealias Duration = Swift.Duration

  /// A point on a ``TestClock``: the time since the clock was made.
  ///
  /// ```swift
  /// let clock = TestClock()
  /// #expect(clock.now == .init(offset: .seconds(3)))
  /// ```
  public struct Instant: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
    /// The time since the clock's start.
    ///
    /// ```swift
    /// #expect(clock.now.offset == .seconds(2))
    /// ```
    public var offset: Duration

    /// An instant `offset` after the clock's start.
    ///
    /// ```swift
    /// let deadline = TestClock.Instant(offset: .seconds(2))
    /// ```
    public init(offset: Duration) { self.offset = offset }

    /// The instant `duration` later.
    ///
    /// ```swift
    /// let later = clock.now.advanced(by: .seconds(1))
    /// ```
    public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }

    /// The duration from this instant to `other`.
    ///
    /// ```swift
    /// let start = clock.now
  /// let elapsed = start.duration(to: clock.now)
    /// ```
    public func duration(to other: Instant) -> Duration { other.offset - offset }

    /// Compares instants by their offset.
    ///
    /// ```swift
    /// #expect(TestClock.Instant(offset: .zero) < clock.now)
    /// ```
    public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }

    /// The offset, as in `1.5 seconds`.
    ///
    /// ```swift
    /// print(clock.now)  // 0.0 seconds
    /// ```
    public var description: String { offset.description }
  }

  /// A sleeping task, and whether it runs on the clock's executor, so that the clock can wait for
  /// what it does once woken.
  private typealias Sleeper = (continuation: UnsafeContinuation<Void, any Error>, onSchedule: Bool)

  private struct State {
    var now = Instant(offset: .zero)
    /// Ordered by deadline, then by registration (id).
    var sleepers = SleeperQueue<Sleeper>()
    var nextID = 0
    var watchers = CountWatchers()

  }

  private let state: LockedState<State>
  let executor: TestExecutor

  /// Creates a clock at offset zero, with no sleepers, whose jobs run on `isolation`: by default
  /// the caller's actor, so a clock made in a `@MainActor` test runs its jobs on the main actor, in
  /// turn with the test's statements (nothing moves between two of them; the clock runs while the
  /// test awaits). Made in nonisolated code, a clock runs its jobs on a serial executor of its own
  /// as soon as they come, beside the code that made it; a nonisolated body inside
  /// ``withTestClock(isolation:_:)`` is then one of those jobs, and nothing of the clock runs while
  /// it does. `@Test(.onTestClock)` makes a main-actor clock, whatever the test's isolation.
  ///
  /// ```swift
  /// let clock = TestClock()
  /// let eager = TestClock(isolation: nil)   // its jobs run at once, wherever it was made
  /// ```
  public init(isolation: (any Actor)? = #isolation) {
    let state = LockedState(State())
    self.state = state
    executor = TestExecutor(home: isolation, describeSleepers: {
      state.withLock { $0.sleepers.ordered }.map { sleeper in
        "a sleeper until \(sleeper.deadline)\(sleeper.sleeper.onSchedule ? "" : " (its task is not on the clock)")"
      }
    })
  }

  /// The current instant; it moves only in `advance(by:)`, `advance(to:)` and `run()`.
  ///
  /// ```swift
  /// #expect(clock.now.offset == .seconds(3))
  /// ```
  public var now: Instant { state.withLock { $0.now } }

  /// Zero: a test clock resolves any duration.
  ///
  /// ```swift
  /// #expect(clock.minimumResolution == .zero)
  /// ```
  public var minimumResolution: Duration { .zero }

  /// The number of tasks sleeping on this clock.
  ///
  /// ```swift
  /// #expect(clock.pendingSleepers == 0)  // nothing left behind
  /// ```
  public var pendingSleepers: Int { state.withLock { $0.sleepers.count } }

  /// Suspends until the clock reaches `deadline`; returns at once if it already has.
  /// A cancelled sleep throws `CancellationError` and removes its sleeper at once.
  ///
  /// ```swift
  /// try await clock.sleep(until: clock.now.advanced(by: .seconds(1)))
  /// ```
  public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
    let onSchedule = executor.isPreferredByCurrentTask
    let id = state.withLock { state in
      defer { state.nextID += 1 }
      return state.nextID
    }
    // Every way out of the wait below is a resume after `beginTransit()`: the clock is not idle
    // until this task is running again.
    defer { executor.endTransit() }
    try await withTaskCancellationHandler {
      try await withUnsafeThrowingContinuation { (continuation: UnsafeContinuation<Void, any Error>) in
        // Parked (with the watchers it wakes), or resumed at once: cancelled, or due already.
        let outcome = state.withLock { state -> Result<[UnsafeContinuation<Void, Never>], any Error>? in
          if Task.isCancelled { return .failure(CancellationError()) }
          if deadline <= state.now { return nil }
          state.sleepers.insert((continuation, onSchedule), id: id, deadline: deadline)
          return .success(state.watchers.reached(state.sleepers.count))
        }
        guard case .success(let watchers) = outcome else {
          executor.beginTransit()
          return continuation.resume(with: outcome?.map { _ in () } ?? .success(()))
        }
        for watcher in watchers { watcher.resume() }
      }
    } onCancel: {
      // Taken out under the lock, resumed after it: resuming runs no user code here, but the rule
      // keeps every resume of this file in one place, after `withLock` returns.
      if let sleeper = state.withLock({ $0.sleepers.remove(id: id) }) {
        executor.beginTransit()
        sleeper.continuation.resume(throwing: CancellationError())
      }
    }
  }

  /// Moves time forward by `duration`, firing the due sleepers in deadline order and letting the
  /// tasks they wake run until they suspend again before firing the next.
  ///
  /// A cancelled caller returns at once, leaving `now` at the last sleeper fired. Firing a sleeper
  /// whose task does not run on the clock's executor (a plain `Task { }` instead of ``task(_:)``)
  /// records a test issue: the clock cannot wait for what that task does next.
  ///
  /// ```swift
  /// await clock.advance(by: .seconds(1))
  /// ```
  public func advance(
    by duration: Duration, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line,
    column: Int = #column
  ) async {
    precondition(duration >= .zero, "TestClock.advance(by:): duration must be 0 or greater, got \(duration)")
    await fire(until: now.advanced(by: duration), caller: (fileID, filePath, line, column))
  }

  /// Moves time forward to `deadline`; see ``advance(by:fileID:filePath:line:column:)``.
  ///
  /// ```swift
  /// await clock.advance(to: .init(offset: .seconds(3)))
  /// ```
  public func advance(
    to deadline: Instant, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line,
    column: Int = #column
  ) async {
    precondition(deadline >= now, "TestClock.advance(to:): deadline \(deadline) is before now, \(now)")
    await fire(until: deadline, caller: (fileID, filePath, line, column))
  }

  /// Advances until no sleeper is left, firing each in deadline order as
  /// ``advance(by:fileID:filePath:line:column:)`` does, and returning at once if the caller is
  /// cancelled. A sequence that always sleeps again, such as a timer, keeps this running: use
  /// `advance(by:)`.
  ///
  /// ```swift
  /// await clock.run()
  /// ```
  public func run(fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column)
    async
  { await fire(until: nil, caller: (fileID, filePath, line, column)) }

  /// Lets every task on the clock's executor, and the main-actor work they hand over to, run until
  /// it suspends, without moving time. A cancelled caller returns at once.
  ///
  /// So a `@MainActor` model written from a task on the clock shows the write when this returns.
  /// Main-actor work counts only while it keeps handing over to the executor, or for a few hops
  /// among main-actor jobs, or until an answer of a ``ControlledCalls`` stub (or a ``Gate``'s
  /// release) used on this clock has reached its caller; the main actor must be serviced (it is
  /// under Swift Testing, XCTest and an async `main`). A caller that never gets back (its actor's
  /// executor stopped) keeps this waiting until the caller of `runCurrent()` is cancelled.
  ///
  /// ```swift
  /// let query = CurrentValueFlow("")
  /// let seen = clock.task { await query.prefix(2).reduce(into: []) { $0.append($1) } }
  /// await clock.runCurrent()   // subscribed
  /// query.send("a")
  /// await clock.runCurrent()   // the pipeline has seen "a"
  /// ```
  public func runCurrent() async { await executor.settle() }

  /// The value of `task`, awaited without the risk of hanging: lets the clock's schedule run until
  /// it is idle, as ``runCurrent()`` does, then returns what `task` returned, or `nil` if it has
  /// not finished by then. Time does not move.
  ///
  /// A `nil` comes with a test issue naming what AsyncFlowTesting can see the code under test
  /// waiting in: the calls parked on ``ControlledCalls`` stubs (with their arguments), the callers
  /// parked in ``Gate``s, the sleepers on this clock. Where `await task.value` on work that
  /// ignores cancellation hangs the test process past its time limit, this fails the test and
  /// returns. The task is left running: cancel it if it should stop.
  ///
  /// ```swift
  /// let pages = ControlledCalls<Int, [String]>()
  /// let refresh = clock.task { await pages.call(0) }
  /// await pages.calls(count: 1)
  /// pages.respond(toCall: 0, with: ["1", "2"])
  /// #expect(await clock.value(of: refresh) == ["1", "2"])  // or nil, with an issue naming what it waits in
  /// ```
  ///
  /// Work that runs off the clock (a task started with `Task { }`) is not waited for: if it is
  /// still running when the schedule is idle, the result is `nil` too. A throwing task's error is
  /// rethrown.
  public func value<Success: Sendable, Failure: Error>(
    of task: Task<Success, Failure>, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line,
    column: Int = #column
  ) async throws(Failure) -> Success? {
    let outcome = LockedState<Result<Success, Failure>?>(nil)
    // On the clock's executor: the watcher's wake-up when `task` ends is a job there, so settling
    // waits for it, and the outcome is stored before `settle()` returns.
    Task(executorPreference: executor) {
      let result = await task.result
      outcome.withLock { $0 = result }
    }
    await executor.settle()
    if let result = outcome.withLock({ $0 }) { return try result.get() }
    let seen = executor.parkedList(
      none: "nothing AsyncFlowTesting can see (no parked call, gate or sleeper): is it waiting on work off the clock?")
    recordIssue(
      """
      TestClock.value(of:): the task has not finished once the clock's schedule is idle\
      \(Task.isCancelled ? " (the waiting test was cancelled)" : ""). It may be waiting in: \(seen)
      """, at: (fileID, filePath, line, column))
    return nil
  }

  /// Suspends until at least `count` tasks are sleeping on this clock: a barrier that replaces
  /// guessing how long a task needs to reach its sleep.
  ///
  /// Called in this clock's scope (`@Test(.onTestClock)`, `withTestClock`, ``task(_:)``), the clock
  /// runs meanwhile, and when it is idle with fewer sleepers, nothing it can see will add one: this
  /// records an issue naming the sleepers and what else is parked, and returns. Outside the scope it
  /// waits until the sleepers come or the caller is cancelled (a `.timeLimit` then ends the test).
  ///
  /// ```swift
  /// let attempts = Flow<[Item], APIError>.fail(.offline)
  ///   .retryWithBackoff(maxRetries: 3, initialDelay: .seconds(1), clock: clock)
  /// let retry = clock.task { do { for try await _ in attempts {} } catch { print(error) } }
  /// await clock.sleepers(count: 1)   // the first attempt failed and the backoff sleeps
  /// ```
  public func sleepers(
    count: Int, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column
  ) async {
    precondition(count >= 0, "TestClock.sleepers(count:): count must be 0 or greater, got \(count)")
    let wait: @Sendable () async -> Void = {
      await self.state.waitUntil(count: count, of: { $0.sleepers.count }, watchers: \.watchers)
    }
    guard FlowScheduling.executor === executor else { return await wait() }
    await executor.barrier(
      { "TestClock.sleepers(count: \(count)): \(counted(self.pendingSleepers, "sleeper"))" },
      isMet: { self.pendingSleepers >= count }, wait: wait, fileID: fileID, filePath: filePath, line: line, column: column)
  }

  /// Starts `operation` on the clock's executor, so that it and every task AsyncFlow's operators
  /// start for it follow the clock's deterministic schedule.
  ///
  /// ```swift
  /// let ticks = Flow.timer(every: .seconds(1), clock: clock).prefix(3)
  /// let received = clock.task { await ticks.reduce(into: []) { $0.append($1) } }
  /// await clock.advance(by: .seconds(3))
  /// ```
  @discardableResult
  public func task<Success: Sendable>(_ operation: @escaping @Sendable () async -> Success) -> Task<Success, Never> {
    let executor = self.executor
    return FlowScheduling.$executor.withValue(executor) { Task(executorPreference: executor, operation: operation) }
  }

  /// Runs `operation` on the clock's schedule: the nonisolated async code it calls runs on the
  /// clock's executor, and tasks that AsyncFlow's operators start in it do too. For code that the
  /// test does not start itself, such as a stub called from a model's own tasks or a model whose
  /// initialiser subscribes: ``runCurrent()`` and `advance` then wait for that work as well.
  ///
  /// Call it from the isolation the result goes back to (a `@MainActor` stub for a `@MainActor`
  /// model), so that returning does not pass through the global executor, which the clock cannot see.
  ///
  /// ```swift
  /// let calls = ControlledCalls<String, [String]>()
  /// let fetch = { @MainActor (query: String) in await clock.onSchedule { await calls.call(query) } }
  /// let articles = Task { @MainActor in await fetch("swift") }   // the model's own request
  /// await calls.calls(count: 1)
  /// calls.respond(to: "swift", with: ["swift"])
  /// await clock.runCurrent()   // the caller on the main actor has the response
  /// ```
  public func onSchedule<Success, Failure: Error>(
    isolation: isolated (any Actor)? = #isolation, _ operation: () async throws(Failure) -> Success
  ) async throws(Failure) -> Success {
    let executor = self.executor
    // Entering and leaving the preference scope can each pass through an executor that is not the
    // clock's before the caller's actor runs the code again: the clock is not idle until it has.
    executor.beginTransit()
    let result = await FlowScheduling.$executor.withValue(
      executor,
      operation: {
        await withTaskExecutorPreference(executor, isolation: isolation) { () async -> Result<Success, Failure> in
          // Capturing `isolation` keeps this closure on the caller's actor: otherwise returning from
          // `operation` would pass through the executor, one more hop before the caller resumes.
          _ = isolation
          executor.endTransit()
          defer { executor.beginTransit() }
          do throws(Failure) { return .success(try await operation()) } catch { return .failure(error) }
        }
      }, isolation: isolation)
    executor.endTransit()
    return try result.get()
  }

  /// Fires sleepers in deadline order up to `deadline` (or all, for `nil`), settling before each
  /// firing and after the last; stops as soon as the caller is cancelled.
  private func fire(until deadline: Instant?, caller: SourceCaller) async {
    while true {
      await executor.settle()
      let due = state.withLock { state -> (deadline: Instant, sleeper: Sleeper)? in
        if Task.isCancelled { return nil }
        guard let first = state.sleepers.popFirst(dueBy: deadline) else {
          if let deadline { state.now = deadline }
          return nil
        }
        state.now = first.deadline
        return first
      }
      guard let due else { return }
      if !due.sleeper.onSchedule {
        recordIssue(
          """
          TestClock woke a task sleeping until \(due.deadline) that does not run on the clock's executor \
          (started with `Task { }`?): the clock cannot wait for what it does next, so the test may hang or \
          see it late. Start the code under test with `clock.task { }`.
          """, at: caller)
      }
      executor.beginTransit()
      due.sleeper.continuation.resume()
    }
  }
}
