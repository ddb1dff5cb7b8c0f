import AsyncFlow

/// A serial task executor that runs its jobs one at a time, in the order they were enqueued, and
/// can tell when it has nothing left to run. ``TestClock`` uses it to let every woken task run
/// until it suspends again before it fires the next sleeper.
///
/// The order is deterministic as long as jobs are only enqueued by jobs of this executor (and by
/// the one task that starts the schedule): a task that suspends here resumes here, in the order
/// its wake-ups were made.
final class TestExecutor: TaskExecutor, Sendable {
  private struct State {
    /// Drained from the front while tasks keep enqueueing at the back: two tasks that yield in
    /// turn never let it empty, so an array reset only when empty would grow without bound.
    var jobs = RingBuffer<UnownedJob>()
    var draining = false
    /// Tasks the clock has let go of and that have not arrived yet: a wait of a ``Gate``, a
    /// ``ControlledCalls`` stub or a sleeper resumed (its continuation may first run on the global
    /// executor, then hop to the caller's actor, neither of them this executor), or an
    /// ``TestClock/onSchedule(isolation:_:)`` scope left (the way back to the caller's actor).
    /// Each is known to arrive, so the clock is not idle until it has.
    var inTransit = 0
    /// Jobs enqueued and transits begun so far: whether anything the clock can see happened
    /// while settling hopped through the main actor.
    var activity = 0
    /// The callers of ``idle()``, waiting for `idle` to reach 1.
    var idleWaiters = CountWatchers()

    var idle: Int { !draining && inTransit == 0 ? 1 : 0 }
  }

  /// The stubs and gates used with this executor's clock, held weakly: what
  /// ``TestClock/value(of:fileID:filePath:line:column:)`` names when the work it waits for is stuck.
  private let waitSources = LockedState<[WeakWaitSource]>([])
  /// The clock's sleepers, one line each, in firing order: the rest of what a stuck test waits in.
  private let describeSleepers: @Sendable () -> [String]
  /// Where the jobs run: on this actor, in turn with the test body isolated to it; `nil`: on a
  /// global-executor task, as soon as they come.
  private let home: (any Actor)?

  init(home: (any Actor)?, describeSleepers: @escaping @Sendable () -> [String] = { [] }) {
    self.home = home
    self.describeSleepers = describeSleepers
  }

  private let state = LockedState(State())

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let isIdle = state.withLock { state in
      state.jobs.append(job)
      state.activity += 1
      defer { state.draining = true }
      return !state.draining
    }
    if isIdle { startDrainer() }
  }

  /// Starts a drain: on the test body's actor, in a job of its own, so that the body's statements
  /// and the clock's jobs take turns on one serial executor (nothing on the clock runs between two
  /// statements of the body that have no `await` between them; the jobs run while the body awaits,
  /// whatever it awaits). Without an actor, on a global-executor task: no thread of our own.
  private func startDrainer() {
    switch home {
    case nil: Task.detached { self.drain() }
    case let actor? where actor === MainActor.shared: Task.detached { @MainActor in self.drain() }
    case let actor?: Task.detached { await self.drain(on: actor) }
    }
  }

  /// Jobs (and wake-ups of idle waiters) one drain runs before it hands its thread back and goes on
  /// in a new drain, queued behind what else waits for that thread. A task that is always runnable (a loop of `Task.yield()`)
  /// otherwise kept one drain, and with it a pool thread or the main actor, for as long as it ran:
  /// on two cores, two such loops of tests running side by side took both threads of the pool, and
  /// the tests that were to stop them never ran again (a full suite run hung). The order of the
  /// jobs is the same either way.
  private static var jobsPerTurn: Int { 256 }

  private func drain(on actor: isolated any Actor) { drain() }

  private func drain() {
    for _ in 0..<Self.jobsPerTurn {
      // `draining` stays set until a turn finds nothing to run: nobody else starts a drain meanwhile.
      let (job, waiters) = state.withLock { state -> (UnownedJob?, [UnsafeContinuation<Void, Never>]) in
        if let job = state.jobs.popFirst() { return (job, []) }
        let waiters = state.idleWaiters.reached(state.inTransit == 0 ? 1 : 0)
        if waiters.isEmpty { state.draining = false }
        return (nil, waiters)
      }
      if let job {
        job.runSynchronously(on: asUnownedTaskExecutor())
      } else if waiters.isEmpty { return }
      // A waiter that runs on this executor enqueues a job, which this loop then runs.
      for waiter in waiters { waiter.resume() }
    }
    // The turn is used up: the next drain takes over, queued behind what else waits for the thread.
    startDrainer()
  }

  /// Remembers `source` (once) as something the code under test on this clock may wait in.
  func watch(_ source: some WaitSource) {
    let id = ObjectIdentifier(source)
    // Pruned and appended under the lock; nothing is released there but the boxes of sources that
    // are gone (a weak reference to a deallocated object), which run no user code.
    waitSources.withLock { sources in
      guard !sources.contains(where: { $0.id == id }) else { return }
      sources.removeAll { $0.source == nil }
      sources.append(WeakWaitSource(id: id, source: source))
    }
  }

  /// What the code under test waits in right now, as the lines of an issue (`none` when nothing
  /// is): the stubs' parked calls and the gates' parked callers, in the order the sources were first
  /// used, then the sleepers in firing order. Described outside the lock: a description reads the
  /// source's own state and formats the code under test's arguments.
  func parkedList(none: String) -> String {
    let waits = waitSources.withLock { $0.compactMap(\.source) }.flatMap { $0.describeWaits() } + describeSleepers()
    return waits.isEmpty ? none : waits.map { "\n- \($0)" }.joined()
  }

  /// The clock lets a task go (see `State.inTransit`): it is not idle until ``endTransit()``.
  /// Called before the continuation is resumed.
  func beginTransit() {
    state.withLock { state in (state.inTransit, state.activity) = (state.inTransit + 1, state.activity + 1) }
  }

  /// The task let go in ``beginTransit()`` has arrived, on its own isolation.
  func endTransit() {
    let waiters = state.withLock { state in
      state.inTransit -= 1
      return state.idleWaiters.reached(state.idle)
    }
    for waiter in waiters { waiter.resume() }
  }

  /// Whether the current task prefers this executor, so that its jobs run here.
  var isPreferredByCurrentTask: Bool { withUnsafeCurrentTask { $0?.unownedTaskExecutor == asUnownedTaskExecutor() } }

  /// Suspends until no job is queued or running on this executor and no task it let go is in
  /// transit, or until the calling task is cancelled.
  func idle() async { await state.waitUntil(count: 1, of: \.idle, watchers: \.idleWaiters) }
}

