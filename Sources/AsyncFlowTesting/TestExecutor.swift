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

  private enum Step {
    case run(UnownedJob)
    case resume([UnsafeContinuation<Void, Never>])
    case stop
  }

  private let state = LockedState(State())

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    let startDrainer = state.withLock { state in
      state.jobs.append(job)
      defer { state.draining = true }
      return !state.draining
    }
    // Jobs run on a task of the global executor, one at a time: no thread of our own is needed.
    if startDrainer { Task.detached { self.drain() } }
  }

  private func drain() {
    while true {
      let step = state.withLock { state -> Step in
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
        job.runSynchronously(on: asUnownedTaskExecutor())
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

  /// What the code under test waits in right now, one line per wait, in the order the sources were
  /// first used. Described outside the lock: a description reads the source's own state and
  /// formats the code under test's arguments.
  func describeWaits() -> [String] {
    let sources = waitSources.withLock { $0.compactMap(\.source) }
    return sources.flatMap { $0.describeWaits() }
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
