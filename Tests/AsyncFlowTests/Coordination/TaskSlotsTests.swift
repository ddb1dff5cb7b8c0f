import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

@Suite("TaskSlots and Generation", .hangGuard)
struct TaskSlotsTests {
  @Test func latestWinsCancelsTheOldTaskBeforeTheNewOneStarts() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let log = EventLog<String>()
    let first = slots.run("load") {
      await gate.wait()  // returns once cancelled
      log.append("first ended, cancelled: \(Task.isCancelled)")
    }
    await gate.entered()
    let firstTask = first!
    let second = slots.run("load") {
      log.append("second started, first cancelled: \(firstTask.isCancelled)")
      await gate.wait()
    }
    await bounded(run: first, "first")
    // The superseded task's completion left its successor in the slot.
    #expect(slots.isRunning("load"))
    #expect(slots.runningCount == 1)
    await gate.entered()
    gate.release()
    await bounded(run: second, "second")
    #expect(log.all.contains("second started, first cancelled: true"))
    #expect(log.all.contains("first ended, cancelled: true"))
    #expect(slots.runningCount == 0)
  }

  @Test func firstWinsIgnoresNewTasksWhileOneRuns() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let runs = LockedState(0)
    let first = slots.run("submit", policy: .firstWins) {
      runs.withLock { $0 += 1 }
      await gate.wait()
    }
    await gate.entered()
    #expect(slots.run("submit", policy: .firstWins) { runs.withLock { $0 += 1 } } == nil)
    gate.release()
    await bounded(run: first, "first")
    let third = slots.run("submit", policy: .firstWins) { runs.withLock { $0 += 1 } }
    #expect(third != nil)
    await bounded(run: third, "third")
    #expect(runs.withLock { $0 } == 2)
  }

  @Test func queueRunsOneAtATimeInCallOrder() async {
    let slots = TaskSlots<String>()
    let log = EventLog<String>()
    var tasks: [Task<Void, Never>] = []
    for index in 1...3 {
      tasks.append(
        slots.run("save", policy: .queue) {
          log.append("start \(index)")
          await Task.yield()
          log.append("end \(index)")
        }!)
    }
    for task in tasks { await bounded(task, "task") }
    #expect(log.all == ["start 1", "end 1", "start 2", "end 2", "start 3", "end 3"])
  }

  @Test func cancellingAQueueCancelsTheRunningTaskAndDropsTheQueuedOnes() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let log = EventLog<String>()
    var tasks: [Task<Void, Never>] = []
    for index in 1...3 {
      tasks.append(
        slots.run("save", policy: .queue) {
          log.append("start \(index)")
          await gate.wait()
        }!)
    }
    await gate.entered()
    slots.cancel("save")
    #expect(slots.runningCount == 0)
    for task in tasks { await bounded(task, "task") }
    #expect(log.all == ["start 1"])
    // Nothing is left waiting on the identity.
    #expect(slots.storage.state.withLock { $0.slots.isEmpty })
  }

  @Test func aQueuedTaskAfterLatestWinsWaitsOnlyForTheTaskStillRegistered() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let log = EventLog<String>()
    let first = slots.run("save", policy: .queue) {
      log.append("q1")
      await gate.wait()  // returns once cancelled
    }!
    await gate.entered()
    let second = slots.run("save", policy: .queue) { log.append("q2") }!  // waits for q1
    let latest = slots.run("save") { log.append("latest") }!  // supersedes q1 and q2
    let third = slots.run("save", policy: .queue) { log.append("q3") }!  // waits for latest only
    for task in [first, second, latest, third] { await bounded(task, "task") }
    let order = log.all
    #expect(order.firstIndex(of: "latest")! < order.firstIndex(of: "q3")!)
    #expect(slots.runningCount == 0)
    #expect(slots.storage.state.withLock { $0.slots.isEmpty })
  }

  @Test func runningTheListenerSevenTimesLeavesExactlyOne() async {
    let slots = TaskSlots<String>()
    let messages = PassthroughFlow<String, Never>()
    let received = LockedState<[String: Int]>([:])
    let gotOne = Signal()
    var listeners: [Task<Void, Never>] = []
    for _ in 0..<7 {  // an onAppear that fires seven times
      listeners.append(
        slots.run("listener") {
          for await message in messages {
            received.withLock { $0[message, default: 0] += 1 }
            gotOne.fire()
          }
        }!)
    }
    for superseded in listeners.dropLast() { await bounded(superseded, "superseded") }  // the six superseded ones ended
    await messages.subscribers(count: 1)  // the seventh listens
    #expect(messages.subscriberCount == 1)
    messages.send("hello")
    await gotOne.wait()
    messages.finish()
    await listeners.last!.value
    #expect(slots.runningCount == 0)
    #expect(received.withLock { $0 } == ["hello": 1])
  }

  @Test func identitiesNeverAffectEachOther() async {
    let slots = TaskSlots<Int>()
    let gate = Gate()
    let done = LockedState(0)
    var tasks: [Task<Void, Never>] = []
    for row in 0..<100 {
      tasks.append(
        slots.run(row) {
          await gate.wait()
          if !Task.isCancelled { done.withLock { $0 += 1 } }
        }!)
    }
    await gate.entered(count: 100)
    #expect(slots.runningCount == 100)
    gate.release()
    for task in tasks { await bounded(task, "task") }
    #expect(done.withLock { $0 } == 100)
    #expect(slots.runningCount == 0)
  }

  @Test func cancelAllAndReleasingTheSlotsCancelEveryTask() async {
    let gate = Gate()
    var slots: TaskSlots<Int>? = TaskSlots<Int>()
    var tasks: [Task<Void, Never>] = []
    for id in 0..<3 { tasks.append(slots!.run(id) { await gate.wait() }!) }
    await gate.entered(count: 3)
    slots!.cancelAll()
    #expect(slots!.runningCount == 0)
    for task in tasks { await bounded(task, "task") }

    tasks = []
    for id in 0..<3 { tasks.append(slots!.run(id, policy: .concurrent) { await gate.wait() }!) }
    await gate.entered(count: 3)
    slots = nil  // tasks end with their owner
    for task in tasks {
      await bounded(task, "task")
      #expect(task.isCancelled)
    }
  }

  /// Started inside `clock.task { }`, a slot's task runs on the clock's executor: after
  /// `runCurrent()` it has run until its sleep, and `advance(by:)` wakes it, with no waiting loop.
  @Test func aTaskStartedUnderATestClockFollowsItsSchedule() async {
    let clock = TestClock()
    let slots = TaskSlots<String>()
    let log = EventLog<String>()
    clock.task {
      slots.run("tick") {
        let preferred = FlowScheduling.executor.map { $0.asUnownedTaskExecutor() }
        let running = withUnsafeCurrentTask { $0?.unownedTaskExecutor }
        log.append(preferred != nil && running == preferred ? "on the clock's executor" : "elsewhere")
        try? await clock.sleep(for: .seconds(1))
        log.append("woke")
      }
    }
    await clock.runCurrent()
    #expect(log.all == ["on the clock's executor"])
    #expect(clock.pendingSleepers == 1)
    await clock.advance(by: .seconds(1))
    #expect(log.all == ["on the clock's executor", "woke"])
  }

  /// Started on the clock's executor, a `@MainActor` operation still runs on the main actor.
  @Test func aMainActorOperationRunsOnTheMainActorUnderATestClock() async {
    let clock = TestClock()
    let slots = TaskSlots<String>()
    let model = await MainActor.run { MainActorCounter() }
    let task = await clock.task {
      slots.run("count") { @MainActor in
        MainActor.assertIsolated()
        model.count += 1
      }
    }.value
    await bounded(run: task, "task")
    #expect(await model.count == 1)
  }

  /// A model owns its slots: releasing the model mid-run cancels the task it started.
  @Test func aModelReleasedMidRunCancelsItsTask() async {
    let gate = Gate()
    var model: SlotsModel? = await MainActor.run { SlotsModel() }
    let task = await model!.load(gate: gate)
    await gate.entered()
    #expect(!task.isCancelled)
    model = nil  // the last reference: the model, then its TaskSlots, deinit
    _ = model
    await bounded(task, "task")  // returns: the gate lets a cancelled waiter go
    #expect(task.isCancelled)
  }

  /// `latestWins` does not wait for the task it cancels: here the first task's cleanup waits for
  /// the second task to start, which would never happen if it did. The second waits for the first
  /// by awaiting its task, as `run`'s documentation says.
  @Test func latestWinsDoesNotWaitForTheCancelledTaskUnlessTheNewOneAwaitsIt() async {
    let slots = TaskSlots<String>()
    let running = Gate()
    let secondStarted = Signal()
    let log = EventLog<String>()
    let first = slots.run("load") {
      await running.wait()  // returns once cancelled
      await secondStarted.wait()  // cleanup that outlives the cancellation
      log.append("first cleaned up")
    }!
    await running.entered()
    let second = slots.run("load") {
      log.append("second started")
      secondStarted.fire()
      await bounded(first, "first")
      log.append("second saw the first end")
    }!
    await bounded(second, "second")
    #expect(log.all == ["second started", "first cleaned up", "second saw the first end"])
  }

  // MARK: Mixed policies on one identity

  /// The grid with real tasks: a run of `existing`'s policy is parked in a gate, then a run of
  /// `new`'s policy comes under the same identity.
  @Test(arguments: TaskSlotsStateMachineTests.policies, TaskSlotsStateMachineTests.policies)
  func aNewRunOnABusyIdentityFollowsItsOwnPolicy(existing: SlotPolicy, new: SlotPolicy) async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let log = EventLog<String>()
    let old = slots.run("id", policy: existing) {
      await gate.wait()
      log.append(Task.isCancelled ? "old cancelled" : "old ended")
    }!
    await gate.entered()
    let started = slots.run("id", policy: new) {
      log.append("new started")
      if new == .concurrent { await gate.wait() }  // proves both run at once
    }
    switch new {
    case .latestWins:
      await bounded(old, "old")
      await bounded(run: started, "started")
      #expect(old.isCancelled)
      #expect(Set(log.all) == ["old cancelled", "new started"])
    case .firstWins:
      #expect(started == nil)
      gate.release()
      await bounded(old, "old")
      #expect(log.all == ["old ended"])
    case .queue:
      gate.release()
      await bounded(run: started, "started")
      #expect(log.all == ["old ended", "new started"])  // after the old one, never beside it
    default:
      await gate.entered(count: 2)  // the new one is parked while the old one still is
      gate.release()
      await bounded(old, "old")
      await bounded(run: started, "started")
      #expect(!old.isCancelled)
      #expect(Set(log.all) == ["old ended", "new started"])
    }
    #expect(slots.runningCount == 0)
  }

  @Test func latestWinsCancelsTheRunningQueueTaskAndItsQueuedSuccessorsNeverRun() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let log = EventLog<String>()
    let running = slots.run("save", policy: .queue) {
      await gate.wait()
      log.append("running ended, cancelled: \(Task.isCancelled)")
    }!
    await gate.entered()
    let queued = slots.run("save", policy: .queue) { log.append("queued ran") }!
    let latest = slots.run("save") { log.append("latest ran") }!
    for task in [running, queued, latest] { await bounded(task, "task") }
    #expect(queued.isCancelled)
    #expect(Set(log.all) == ["running ended, cancelled: true", "latest ran"])
  }

  @Test func latestWinsCancelsAFirstWinsRunInFlight() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let submit = slots.run("form", policy: .firstWins) { await gate.wait() }!
    await gate.entered()
    let refresh = slots.run("form") {}
    await bounded(submit, "submit")
    await bounded(run: refresh, "refresh")
    #expect(submit.isCancelled)  // why writes get an identity of their own
  }

  // MARK: The run token

  @Test func aRunIsLatestUntilANewerRunIsRegistered() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let seen = EventLog<Bool>()
    let first = slots.run("load") { run in
      seen.append(run.isLatest)
      await gate.wait()  // cancelled by the second run
      seen.append(run.isLatest)
    }!
    await gate.entered()
    let second = slots.run("load") { run in
      await gate.wait()
      seen.append(run.isLatest)
    }!
    await bounded(first, "first")
    await gate.entered()
    gate.release()
    await bounded(second, "second")
    #expect(seen.all == [true, false, true])
  }

  @Test func aCancelledRunWithNothingAfterItIsStillLatest() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let seen = EventLog<String>()
    let task = slots.run("load") { run in
      await gate.wait()
      seen.append("cancelled \(Task.isCancelled), latest \(run.isLatest), id \(run.id)")
    }!
    await gate.entered()
    slots.cancel("load")
    await bounded(task, "task")
    #expect(seen.all == ["cancelled true, latest true, id load"])
  }

  // MARK: The running state as a flow

  @Test func isRunningFlowDeliversTheCurrentStateThenChangesWithoutRepeats() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    var states = slots.isRunningFlow("load").makeAsyncIterator()
    #expect(await next(&states) == false)
    let first = slots.run("load") { await gate.wait() }!
    #expect(await next(&states) == true)
    let second = slots.run("load") { await gate.wait() }!  // replaces the first: still running
    await bounded(first, "first")
    await gate.entered()
    #expect(slots.run("other") {} != nil)  // another identity: not reported
    gate.release()
    await bounded(second, "second")
    #expect(await next(&states) == false)
    // A run that starts and ends while the consumer is busy is conflated away: the state is
    // `false` again when it asks. So the third run is held until the consumer has seen it.
    let third = slots.run("load") { await gate.wait() }!
    #expect(await next(&states) == true)
    await gate.entered()
    gate.release()
    await bounded(third, "third")
    #expect(await next(&states) == false)
  }

  @Test func isRunningFlowTurnsFalseWhenTheIdentityIsCancelled() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    var states = slots.isRunningFlow("load").makeAsyncIterator()
    _ = slots.run("load") { await gate.wait() }
    #expect(await next(&states) == true)
    slots.cancel("load")
    #expect(await next(&states) == false)
    _ = slots.run("load") { await gate.wait() }
    #expect(await next(&states) == true)
    slots.cancelAll()
    #expect(await next(&states) == false)
  }

  @Test func isRunningFlowFinishesWhenTheSlotsAreReleased() async {
    let gate = Gate()
    var slots: TaskSlots<String>? = TaskSlots<String>()
    let states = slots!.isRunningFlow("load")
    let consumer = Task {
      var seen: [Bool] = []
      for await running in states { seen.append(running) }
      return seen
    }
    let task = slots!.run("load") { await gate.wait() }!
    await gate.entered()
    slots = nil
    await bounded(task, "task")
    // What the consumer saw first depends on when it first asked; it ends on `false` either way.
    guard let seen = await bounded(consumer, "consumer") else { return }
    #expect([[false], [true, false], [false, true, false]].contains(seen))
  }

  @Test func isRunningFlowFinishesWhenItsConsumerIsCancelled() async {
    let slots = TaskSlots<String>()
    let states = slots.isRunningFlow("load")
    let consumer = Task {
      var seen: [Bool] = []
      for await running in states { seen.append(running) }
      return seen
    }
    consumer.cancel()
    guard let seen = await bounded(consumer, "consumer") else { return }
    #expect(seen.count <= 1)
    #expect(slots.storage.state.withLock { $0.slots.isEmpty })
  }

  /// Parked for sure: a task on the clock's executor has run until it suspended once
  /// `runCurrent()` returns. Its cancellation resumes it once, with the end, and removes its watcher.
  @Test func isRunningFlowFinishesWhenItsConsumerIsCancelledWhileParked() async {
    let clock = TestClock()
    let slots = TaskSlots<String>()
    let states = slots.isRunningFlow("load")
    let consumer = clock.task {
      var seen: [Bool] = []
      for await running in states { seen.append(running) }
      return seen
    }
    await clock.runCurrent()
    #expect(slots.storage.state.withLock { $0.slots["load"]?.watchers.count } == 1)
    consumer.cancel()
    #expect(await bounded(consumer, "consumer") == [false])
    #expect(slots.storage.state.withLock { $0.slots.isEmpty })
    // The state changes after the cancellation: nobody is left to resume.
    #expect(slots.run("load") {} != nil)
  }

  // MARK: Spinners under latestWins

  /// The second refresh supersedes the first; the first's cleanup runs while the second's request
  /// is in flight. The naive `defer` turns the spinner off then; the token and the binding keep it.
  @Test(arguments: SpinnerModel.Style.allCases)
  @MainActor func aSupersededRefreshLeavesItsSuccessorsSpinnerOn(style: SpinnerModel.Style) async {
    let clock = TestClock()
    let calls = ControlledCalls<Int, Void>(whenCancelled: ())
    let model = SpinnerModel(style: style) { await calls.call($0) }
    await clock.onSchedule { model.bind() }
    await clock.runCurrent()
    #expect(!model.isRefreshing)
    let first = await clock.onSchedule { model.refresh() }
    await calls.calls(count: 1)
    await clock.runCurrent()
    #expect(model.isRefreshing)
    let second = await clock.onSchedule { model.refresh() }
    await bounded(run: first, "first")  // superseded: its call returned at its cancellation, its cleanup ran
    await calls.calls(count: 2)
    await clock.runCurrent()
    #expect(model.isRefreshing == (style != .naiveDefer), "the second refresh is in flight")
    calls.respond(toCall: 1, with: ())
    await bounded(run: second, "second")
    await clock.runCurrent()
    #expect(!model.isRefreshing)
    // Cancelled with nothing after it: the spinner goes off too.
    _ = await clock.onSchedule { model.refresh() }
    await calls.calls(count: 3)
    await clock.runCurrent()
    #expect(model.isRefreshing)
    model.cancelRefresh()
    await clock.runCurrent()
    #expect(!model.isRefreshing)
  }

  /// A run cancelled in the step that started it, before its task got going: its operation never
  /// starts, so neither does its `defer`. The token's spinner must still end up off, which is why
  /// the guide turns it on inside the operation rather than before `run`.
  @Test func aRunCancelledBeforeItsOperationStartsLeavesTheTokenSpinnerOff() async {
    let clock = TestClock()
    let slots = TaskSlots<String>()
    let isRefreshing = LockedState(false)
    let operationRan = LockedState(false)
    // Nonisolated, so this block runs on the clock's serial executor: the run's task, which
    // starts on that executor too, cannot check for cancellation before `cancel` below.
    let task = await clock.onSchedule {
      let task = slots.run("refresh") { run in
        isRefreshing.withLock { $0 = true }
        defer { if run.isLatest { isRefreshing.withLock { $0 = false } } }
        operationRan.withLock { $0 = true }
      }
      slots.cancel("refresh")
      return task
    }
    await bounded(run: task, "task")
    #expect(!operationRan.withLock { $0 })
    #expect(!isRefreshing.withLock { $0 })
  }

  @Test func generationTokensGoStaleWhenItAdvances() {
    var generation = Generation()
    let loadMore = generation.current
    #expect(generation.isCurrent(loadMore))
    let refresh = generation.advance()
    #expect(!generation.isCurrent(loadMore))
    #expect(generation.isCurrent(refresh))
    #expect(generation.current == refresh)
  }
}

