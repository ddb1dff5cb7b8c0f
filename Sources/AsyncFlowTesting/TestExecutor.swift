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
    var idleWaiters: [(id: Int, continuation: UnsafeContinuation<Void, Never>)] = []
    var nextWaiterID = 0

    var isIdle: Bool { !draining && inTransit == 0 }

    /// The waiters to resume once the clock is idle.
    mutating func takeIdleWaiters() -> [UnsafeContinuation<Void, Never>] {
      guard inTransit == 0 else { return [] }
      defer { idleWaiters.removeAll() }
      return idleWaiters.map(\.continuation)
    }
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

  private enum Step {
    case run(UnownedJob)
    case handOff
    case resume([UnsafeContinuation<Void, Never>])
    case stop
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

  /// Jobs one drain runs before it hands its thread back and goes on in a new drain, queued behind
  /// what else waits for that thread. A task that is always runnable (a loop of `Task.yield()`)
  /// otherwise kept one drain, and with it a pool thread or the main actor, for as long as it ran:
  /// on two cores, two such loops of tests running side by side took both threads of the pool, and
  /// the tests that were to stop them never ran again (a full suite run hung). The order of the
  /// jobs is the same either way.
  private static var jobsPerTurn: Int { 256 }

  private func drain(on actor: isolated any Actor) {
    drain()
  }

  private func drain() {
    var jobsThisTurn = 0
    while true {
      let step = state.withLock { state -> Step in
        // `draining` stays set: the next drain takes over, and nobody else starts one meanwhile.
        if jobsThisTurn == Self.jobsPerTurn, !state.jobs.isEmpty { return .handOff }
        if let job = state.jobs.popFirst() { return .run(job) }
        let waiters = state.takeIdleWaiters()
        if !waiters.isEmpty { return .resume(waiters) }
        state.draining = false
        return .stop
      }
      switch step {
      case .run(let job):
        jobsThisTurn += 1
        job.runSynchronously(on: asUnownedTaskExecutor())
      case .handOff:
        return startDrainer()
      case .resume(let waiters):
        // A waiter that runs on this executor enqueues a job, which this loop then runs.
        for waiter in waiters { waiter.resume() }
      case .stop:
        return
      }
    }
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

  /// What the code under test waits in right now, one line per wait: the stubs' parked calls and
  /// the gates' parked callers, in the order the sources were first used, then the sleepers in
  /// firing order. Described outside the lock: a description reads the source's own state and
  /// formats the code under test's arguments.
  func describeWaits() -> [String] {
    let sources = waitSources.withLock { $0.compactMap(\.source) }
    return sources.flatMap { $0.describeWaits() } + describeSleepers()
  }

  /// The clock lets a task go (see `State.inTransit`): it is not idle until ``endTransit()``.
  /// Called before the continuation is resumed.
  func beginTransit() {
    state.withLock { state in
      state.inTransit += 1
      state.activity += 1
    }
  }

  /// The task let go in ``beginTransit()`` has arrived, on its own isolation.
  func endTransit() {
    let waiters = state.withLock { state in
      state.inTransit -= 1
      return state.draining ? [] : state.takeIdleWaiters()
    }
    for waiter in waiters { waiter.resume() }
  }

  private var activity: Int {
    state.withLock { $0.activity }
  }

  /// Whether the current task prefers this executor, so that its jobs run here.
  var isPreferredByCurrentTask: Bool {
    let mine = asUnownedTaskExecutor()
    return withUnsafeCurrentTask { $0?.unownedTaskExecutor == mine }
  }

  /// Suspends until no job is queued or running on this executor and no task it let go is in
  /// transit, or until the calling task is cancelled.
  func idle() async {
    let id = state.withLock { state in
      defer { state.nextWaiterID += 1 }
      return state.nextWaiterID
    }
    await withTaskCancellationHandler {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
        let resumeNow = state.withLock { state in
          if state.isIdle || Task.isCancelled { return true }
          state.idleWaiters.append((id, continuation))
          return false
        }
        if resumeNow { continuation.resume() }
      }
    } onCancel: {
      let waiter = state.withLock { state -> UnsafeContinuation<Void, Never>? in
        guard let index = state.idleWaiters.firstIndex(where: { $0.id == id }) else { return nil }
        return state.idleWaiters.remove(at: index).continuation
      }
      waiter?.resume()
    }
  }
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
    if isPreferredByCurrentTask {
      // Called from a task on the clock: its own resumptions would count as activity every time.
      await withTaskExecutorPreference(globalConcurrentExecutor) { await settleRounds() }
    } else {
      await settleRounds()
    }
  }

  private func settleRounds() async {
    await idle()
    var quiet = 0
    while quiet < Self.quietRounds, !Task.isCancelled {
      let before = activity
      // A new task, not `MainActor.run`: it is enqueued even when the caller is on the main actor.
      await Task { @MainActor in }.value
      await idle()
      quiet = activity == before ? quiet + 1 : 0
    }
  }

  /// A barrier on this clock's schedule: waits in `wait` (which returns once the condition holds,
  /// or when cancelled) while the clock runs. When the schedule is idle and `isMet` still fails,
  /// nothing the clock can see will meet it: records an issue saying what the barrier waits for
  /// (`what()`) and what the code under test is parked in, and returns. A test that waits for a
  /// call that never comes fails in milliseconds, with a message, instead of at its time limit.
  func barrier(
    _ what: @escaping @Sendable () -> String, isMet: @escaping @Sendable () -> Bool,
    wait: @escaping @Sendable () async -> Void, at caller: SourceCaller
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
    let waits = describeWaits()
    let parked = waits.isEmpty ? " nothing AsyncFlowTesting can see" : waits.map { "\n- \($0)" }.joined()
    recordIssue(
      """
      \(what()). The clock's schedule is idle and nothing on it can meet this any more: is the code \
      under test stuck, or waiting for work off the clock (a `Task { }` of its own, real I/O)? Parked:\(parked)
      """, at: caller)
  }
}