// MARK: Settling and barriers

extension TestExecutor {
  /// Quiet rounds that settling makes once the clock is idle: the one rule left for work on
  /// executors that the clock does not own. The clock knows what runs on its executor and what it
  /// let go of (``beginTransit()``), but not the jobs of the main actor and the global executor: a
  /// `@MainActor` sink of the model, a model's own `Task { }` on its way to a stub through a
  /// closure that passes through the global executor. A round hops through the main actor (a
  /// serial executor: the hop runs after every main-actor job enqueued before it) and comes back
  /// on the global executor; what those jobs hand to the clock shows up as activity, and settling
  /// starts over. What they hand only to each other is followed for these rounds and no further
  /// (README.md beside this file says what was measured).
  static var quietRounds: Int { 8 }

  /// Lets this executor, the tasks it let go and the main actor run until none has anything
  /// runnable that the clock can see; returns early if the caller is cancelled.
  func settle() async {
    // Called from a task on the clock, its own resumptions would count as activity every time.
    await withTaskExecutorPreference(isPreferredByCurrentTask ? globalConcurrentExecutor : nil) {
      await idle()
      var quiet = 0
      while quiet < Self.quietRounds, !Task.isCancelled {
        let before = state.withLock { $0.activity }
        // A new task, not `MainActor.run`: it is enqueued even when the caller is on the main actor.
        await Task { @MainActor in }.value
        await idle()
        quiet = state.withLock { $0.activity } == before ? quiet + 1 : 0
      }
    }
  }

  /// A barrier on this clock's schedule: waits in `wait` (which returns once the condition holds,
  /// or when cancelled) while the clock runs. When the schedule is idle and `isMet` still fails,
  /// nothing the clock can see will meet it: records an issue saying what the barrier waits for
  /// (`what()`) and what the code under test is parked in, and returns. A test that waits for a
  /// call that never comes fails in milliseconds, with a message, instead of at its time limit.
  func barrier(
    _ what: @escaping @Sendable () -> String, isMet: @escaping @Sendable () -> Bool,
    wait: @escaping @Sendable () async -> Void, fileID: String, filePath: String, line: Int, column: Int
  ) async {
    if isMet() { return }
    let reached = await withTaskGroup(of: Bool.self) { group in
      group.addTask {
        await wait()
        return !Task.isCancelled
      }
      group.addTask {
        await self.settle()
        return false
      }
      let first = await group.next() ?? false
      group.cancelAll()
      return first
    }
    // The waiting test was cancelled (its time limit): it is failing already, and says so.
    if reached || isMet() || Task.isCancelled { return }
    let parked = parkedList(none: " nothing AsyncFlowTesting can see")
    recordIssue(
      """
      \(what()). The clock's schedule is idle and nothing on it can meet this any more: is the code \
      under test stuck, or waiting for work off the clock (a `Task { }` of its own, real I/O)? Parked:\(parked)
      """, at: (fileID, filePath, line, column))
  }
}

/// A stub or gate that can say what the code under test is waiting in: the parked calls of a
/// ``ControlledCalls``, the callers parked in a ``Gate``.
protocol WaitSource: AnyObject, Sendable {
  /// One line per wait, e.g. `ControlledCalls<String, Int>: call 0 ("sw") waits for its answer`.
  func describeWaits() -> [String]
}

private struct WeakWaitSource {
  var id: ObjectIdentifier
  weak var source: (any WaitSource)?
}
