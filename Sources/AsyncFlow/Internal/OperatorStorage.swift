import Synchronization

/// Runs an ``OperatorLifecycle``: the consumer's `next()`, one task per iteration whose inputs are
/// given by the operator (``pull(_:as:)`` for an upstream, a callbacks setup for `Flow.callbacks`;
/// `Flow.merge` has one per upstream) with a timer beside them when the logic uses one. The lock is
/// held only around machine events; continuations are resumed, the task cancelled and released
/// values let go after it is released.
@usableFromInline
final class OperatorStorage<Logic: OperatorLogic, C: Clock>: Sendable where C.Instant == Logic.Instant {
  @usableFromInline
  typealias Lifecycle = OperatorLifecycle<
    Logic, UnsafeContinuation<Void, Never>, UnsafeContinuation<Bool, Never>, UnsafeContinuation<C.Instant?, Never>,
    Task<Void, Never>
  >
  /// What the task runs as the input of a single-input operator: it reports through
  /// ``input(_:from:)`` and ``inputEnded(_:from:)`` and waits in ``inputWanted(_:)``, as input 0.
  @usableFromInline
  typealias Input = @Sendable (OperatorStorage) async -> Void
  /// An input of a many-input operator, told its index (what it passes to the same methods).
  @usableFromInline
  typealias IndexedInput = @Sendable (OperatorStorage, Int) async -> Void

  @usableFromInline
  let state: LockedState<Lifecycle>
  @usableFromInline
  let clock: C
  /// Raised once an end is known that drops what the consumer has taken and not yet returned
  /// (``OperatorLogic/dropsTakenOutputs``): a consumer that serves a batch out of the lock checks
  /// it before each output, so that a failure that came meanwhile wins at once, without a lock.
  @usableFromInline
  let takenOutputsDropped = Atomic(false)
  /// Told of each input element the logic drops, after the lock (`FlowBufferingPolicy.onDrop`).
  @usableFromInline
  let onDrop: (@Sendable (Int) -> Void)?

  /// `inputs`: how many inputs the task runs.
  @inlinable
  init(logic: Logic, clock: C, inputs: Int = 1, onDrop: (@Sendable (Int) -> Void)? = nil) {
    self.state = LockedState(Lifecycle(logic: logic, inputs: inputs))
    self.clock = clock
    self.onDrop = onDrop
  }

  /// Whether an end that drops the consumer's taken outputs is known (``takenOutputsDropped``).
  @inlinable
  var hasDroppedTakenOutputs: Bool { takenOutputsDropped.load(ordering: .acquiring) }

  /// Called after the lock; what the wakeups release (`released`) goes with them, here.
  @inlinable
  func perform(_ wakeups: consuming Lifecycle.Wakeups) {
    // Before anyone is resumed: a consumer serving its batch sees the end from its next output on.
    if wakeups.dropsTakenOutputs { takenOutputsDropped.store(true, ordering: .releasing) }
    wakeups.cancel?.cancel()
    wakeups.consumer?.resume()
    if let (input, proceed) = wakeups.input {
      input.resume(returning: proceed)
      for input in wakeups.moreInputs { input.resume(returning: proceed) }
    }
    if let (timer, deadline) = wakeups.timer { timer.resume(returning: deadline) }
    if wakeups.dropped, let onDrop { onDrop(1) }
  }

  // MARK: Consumer

  @inlinable
  func next(isolation actor: isolated (any Actor)?, input: @escaping Input) async throws(Logic.Failure) -> Logic.Output?
  {
    try await next(isolation: actor) { startTask([{ storage, _ in await input(storage) }]) }
  }

  @inlinable
  func next(
    isolation actor: isolated (any Actor)?, inputs: [IndexedInput]
  ) async throws(Logic.Failure) -> Logic.Output? {
    try await next(isolation: actor) { startTask(inputs) }
  }

  /// `startTask` starts the iteration's task, at the first `next()`.
  @inlinable
  func next(isolation actor: isolated (any Actor)?, startTask: () -> Void) async throws(Logic.Failure) -> Logic.Output?
  {
    while true {
      let now = clock.now
      switch state.withLock({ $0.next(at: now) }) {
      case .startTask:
        startTask()
      case .deliver(let output, let wakeups):
        perform(wakeups)
        return output
      case .end(let failure, let wakeups, let task, let retired):
        perform(wakeups)
        letGo(retired)
        // No work outlives the iteration: the end comes once the task has ended.
        await task?.value
        if let failure { throw failure }
        return nil
      case .suspend:
        await withTaskCancellationHandler {
          await withOrderedContinuation(isolation: actor) { (continuation: UnsafeContinuation<Void, Never>) in
            state.withLock { $0.suspendConsumer(continuation) }?.resume()
          }
        } onCancel: {
          self.cancel()
        }
      }
    }
  }

  /// The consumer's task was cancelled or its iterator released.
  @inlinable
  func cancel() {
    let (wakeups, retired) = state.withLock { $0.cancel() }
    perform(wakeups)
    letGo(retired)
  }

