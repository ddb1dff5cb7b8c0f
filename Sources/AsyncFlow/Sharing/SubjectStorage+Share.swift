/// `shareFlow`'s part of the hot-source storage: the upstream's task and the grace timer, started
/// and cancelled after the lock.
extension SubjectStorage {
  // MARK: shareFlow's upstream

  @usableFromInline
  func startUpstream(generation: Int) {
    guard let upstream else { preconditionFailure("Internal inconsistency: a subject was asked to start an upstream") }
    // The preference the task is started with (`FlowScheduling.startTask` reads the same one), kept
    // for this run's grace timer.
    let executor = FlowScheduling.executor
    let task = FlowScheduling.startTask { await upstream(self, generation) }
    switch state.withLock({ $0.upstreamStarted(task, generation: generation, executor: executor) }) {
    case .none: break
    case .cancel(let task): task.cancel()
    case .startGraceTimer(let start): startGraceTimer(start)
    }
  }

  /// The body of the upstream task: sends each element unless this iteration was stopped, then
  /// reports the end.
  func iterateUpstream<Base: AsyncSequence>(_ base: Base, generation: Int) async
  where Base.Element == Element, Base.Failure == Failure {
    var iterator = base.makeAsyncIterator()
    var failure: Failure?
    do throws(Failure) {
      while let element = try await iterator.next(isolation: nil) {
        guard let action = state.withLock({ $0.upstreamElement(element, generation: generation) }) else { return }
        perform(action)
      }
    } catch {
      failure = error
    }
    perform(state.withLock { $0.upstreamEnded(failure: failure, generation: generation) })
  }

  // MARK: shareFlow's grace period

  /// Starts the task of the grace timer, with the upstream task's executor preference (see
  /// `StartGraceTimer`): it sleeps for the grace period, then reports `graceExpired`; cancelled (a
  /// subscriber came, or the upstream ended), it ends at once.
  func startGraceTimer(_ start: Machine.StartGraceTimer) {
    guard let grace else {
      preconditionFailure("Internal inconsistency: a share without grace period was asked to start a grace timer")
    }
    // The deadline counts from the last subscriber's leaving (or, if it left while the upstream's
    // task was being created, from that task's report), not from when the timer's task runs.
    let deadline = grace.clock.now.advanced(by: grace.period)
    let task = FlowScheduling.$executor.withValue(start.executor) {
      FlowScheduling.startTask {
        guard (try? await grace.clock.sleep(until: deadline)) != nil else { return }
        // Nobody came: the upstream stops, unless a subscriber came since (then this timer is old).
        self.perform(self.state.withLock { $0.graceExpired(timer: start.timer) })
      }
    }
    state.withLock { $0.graceTimerStarted(task, timer: start.timer) }?.cancel()
  }
}