extension TestExecutor {
  /// The executor of the clock whose schedule the current task belongs to (the task-local that
  /// `clock.task`, `onSchedule` and `withTestClock` set, inherited by `Task { }`), else `home`,
  /// the one where `source` was made or registered; it watches `source` from now on.
  static func current(home: TestExecutor?, for source: some WaitSource) -> TestExecutor? {
    guard let executor = (FlowScheduling.executor as? TestExecutor) ?? home else { return nil }
    executor.watch(source)
    return executor
  }

  /// ``current(home:for:)`` for a wait of the code under test (`what`, from `isolation`), which
  /// records an issue when the caller is off the clock: neither on its executor nor on the main
  /// actor, which it settles.
  static func current(
    home: TestExecutor?, for source: some WaitSource, isolation: (any Actor)?, _ what: () -> String
  ) -> TestExecutor? {
    guard let executor = current(home: home, for: source) else { return nil }
    if !executor.isPreferredByCurrentTask, isolation.map({ $0 !== MainActor.shared }) ?? true {
      recordIssue(
        """
        \(what()) was reached from a task that does not run on the test clock's executor (a `Task { }` or \
        `Task.detached { }` of the code under test?). The clock waits for the answer to reach that task, but \
        cannot wait for what the task does after it, so `runCurrent()` may return before it is done. Start \
        that work through AsyncFlow (an operator, a sink, `TaskSlots`) inside `@Test(.onTestClock)`, start it \
        with `clock.task { }`, or make the caller `@MainActor`.
        """)
    }
    return executor
  }
}

/// A stub or gate that can say what the code under test is waiting in: the parked calls of a
/// ``ControlledCalls``, the callers parked in a ``Gate``.
protocol WaitSource: AnyObject, Sendable {
  /// One line per wait, e.g. `ControlledCalls<String, Int>: call 0 ("sw") waits for its answer`.
  func describeWaits() -> [String]

  /// Makes `executor` the source's clock if it has none yet, and watches the source there: for a
  /// source registered with a clock after it was made (an ``ExplorationRun``'s).
  func adopt(_ executor: TestExecutor)
}

private struct WeakWaitSource {
  var id: ObjectIdentifier
  weak var source: (any WaitSource)?
}
