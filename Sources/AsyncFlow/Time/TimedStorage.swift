/// Runs a ``TimedStateMachine``: one task per iteration, with two children, one pulling the
/// upstream and one sleeping until the machine's deadline. The consumer's `next()` takes the
/// machine's outputs. The lock is held only around machine events; continuations are resumed and
/// the task cancelled after it is released.
final class TimedStorage<Machine: TimedStateMachine, Base: AsyncSequence & Sendable, C: Clock>: Sendable
where Base.Element == Machine.Element, Base.Failure == Machine.UpstreamFailure, C.Instant == Machine.Instant {
  private struct State {
    var machine: Machine
    var phase = Phase.idle
    var consumer: UnsafeContinuation<Void, Never>?
    var pump: UnsafeContinuation<Bool, Never>?
    var timer: UnsafeContinuation<Machine.Instant?, Never>?
    var task: Task<Void, Never>?

    enum Phase { case idle, running, cancelled, finished }

    /// The continuations that the last event lets go, with what to resume them with.
    mutating func wakeups() -> Wakeups {
      var wakeups = Wakeups()
      if consumer != nil, phase != .running || machine.isEnding || machine.hasOutput {
        wakeups.consumer = consumer.take()
      }
      let stopping = phase != .running || machine.isEnding
      if let pump, stopping || machine.wantsUpstream {
        wakeups.pump = (pump, !stopping)
        self.pump = nil
      }
      if let timer, stopping || machine.deadline != nil {
        wakeups.timer = (timer, stopping ? nil : machine.deadline)
        self.timer = nil
      }
      if machine.isEnding || phase == .cancelled {
        wakeups.cancel = task
      }
      return wakeups
    }
  }

  struct Wakeups {
    var consumer: UnsafeContinuation<Void, Never>?
    var pump: (UnsafeContinuation<Bool, Never>, Bool)?
    var timer: (UnsafeContinuation<Machine.Instant?, Never>, Machine.Instant?)?
    var cancel: Task<Void, Never>?

    func perform() {
      cancel?.cancel()
      consumer?.resume()
      if let (pump, proceed) = pump { pump.resume(returning: proceed) }
      if let (timer, deadline) = timer { timer.resume(returning: deadline) }
    }
  }

  private let state: LockedState<State>
  private let base: Base
  private let clock: C

  init(machine: Machine, base: Base, clock: C) {
    self.state = LockedState(State(machine: machine))
    self.base = base
    self.clock = clock
  }

  // MARK: Consumer

  private enum NextStep {
    case output(TimedOutput<Machine.Element, Machine.Failure>, Wakeups)
    case start
    case suspend
    case over(awaiting: Task<Void, Never>?)
  }

  func next(isolation actor: isolated (any Actor)?) async -> TimedOutput<Machine.Element, Machine.Failure>? {
    while true {
      let step = state.withLock { state -> NextStep in
        switch state.phase {
        case .idle:
          state.phase = .running
          state.machine.start(at: clock.now)
          return .start
        case .cancelled:
          state.phase = .finished
          return .over(awaiting: state.task)
        case .finished:
          return .over(awaiting: nil)
        case .running:
          guard let output = state.machine.nextOutput(at: clock.now) else { return .suspend }
          if case .end = output { state.phase = .finished }
          return .output(output, state.wakeups())
        }
      }
      switch step {
      case .output(let output, let wakeups):
        wakeups.perform()
        if case .end = output {
          // No work outlives the iteration: the end arrives once the cancelled task has ended.
          await state.withLock { $0.task }?.value
        }
        return output
      case .start:
        startTask()
      case .suspend:
        await withTaskCancellationHandler {
          await withUnsafeContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
            let resumeNow = state.withLock { state in
              guard state.phase == .running, !state.machine.hasOutput, !state.machine.isEnding else { return true }
              state.consumer = continuation
              return false
            }
            if resumeNow { continuation.resume() }
          }
        } onCancel: {
          self.cancel()
        }
      case .over(let task):
        // No work outlives the iteration: the consumer returns once the task has ended.
        await task?.value
        return nil
      }
    }
  }

  /// The consumer's task was cancelled or its iterator released.
  func cancel() {
    state.withLock { state -> Wakeups in
      guard state.phase == .running || state.phase == .idle else { return Wakeups() }
      state.phase = state.phase == .idle ? .finished : .cancelled
      return state.wakeups()
    }.perform()
  }

  // MARK: The iteration's task

  private func startTask() {
    let task = FlowScheduling.startTask {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await self.pumpUpstream() }
        group.addTask { await self.runTimer() }
      }
    }
    let cancelNow = state.withLock { state -> Bool in
      state.task = task
      return state.phase != .running || state.machine.isEnding
    }
    if cancelNow { task.cancel() }
  }

  private func event(_ body: (inout Machine, C.Instant) -> Void) {
    let now = clock.now
    state.withLock { state -> Wakeups in
      guard state.phase == .running else { return Wakeups() }
      body(&state.machine, now)
      return state.wakeups()
    }.perform()
  }

  private func pumpUpstream() async {
    var iterator = base.makeAsyncIterator()
    while await upstreamWanted() {
      do throws(Base.Failure) {
        guard let element = try await iterator.next(isolation: nil) else {
          event { machine, now in machine.upstreamEnded(nil, at: now) }
          return
        }
        event { machine, now in machine.upstreamElement(element, at: now) }
      } catch {
        event { machine, now in machine.upstreamEnded(error, at: now) }
        return
      }
    }
  }

  /// Waits until the machine wants an upstream element; `false` once the operator is over.
  private func upstreamWanted() async -> Bool {
    await withTaskCancellationHandler {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
        let answer = state.withLock { state -> Bool? in
          guard state.phase == .running, !state.machine.isEnding, !Task.isCancelled else { return false }
          if state.machine.wantsUpstream { return true }
          state.pump = continuation
          return nil
        }
        if let answer { continuation.resume(returning: answer) }
      }
    } onCancel: {
      state.withLock { $0.pump.take() }?.resume(returning: false)
    }
  }

  private func runTimer() async {
    while let deadline = await nextDeadline() {
      do {
        try await clock.sleep(until: deadline, tolerance: nil)
      } catch {
        return
      }
      event { machine, now in machine.timerFired(at: now) }
    }
  }

  /// Waits until the machine has a deadline; `nil` once the operator is over.
  private func nextDeadline() async -> C.Instant? {
    await withTaskCancellationHandler {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<C.Instant?, Never>) in
        let answer = state.withLock { state -> C.Instant?? in
          guard state.phase == .running, !state.machine.isEnding, !Task.isCancelled else { return .some(nil) }
          if let deadline = state.machine.deadline { return .some(deadline) }
          state.timer = continuation
          return nil
        }
        if let answer { continuation.resume(returning: answer) }
      }
    } onCancel: {
      state.withLock { $0.timer.take() }?.resume(returning: nil)
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

  func next(isolation actor: isolated (any Actor)?) async throws(Machine.Failure) -> Machine.Element? {
    if Task.isCancelled { storage.cancel() }
    switch await storage.next(isolation: actor) {
    case .element(let element):
      return element
    case .end(let failure?):
      throw failure
    case .end(nil), nil:
      return nil
    }
  }
}
