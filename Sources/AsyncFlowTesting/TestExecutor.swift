import AsyncFlow

/// A serial task executor that runs its jobs one at a time and can tell when it has nothing left
/// to run. ``TestClock`` uses it to let every woken task run until it suspends again before it
/// fires the next sleeper.
final class TestExecutor: TaskExecutor, Sendable {
  private struct State {
    var jobs: [UnownedJob] = []
    var next = 0
    var draining = false
    var idleWaiters: [UnsafeContinuation<Void, Never>] = []

    mutating func popJob() -> UnownedJob? {
      guard next < jobs.count else { return nil }
      defer {
        next += 1
        if next == jobs.count {
          jobs.removeAll(keepingCapacity: true)
          next = 0
        }
      }
      return jobs[next]
    }
  }

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
          return .resume(state.idleWaiters)
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

  /// Suspends until no job is queued or running on this executor.
  func idle() async {
    await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
      let isIdle = state.withLock { state in
        if !state.draining { return true }
        state.idleWaiters.append(continuation)
        return false
      }
      if isIdle { continuation.resume() }
    }
  }
}