/// Advances an iterator inside `#expect`, which cannot call a mutating method itself.
private func next(_ iterator: inout Flow<Bool, Never>.Iterator) async -> Bool? {
  await iterator.next()
}

@MainActor
private final class MainActorCounter {
  var count = 0
}

@MainActor
private final class SlotsModel {
  private let slots = TaskSlots<String>()

  func load(gate: Gate) -> Task<Void, Never> {
    slots.run("load") { await gate.wait() }!
  }
}

/// A refreshing model written three ways: the naive `defer`, the run token, and the bound running
/// state.
@MainActor
final class SpinnerModel {
  enum Style: CaseIterable, Sendable { case naiveDefer, token, binding }

  private(set) var isRefreshing = false
  private let style: Style
  private let fetch: @Sendable (Int) async -> Void
  private let slots = TaskSlots<String>()
  private var subscriptions = Set<FlowSubscription>()
  private var refreshes = 0

  init(style: Style, fetch: @escaping @Sendable (Int) async -> Void) {
    self.style = style
    self.fetch = fetch
  }

  func bind() {
    guard style == .binding else { return }
    slots.isRunningFlow("refresh").assignFlow(to: \.isRefreshing, on: self).store(in: &subscriptions)
  }

  func refresh() -> Task<Void, Never>? {
    refreshes += 1
    let (fetch, number) = (self.fetch, refreshes)
    switch style {
    case .naiveDefer:
      isRefreshing = true
      return slots.run("refresh") { @MainActor [weak self] in
        defer { self?.isRefreshing = false }  // wrong: a superseded run turns its successor's spinner off
        await fetch(number)
      }
    case .token:
      return slots.run("refresh") { @MainActor [weak self] run in
        self?.isRefreshing = true  // not before `run`: a run cancelled before it starts runs no cleanup
        defer { if run.isLatest { self?.isRefreshing = false } }
        await fetch(number)
      }
    case .binding:
      return slots.run("refresh") { await fetch(number) }
    }
  }

  func cancelRefresh() {
    slots.cancel("refresh")
  }
}
