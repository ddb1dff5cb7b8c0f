/// Runs a ``TimedStateMachine`` through a ``TimedLifecycleStateMachine``: one task per iteration,
/// with two children, one pulling the upstream and one sleeping until the logic's deadline. The
/// consumer's `next()` takes the logic's outputs. The lock is held only around machine events;
/// continuations are resumed and the task cancelled after it is released.
final class TimedStorage<Machine: TimedStateMachine, Base: AsyncSequence & Sendable, C: Clock>: Sendable
where Base.Element == Machine.Element, Base.Failure == Machine.UpstreamFailure, C.Instant == Machine.Instant {
  typealias Lifecycle = TimedLifecycleStateMachine<
    Machine, UnsafeContinuation<Void, Never>, UnsafeContinuation<Bool, Never>, UnsafeContinuation<C.Instant?, Never>,
    Task<Void, Never>
  >

  private let state: LockedState<Lifecycle>
  private let base: Base
  private let clock: C

  init(machine: Machine, base: Base, clock: C) {
    self.state = LockedState(Lifecycle(logic: machine))
    self.base = base
    self.clock = clock
  }

  /// Called after the lock: `wakeups.released` goes with the caller's copy, outside it too.
  private static func perform(_ wakeups: Lifecycle.Wakeups) {
    wakeups.cancel?.cancel()
    wakeups.consumer?.resume()
    if let (pump, proceed) = wakeups.pump { pump.resume(returning: proceed) }
    if let (timer, deadline) = wakeups.timer { timer.resume(returning: deadline) }
  }

  // MARK: Consumer

  func next(isolation actor: isolated (any Actor)?) async throws(Machine.Failure) -> Machine.Output? {
    while true {
      let now = clock.now
      switch state.withLock({ $0.next(at: now) }) {
      case .startTask:
        startTask()
      case .deliver(let element, let wakeups):
        Self.perform(wakeups)
        return element
      case .end(let failure, let wakeups, let task):
        Self.perform(wakeups)
        // No work outlives the iteration: the end comes once the task has ended.
        await task?.value
        if let failure { throw failure }
        return nil
      case .suspend:
        await withTaskCancellationHandler {
          await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
            state.withLock { $0.suspendConsumer(continuation) }?.resume()
          }
        } onCancel: {
          self.cancel()
        }
      }
    }
  }

  /// The consumer's task was cancelled or its iterator released.
  func cancel() {
    Self.perform(state.withLock { $0.cancel() })
  }

  // MARK: The iteration's task

  private func startTask() {
    let task = FlowScheduling.startTask {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await self.pumpUpstream() }
        group.addTask { await self.runTimer() }
      }
    }
    state.withLock { $0.taskStarted(task) }?.cancel()
  }

  private func pumpUpstream() async {
    var iterator = base.makeAsyncIterator()
    while await upstreamWanted() {
      do throws(Base.Failure) {
        guard let element = try await iterator.next(isolation: nil) else {
          let now = clock.now
          Self.perform(state.withLock { $0.upstreamEnded(nil, at: now) })
          return
        }
        let now = clock.now
        // The pump's reference outlives the lock: if the logic does not keep the element, its
        // last release (and `deinit`) comes after the lock, not inside it.
        withExtendedLifetime(element) {
          Self.perform(state.withLock { $0.upstreamElement(element, at: now) })
        }
      } catch {
        let now = clock.now
        Self.perform(state.withLock { $0.upstreamEnded(error, at: now) })
        return
      }
    }
    // The operator is over but the upstream has not ended (timeoutFlow holds an element and does
    // not pull meanwhile): no work may outlive the iteration.
    await iterator.stopPulling()
  }

  /// Waits until the logic wants an upstream element; `false` once the operator is over.
  private func upstreamWanted() async -> Bool {
    await withTaskCancellationHandler {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
        if let (pump, proceed) = state.withLock({ $0.pumpWaits(continuation, isCancelled: Task.isCancelled) }) {
          pump.resume(returning: proceed)
        }
      }
    } onCancel: {
      state.withLock { $0.pumpCancelled() }?.resume(returning: false)
    }
  }

  private func runTimer() async {
    while let deadline = await nextDeadline() {
      do {
        try await clock.sleep(until: deadline, tolerance: nil)
      } catch {
        return
      }
      let now = clock.now
      Self.perform(state.withLock { $0.timerFired(at: now) })
    }
  }

  /// Waits until the logic has a deadline; `nil` once the operator is over.
  private func nextDeadline() async -> C.Instant? {
    await withTaskCancellationHandler {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<C.Instant?, Never>) in
        if let (timer, deadline) = state.withLock({ $0.timerWaits(continuation, isCancelled: Task.isCancelled) }) {
          timer.resume(returning: deadline)
        }
      }
    } onCancel: {
      state.withLock { $0.timerCancelled() }?.resume(returning: nil)
    }
  }
}

/// The consumer's end of a timed operator's iteration: releasing it (leaving the loop) ends the
/// iteration's task.
final class TimedConsumer<Machine: TimedStateMachine, Base: AsyncSequence & Sendable, C: Clock>
where Base.Element == Machine.Element, Base.Failure == Machine.UpstreamFailure, C.Instant == Machine.Instant {
  let storage: TimedStorage<Machine, Base, C>

  init(_ storage: TimedStorage<Machine, Base, C>) {
    self.storage = storage
  }

  deinit {
    storage.cancel()
  }

  func next(isolation actor: isolated (any Actor)?) async throws(Machine.Failure) -> Machine.Output? {
    if Task.isCancelled { storage.cancel() }
    return try await storage.next(isolation: actor)
  }
}
