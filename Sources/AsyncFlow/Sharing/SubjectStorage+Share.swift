/// `shareFlow`'s part of the hot-source storage: the upstream's task and the grace timer, started
/// and cancelled after the lock.
extension SubjectStorage {
  // MARK: shareFlow's upstream

  /// Starts the task of iteration `generation`: without an owner, in the current task's context
  /// (the subscriber whose iteration, or sink, asked first); with one, in the owner's own task's
  /// context, whoever asked. With a grace period, the task runs the iteration in a child and
  /// starts this run's grace timers itself (`GraceTimerStarter`), so that they get its context
  /// too, not the last leaver's.
  ///
  /// The upstream's iterator is made here either way, so that a hot upstream has the share as
  /// subscriber when this returns.
  @usableFromInline
  func startUpstream(generation: Int) {
    guard let upstream else { preconditionFailure("Internal inconsistency: a subject was asked to start an upstream") }
    // Refused once the owner is closed: then the share is ended, or is about to be (it ends
    // every subscriber), and starts nothing more. Admitted, the shutdown awaits the task.
    if let owner, !owner.admit(.upstream) { return }
    let timers = grace == nil ? nil : GraceTimerStarter()
    let iteration = upstream()
    guard let owner else { return startUpstreamTask(iteration, generation: generation, timers: timers) }
    owner.inOwnContext { self.startUpstreamTask(iteration, generation: generation, timers: timers) }
  }

  /// Starts the upstream's task in the current task's context, and reports it.
  private func startUpstreamTask(
    _ iteration: ErasedPull<SubjectStorage>, generation: Int, timers: GraceTimerStarter?
  ) {
    let task = FlowScheduling.startTask {
      defer { self.owner?.release(.upstream) }
      guard let timers else { return await iteration.run(self, generation) }
      await withTaskGroup(of: Void.self) { group in
        group.addTask {
          await iteration.run(self, generation)
          timers.close()
        }
        while let request = await timers.next() { self.startGraceTimer(request) }
      }
    }
    switch state.withLock({ $0.upstreamStarted(task, generation: generation, timers: timers) }) {
    case .none: break
    case .cancel(let task): task.cancel()
    case .startGraceTimer(let start): requestGraceTimer(start)
    }
  }

  /// Makes the upstream's iteration `generation` now, in its starter (a `sink` on the share, or an
  /// iterator's first `next()`): the upstream's iterator exists before `startUpstream` returns.
  static func iteration<Base: AsyncSequence>(of base: Base) -> ErasedPull<SubjectStorage>
  where Base.Element == Element, Base.Failure == Failure {
    let upstream = IteratorHandOff(base.makeAsyncIterator())
    return ErasedPull { storage, generation in await storage.iterateUpstream(upstream, generation: generation) }
  }

  /// The body of the upstream task: sends each element unless this iteration was stopped, then
  /// reports the end.
  func iterateUpstream<Upstream: AsyncIteratorProtocol>(_ upstream: IteratorHandOff<Upstream>, generation: Int) async
  where Upstream.Element == Element, Upstream.Failure == Failure {
    var iterator = upstream.take()
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

  /// Asks the upstream's task for grace timer `start.timer` (see `StartGraceTimer`).
  func requestGraceTimer(_ start: Machine.StartGraceTimer) {
    guard let grace, let timers = start.timers else {
      preconditionFailure("Internal inconsistency: a share without grace period was asked to start a grace timer")
    }
    // The deadline counts from the last subscriber's leaving (or, if it left while the upstream's
    // task was being created, from that task's report), not from when the timer's task runs.
    timers.request(.init(timer: start.timer, deadline: grace.clock.now.advanced(by: grace.period)))
  }

  /// In the upstream's task: starts the task of a grace timer, which inherits the upstream task's
  /// context (its executor preference with it). It sleeps until the deadline, then reports
  /// `graceExpired`; cancelled (a subscriber came, or the upstream ended), it ends at once.
  func startGraceTimer(_ request: GraceTimerStarter.Request) {
    guard let grace else {
      preconditionFailure("Internal inconsistency: a share without grace period was asked to start a grace timer")
    }
    // In the upstream's task, which holds a ticket of the owner's: the timer holds its own.
    owner?.retain(.upstream)
    let task = FlowScheduling.startTask {
      defer { self.owner?.release(.upstream) }
      guard (try? await grace.clock.sleep(until: request.deadline)) != nil else { return }
      // Nobody came: the upstream stops, unless a subscriber came since (then this timer is old).
      self.perform(self.state.withLock { $0.graceExpired(timer: request.timer) })
    }
    state.withLock { $0.graceTimerStarted(task, timer: request.timer) }?.cancel()
  }
}