  /// Lets go of the logic the life cycle retired, after the lock: the waiters it still holds go on
  /// (and find the iteration over), then it is released, since what it holds may call back from
  /// its `deinit`. The one place both ends of an iteration (its end, its consumer leaving) do so.
  @inlinable
  func letGo(_ retired: consuming Logic?) {
    guard var retired else { return }
    for waiter in retired.retire() { waiter.resume() }
  }

  // MARK: The iteration's task

  /// The task holds the inputs (and what they capture), the storage does not: a callbacks setup
  /// that captures a socket whose callbacks hold the storage makes no cycle.
  ///
  /// The input the logic starts first (``OperatorLogic/inputStartedFirst``) runs at once, in the
  /// caller of the first `next()`, until it suspends: the iteration's task runs at once there too,
  /// and adds that input as the first child of its group, one that runs at once; then it adds the
  /// others. One task, started through ``FlowScheduling``, so that it runs in the consumer's context.
  @inlinable
  func startTask(_ inputs: [IndexedInput]) {
    let task =
      Logic.inputStartedFirst == nil
      ? FlowScheduling.startTask { await self.run(inputs) }
      : FlowScheduling.startTaskRunningAtOnce { await self.run(inputs) }
    state.withLock { $0.taskStarted(task) }?.cancel()
  }

  /// Runs every input, and the timer if the logic uses one: one input alone runs in the task
  /// itself, without a task group.
  @inlinable
  func run(_ inputs: [IndexedInput]) async {
    let first = Logic.inputStartedFirst
    if !Logic.usesTimer, first == nil, inputs.count == 1 { return await inputs[0](self, 0) }
    await withTaskGroup(of: Void.self) { group in
      if let first {
        let input = inputs[first]
        FlowScheduling.addTaskRunningAtOnce(to: &group) { await input(self, first) }
      }
      for (index, input) in inputs.enumerated() where index != first { group.addTask { await input(self, index) } }
      if Logic.usesTimer { group.addTask { await self.runTimer() } }
    }
  }

  /// Waits until the logic wants an element of input `index`; `false` once the operator is over.
  @inlinable
  func inputWanted(_ index: Int = 0) async -> Bool {
    await withTaskCancellationHandler {
      await withOrderedContinuation { (continuation: UnsafeContinuation<Bool, Never>) in
        if let (input, proceed) = state.withLock({
          $0.inputWaits(continuation, index: index, isCancelled: Task.isCancelled)
        }) {
          input.resume(returning: proceed)
        }
      }
    } onCancel: {
      state.withLock { $0.inputCancelled(index: index) }?.resume(returning: false)
    }
  }

  /// Hands `element` of input `index` to the logic; returns whether it will reach the consumer
  /// unless it leaves first. The caller's reference outlives the lock: if the logic does not keep
  /// the element, its last release (and `deinit`) comes after the lock, not inside it.
  @inlinable
  @discardableResult
  func input(_ element: Logic.Element, from index: Int = 0) -> Bool {
    offer(element, from: index).accepted
  }

  /// As ``input(_:from:)``; `proceed`: the input may pull again without asking ``inputWanted(_:)``
  /// (one lock per element while the logic wants more).
  @inlinable
  func offer(_ element: Logic.Element, from index: Int) -> (accepted: Bool, proceed: Bool) {
    let now = clock.now
    let (wakeups, accepted, proceed) = state.withLock { $0.input(element, from: index, at: now) }
    perform(wakeups)
    return (accepted, proceed)
  }

  /// `fromItsOwnCode`: see ``OperatorLifecycle/inputEnded(_:from:at:fromItsOwnCode:)``.
  @inlinable
  func inputEnded(_ failure: Logic.InputFailure?, from index: Int = 0, fromItsOwnCode: Bool = true) {
    let now = clock.now
    perform(state.withLock { $0.inputEnded(failure, from: index, at: now, fromItsOwnCode: fromItsOwnCode) })
  }

  /// Elements an input pulls between two yields of its thread: often enough that no input keeps a
  /// thread for long while its siblings or its consumer wait for one, rarely enough that the yield
  /// costs little per element. (Not the flattening pump: between its yields a switch would start
  /// the inners it supersedes, one per yield, where behind a stalled consumer it starts one.)
  @inlinable static var elementsBetweenYields: Int { 256 }

  /// The input of an operator over `base`: `base`'s iterator is made now, where the consumer makes
  /// its own (so a hot upstream has its subscriber from then on), and pulled by the task.
  @inlinable
  static func pulling<Base: AsyncSequence>(_ base: Base) -> IndexedInput
  where Base.Element == Logic.Element, Base.Failure == Logic.InputFailure {
    let upstream = IteratorHandOff(base.makeAsyncIterator())
    // Erased before the `@Sendable` input captures it, which may not capture the metatype of a
    // non-Sendable iterator; the hand-off is what makes sending it sound.
    let pull = ErasedPull<OperatorStorage> { storage, index in await storage.pull(upstream, as: index) }
    return { storage, index in await pull.run(storage, index) }
  }

