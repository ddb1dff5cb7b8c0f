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
    /// Jobs run so far: lets ``TestClock`` see whether a round of settling ran anything here.
    var jobsRun = 0
    var idleWaiters: [(id: Int, continuation: UnsafeContinuation<Void, Never>)] = []
    var nextWaiterID = 0

    mutating func popJob() -> UnownedJob? {
      guard let job = jobs.popFirst() else { return nil }
      jobsRun += 1
      return job
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
        if let job = state.popJob() { return .run(job) }
        if !state.idleWaiters.isEmpty {
          defer { state.idleWaiters.removeAll() }
          return .resume(state.idleWaiters.map(\.continuation))
        }
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

  /// Callers that the stubs and gates used on this clock have let go and that are not back on
  /// their own isolation yet.
  var returning: Int {
    let sources = waitSources.withLock { $0.compactMap(\.source) }
    return sources.reduce(0) { $0 + $1.returning }
  }

  /// The number of jobs this executor has run.
  var jobsRun: Int {
    state.withLock { $0.jobsRun }
  }

  /// Whether the current task prefers this executor, so that its jobs run here.
  var isPreferredByCurrentTask: Bool {
    let mine = asUnownedTaskExecutor()
    return withUnsafeCurrentTask { $0?.unownedTaskExecutor == mine }
  }

  /// Suspends until no job is queued or running on this executor, or until the calling task is
  /// cancelled.
  func idle() async {
    let id = state.withLock { state in
      defer { state.nextWaiterID += 1 }
      return state.nextWaiterID
    }
    await withTaskCancellationHandler {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
        let resumeNow = state.withLock { state in
          if !state.draining || Task.isCancelled { return true }
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
  /// Settling rounds in a row that must run nothing on the executor before the clock counts as
  /// settled. One round lets every main-actor job enqueued before it run; more rounds reach work
  /// that passes from one main-actor job to the next without touching the executor. Leaving a
  /// task-executor preference scope on the main actor is such work: with 400 `@MainActor` test
  /// cases running at once, a stub's return through ``TestClock/onSchedule(isolation:_:)`` took up to
  /// 5 rounds to reach its caller (12,000 measured); 12 leaves a margin.
  private static var quietRoundsToSettle: Int { 12 }

  /// Lets this executor and the main actor run until neither has anything runnable that the clock
  /// can see; returns early if the caller is cancelled.
  ///
  /// A round: hop through the main actor (its executor is serial, so the hop runs after every job
  /// enqueued there before it, this executor's drain among them), then wait until the executor is
  /// idle. Work that moves between the two (a clock task writing a `@MainActor` model, a
  /// main-actor pipeline whose operators run here) shows up as executor jobs; settling stops after
  /// a few rounds in a row ran none.
  func settle() async {
    if isPreferredByCurrentTask {
      // Called from a task on the clock: its own resumptions would count as work in every round.
      await withTaskExecutorPreference(globalConcurrentExecutor) { await settleRounds() }
    } else {
      await settleRounds()
    }
  }

  private func settleRounds() async {
    await idle()
    var quietRounds = 0
    while quietRounds < Self.quietRoundsToSettle, !Task.isCancelled {
      let jobsBefore = jobsRun
      // A new task, not `MainActor.run`: it is enqueued even when the caller is on the main actor.
      await Task { @MainActor in }.value
      await idle()
      // A stub's answer or a gate's release still on its way back to its caller is work to come,
      // however many rounds ran nothing: that hop is a job on the global executor, where no round
      // sees it, and a loaded machine left it waiting for a thread for up to 278 main-actor hops.
      // Not bounded by a count of rounds (100,000 passed in the full suite while a test held such
      // a hop): like the clock's other waits, it ends when the caller is cancelled.
      quietRounds = jobsRun == jobsBefore && returning == 0 ? quietRounds + 1 : 0
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

/// A stub or gate that can say what the code under test is waiting in: the parked calls of a
/// ``ControlledCalls``, the callers parked in a ``Gate``.
protocol WaitSource: AnyObject, Sendable {
  /// One line per wait, e.g. `ControlledCalls<String, Int>: call 0 ("sw") waits for its answer`.
  func describeWaits() -> [String]

  /// Waits resumed (answered, released, cancelled) whose caller has not yet run on from there.
  /// A resumed continuation first runs on the global executor and only then hops to the caller's
  /// actor, and settling sees neither: a `@MainActor` caller that is not on the clock's executor
  /// (a model's own `Task { }`) could get its answer after `runCurrent()` returned, when a loaded
  /// machine left that hop waiting for a thread (the explorer then replayed a failing order
  /// differently in 4 runs of 10 with two busy cores). Settling goes on until this is 0.
  var returning: Int { get }
}

private struct WeakWaitSource {
  var id: ObjectIdentifier
  weak var source: (any WaitSource)?
}