  /// Input `index` of an operator over upstreams: pulls the upstream's iterator while the logic
  /// wants elements.
  @inlinable
  func pull<Upstream: AsyncIteratorProtocol>(_ upstream: IteratorHandOff<Upstream>, as index: Int = 0) async
  where Upstream.Element == Logic.Element, Upstream.Failure == Logic.InputFailure {
    var iterator = upstream.take()
    var proceed = await inputWanted(index)
    // Started first, in the caller (`Logic.inputStartedFirst`): once its first element is in the
    // logic, the caller gets its thread back, even from an upstream that never suspends.
    var yieldsAfterNext = index == Logic.inputStartedFirst
    var elementsSinceYield = 0
    while proceed {
      do throws(Upstream.Failure) {
        guard let element = try await iterator.next(isolation: nil) else { return inputEnded(nil, from: index) }
        // Only the life cycle cancels the task, and then it answers `false` here as well.
        proceed = offer(element, from: index).proceed
        elementsSinceYield &+= 1
        // An upstream that never suspends, into a logic that always takes more (the other of
        // withLatestFrom, a conflation), would hold its thread until the operator ends; the other
        // inputs and the consumer it waits for would get a thread only if the pool had one to
        // spare (with one busy thread of two, withLatestFrom's base never ran: a test timed out).
        if yieldsAfterNext || elementsSinceYield == Self.elementsBetweenYields {
          yieldsAfterNext = false
          elementsSinceYield = 0
          await Task.yield()
        }
        if !proceed { proceed = await inputWanted(index) }
      } catch {
        return inputEnded(error, from: index)
      }
    }
    // The operator is over but the upstream has not ended (timeoutFlow holds an element and does
    // not pull meanwhile): no work may outlive the iteration.
    await iterator.stopPulling()
  }

  @inlinable
  func runTimer() async {
    while let deadline = await nextDeadline() {
      do {
        try await clock.sleep(until: deadline, tolerance: nil)
      } catch {
        return
      }
      let now = clock.now
      perform(state.withLock { $0.timerFired(at: now) })
    }
  }

  /// Waits until the logic has a deadline; `nil` once the operator is over.
  @inlinable
  func nextDeadline() async -> C.Instant? {
    await withTaskCancellationHandler {
      await withOrderedContinuation { (continuation: UnsafeContinuation<C.Instant?, Never>) in
        if let (timer, deadline) = state.withLock({ $0.timerWaits(continuation, isCancelled: Task.isCancelled) }) {
          timer.resume(returning: deadline)
        }
      }
    } onCancel: {
      state.withLock { $0.timerCancelled() }?.resume(returning: nil)
    }
  }
}

/// The consumer's end of one iteration: releasing it (leaving the loop) ends the iteration as a
/// cancellation does. Generic over what it delivers only, so that one public iterator serves
/// every operator on the life cycle.
@usableFromInline
final class OperatorConsumer<Output, Failure: Error> {
  @usableFromInline
  let nextOutput: (isolated (any Actor)?) async throws(Failure) -> Output?
  @usableFromInline
  let cancelIteration: @Sendable () -> Void
  /// The storage, as what counts the input elements its logic dropped.
  @usableFromInline
  let drops: any OperatorDropCount

  @inlinable
  convenience init<Logic: OperatorLogic, C: Clock>(
    _ storage: OperatorStorage<Logic, C>, input: @escaping OperatorStorage<Logic, C>.Input
  ) where Logic.Output == Output, Logic.Failure == Failure {
    self.init(storage, inputs: [{ storage, _ in await input(storage) }])
  }

  /// The consumer of a many-input operator (`storage` made with `inputs: inputs.count`).
  @inlinable
  init<Logic: OperatorLogic, C: Clock>(
    _ storage: OperatorStorage<Logic, C>, inputs: [OperatorStorage<Logic, C>.IndexedInput]
  ) where Logic.Output == Output, Logic.Failure == Failure {
    nextOutput = { (actor: isolated (any Actor)?) async throws(Failure) -> Output? in
      try await storage.next(isolation: actor, inputs: inputs)
    }
    cancelIteration = { storage.cancel() }
    drops = storage
  }

  deinit {
    // Nobody waits for the task: it ends (and runs a cleanup) on its own, soon after.
    cancelIteration()
  }

  @inlinable
  func cancel() {
    cancelIteration()
  }

  @inlinable
  func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Output? {
    // Nothing is delivered after cancellation, not even what is buffered.
    if Task.isCancelled { cancel() }
    return try await nextOutput(actor)
  }
}

extension OperatorConsumer: BatchSource {
  /// The consumer of an operator whose outputs are batches (`Flow.merge`) is the source of its
  /// ``BatchConsumer``.
  @inlinable
  func nextBatch(isolation actor: isolated (any Actor)?) async throws(Failure) -> Output? {
    try await next(isolation: actor)
  }
}

/// What an iteration's storage counts of the input elements its logic dropped (displaced or
/// refused while running), read by its consumer, after the end too.
@usableFromInline
protocol OperatorDropCount: AnyObject, Sendable {
  var droppedCount: Int { get }
}

extension OperatorStorage: OperatorDropCount {
  @usableFromInline
  var droppedCount: Int { state.withLock { $0.dropped } }
}
