import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `FlowOwner`: closing refuses new work in every member, and a shutdown cancels what runs and
/// returns only once every task the library started for its members has ended, or at its deadline
/// with what is left. Each test forces its order with gates and signals.
@Suite("FlowOwner", .hangGuard)
struct FlowOwnerTests {
  // MARK: Closing

  @Test func aClosedOwnersSlotsRefuseRunsAndLeaveTheRunsInFlightRunning() async {
    let owner = FlowOwner()
    let slots = TaskSlots<String>(owner: owner)
    let request = Gate()
    let log = EventLog<String>()
    let inFlight = slots.run("feed") {
      await request.wait()
      log.append("in flight ended, cancelled: \(Task.isCancelled)")
    }
    await request.entered()
    owner.close()
    #expect(owner.isClosed)
    #expect(slots.run("other") { log.append("refused run began") } == nil)
    let refused: Int? = await slots.runAndWait("other", policy: .queue) {
      log.append("refused runAndWait began")
      return 1
    }
    #expect(refused == nil)
    #expect(slots.isRunning("feed"))
    request.release()
    await bounded(run: inFlight)
    #expect(log.all == ["in flight ended, cancelled: false"])
    #expect(slots.runningCount == 0)
  }

  @Test func aClosedOwnersSingleFlightRefusesStartsAndJoins() async {
    let owner = FlowOwner()
    let flights = SingleFlight<String, Int, Never>(owner: owner)
    let request = Gate()
    let first = Task {
      await flights.run("profile") {
        await request.wait()
        return 1
      }
    }
    await request.entered()
    owner.close()
    let joined = await flights.run("profile") { 2 }
    let started = await flights.run("other") { 3 }
    #expect(joined == nil)
    #expect(started == nil)
    request.release()
    #expect(await bounded(first, "the first caller") == 1)
  }

  @Test func aClosedOwnersSubjectFinishesAndANewSubscriberFinishesAtOnce() async {
    let owner = FlowOwner()
    let subject = PassthroughFlow<Int, Never>(owner: owner)
    var iterator = subject.makeAsyncIterator()
    subject.send(1)
    owner.close()
    subject.send(2)  // ignored: the subject finished
    #expect(await iterator.next() == 1)
    #expect(await iterator.next() == nil)
    var late = subject.makeAsyncIterator()
    #expect(await late.next() == nil)
    let made = CurrentValueFlow(0, owner: owner)  // made with a closed owner: finished at once
    var current = made.makeAsyncIterator()
    #expect(await current.next() == nil)
  }

  // MARK: Shutting down

  /// The run ignores its cancellation for a while (its cleanup): the shutdown returns only after it.
  @Test func aShutdownReturnsOnlyAfterTheLastRunsTaskHasEnded() async {
    let owner = FlowOwner()
    let slots = TaskSlots<String>(owner: owner)
    let flights = SingleFlight<String, Int, Never>(owner: owner)
    let slotRequest = Gate()
    let flightRequest = Gate()
    let cleanup = Signal()
    let log = EventLog<String>()
    let waiting = Task {
      await slots.runAndWait("feed") { () -> Int in
        await slotRequest.wait()  // returns once cancelled
        await cleanup.wait()
        log.append("slot run ended")
        return 1
      }
    }
    let caller = Task {
      await flights.run("profile") {
        await flightRequest.wait()
        await cleanup.wait()
        log.append("flight ended")
        return 1
      }
    }
    await slotRequest.entered()
    await flightRequest.entered()
    let shutdown = Task {
      let report = await owner.shutdown()
      log.append("shutdown returned")
      return report
    }
    // Cancelled: the single flight's caller gets `nil` at once; the slots' caller when its run ended.
    #expect(await bounded(caller, "the flight's caller") == .some(nil))
    #expect(await Reentry.eventually { owner.state.withLock { $0.alive[OwnedWork.run.rawValue] } == 2 })
    #expect(log.all.isEmpty)
    cleanup.fire()
    let report = await bounded(shutdown, "the shutdown")
    #expect(report?.isComplete == true)
    #expect(Set(log.all.prefix(2)) == ["slot run ended", "flight ended"])
    #expect(log.all.last == "shutdown returned")
    #expect(await bounded(waiting, "the slots' caller") == .some(nil))
  }

  /// A share's upstream that takes time to end once cancelled: the shutdown waits for it, and the
  /// subscribers finish.
  @Test func aShutdownReturnsOnlyAfterTheShareUpstreamsTaskHasEnded() async {
    let owner = FlowOwner()
    let cleanup = Signal()
    let log = EventLog<String>()
    let upstream = Flow<Int, Never> { emitter in
      await emitter.emit(1)
      await Gate().wait()  // returns once cancelled
      await cleanup.wait()
      log.append("upstream ended")
    }
    let share = upstream.shareFlow(replay: 1, owner: owner)
    let keyed = KeyedShareFlow(owner: owner) { (key: String) in upstream }
    var iterator = share.makeAsyncIterator()
    #expect(await iterator.next() == 1)
    var keyIterator = keyed["a"].makeAsyncIterator()
    #expect(await keyIterator.next() == 1)
    let shutdown = Task {
      let report = await owner.shutdown()
      log.append("shutdown returned")
      return report
    }
    #expect(await iterator.next() == nil)
    #expect(await keyIterator.next() == nil)
    var late = share.makeAsyncIterator()
    #expect(await late.next() == nil)  // finished at once
    #expect(log.all.isEmpty)
    cleanup.fire()
    #expect(await bounded(shutdown, "the shutdown")?.isComplete == true)
    #expect(log.all == ["upstream ended", "upstream ended", "shutdown returned"])
  }

  /// The run ignores its cancellation: at the deadline the shutdown returns what is left.
  @Test func aShutdownReturnsAtItsDeadlineWithWhatIsLeft() async {
    let clock = TestClock()
    let owner = FlowOwner()
    let slots = TaskSlots<String>(owner: owner)
    let release = Signal()
    let entered = Signal()
    let run = slots.run("stuck") {
      entered.fire()
      await release.wait()  // not cancellable
    }
    await entered.wait()
    let shutdown = clock.task { await owner.shutdown(timeout: .seconds(5), clock: clock) }
    await clock.runCurrent()
    #expect(clock.pendingSleepers == 1)
    await clock.advance(by: .seconds(4))
    #expect(clock.pendingSleepers == 1)
    await clock.advance(by: .seconds(1))
    let report = await bounded(shutdown, "the shutdown")
    #expect(report == FlowShutdownReport(left: [1, 0, 0, 0]))
    #expect(report?.isComplete == false)
    #expect("\(report!)" == "FlowShutdownReport(runs: 1, upstreams: 0, deliveries: 0, calls: 0)")
    release.fire()
    await bounded(run: run)
    #expect(await owner.shutdown(timeout: .zero, clock: clock).isComplete)
  }

  /// A sink's delivery of the end is awaited; the grace timer of a share made with the owner too.
  @Test func aShutdownWaitsForTheSinksDeliveryOfTheEnd() async {
    let owner = FlowOwner()
    let subject = PassthroughFlow<Int, Never>(owner: owner)
    let inClosure = Gate()
    let log = EventLog<String>()
    let subscription = subject.sink(receiveCompletion: { _ in log.append("completion") }) { value in
      await inClosure.wait()
      log.append("got \(value)")
    }
    subject.send(1)
    await inClosure.entered()
    let shutdown = Task {
      let report = await owner.shutdown()
      log.append("shutdown returned")
      return report
    }
    #expect(await Reentry.eventually { owner.state.withLock { $0.isClosed } })
    #expect(log.all.isEmpty)
    inClosure.release()
    #expect(await bounded(shutdown, "the shutdown")?.isComplete == true)
    #expect(log.all == ["got 1", "completion", "shutdown returned"])
    subscription.cancel()
  }

  /// The caller's cancellation ends the wait, with what is left then.
  @Test func aCancelledShutdownReturnsAtOnceWithWhatIsLeft() async {
    let owner = FlowOwner()
    let slots = TaskSlots<String>(owner: owner)
    let release = Signal()
    let entered = Signal()
    let run = slots.run("stuck") {
      entered.fire()
      await release.wait()
    }
    await entered.wait()
    let report = await inCancelledTask { await owner.shutdown() }
    #expect(report?.runs == 1)
    release.fire()
    await bounded(run: run)
  }

  // MARK: Admission racing the shutdown

  /// Callers on several threads while the owner shuts down: each call is refused (its operation
  /// never begins) or admitted, and then its operation has ended when the shutdown returns.
  @Test func everyCallRacingTheShutdownIsRefusedOrAwaitedOnRealThreads() async {
    for round in 0..<200 where !Task.isCancelled {
      let owner = FlowOwner()
      let slots = TaskSlots<Int>(owner: owner)
      let flights = SingleFlight<Int, Int, Never>(owner: owner)
      let probe = ShutdownProbe()
      let done = [Reentry.Flag(), Reentry.Flag()]
      for (thread, flag) in done.enumerated() {
        Reentry.onThread(setting: flag) {
          for call in 0..<50 {
            let id = thread * 1_000 + call
            slots.run(id % 3, policy: .concurrent) { await probe.operation() }
            Task {
              _ = await flights.run(id % 3) {
                await probe.operation()
                return 0
              }
            }
          }
        }
      }
      let report = await owner.shutdown()
      probe.shutdownReturned(report)
      for flag in done { #expect(await Reentry.isSetSoon(flag)) }
      let failures = probe.failures
      #expect(failures.isEmpty, "round \(round): \(failures.prefix(3))")
      if !failures.isEmpty { break }
    }
  }

  /// The shutdown starts while a call is between its member's decision to start a run and the
  /// start of the run's task (the seam runs the shutdown's first step there: close, cancel every
  /// member's work): the call's ticket is still held, so the shutdown waits for the run, and no
  /// operation begins after it returned.
  @Test(arguments: ["TaskSlots", "SingleFlight"])
  func aShutdownBetweenACallsDecisionAndItsStartAwaitsTheRun(member: String) async {
    let probe = ShutdownProbe()
    let ownerBox = LockedState<FlowOwner?>(nil)
    let owner = FlowOwner(decided: {
      guard let owner = ownerBox.withLock({ $0.take() }) else { return }
      owner.cancelMembers()
      if owner.state.withLock({ $0.total }) == 0 { probe.fail("a shutdown would return before the run started") }
    })
    ownerBox.withLock { $0 = owner }
    if member == "TaskSlots" {
      let slots = TaskSlots<String>(owner: owner)
      await bounded(run: slots.run("feed") { await probe.operation() })
    } else {
      let flights = SingleFlight<String, Int, Never>(owner: owner)
      let call = Task {
        await flights.run("feed") {
          await probe.operation()
          return 1
        }
      }
      #expect(await bounded(call, "the call") == .some(nil))  // cancelled by the shutdown
    }
    probe.shutdownReturned(await owner.shutdown())
    #expect(probe.failures.isEmpty, "\(probe.failures)")
  }

  /// The same race on the test clock's schedule, at each point a caller can be at: the call is made
  /// in the same step as the shutdown starts, before it, or while the run's task is pending.
  @Test func aCallBetweenItsCheckAndItsStartIsAwaitedOnTheClock() async {
    let clock = TestClock()
    let owner = FlowOwner()
    let slots = TaskSlots<String>(owner: owner)
    let probe = ShutdownProbe()
    // The run is registered and its task is pending on the clock's executor, not started yet.
    let run = await clock.onSchedule { slots.run("feed") { await probe.operation() } }
    #expect(run != nil)
    let shutdown = clock.task {
      let report = await owner.shutdown()
      probe.shutdownReturned(report)
      return report
    }
    await clock.runCurrent()
    #expect(await bounded(shutdown, "the shutdown")?.isComplete == true)
    #expect(probe.failures.isEmpty, "\(probe.failures)")
    #expect(await clock.onSchedule { slots.run("feed") { await probe.operation() } } == nil)
  }
}

/// What the race tests check: no operation begins after the shutdown returned, and every one that
/// began had ended by then.
final class ShutdownProbe: Sendable {
  private struct State {
    var running = 0
    var returned = false
    var failures: [String] = []
  }

  private let state = LockedState(State())

  func operation() async {
    state.withLock { state in
      if state.returned { state.failures.append("an operation began after the shutdown returned") }
      state.running += 1
    }
    await Task.yield()
    state.withLock { $0.running -= 1 }
  }

  func shutdownReturned(_ report: FlowShutdownReport) {
    state.withLock { state in
      state.returned = true
      if state.running > 0 { state.failures.append("\(state.running) operations ran when the shutdown returned") }
      if !report.isComplete { state.failures.append("the report is \(report)") }
    }
  }

  var failures: [String] { state.withLock { $0.failures } }

  func fail(_ failure: String) { state.withLock { $0.failures.append(failure) } }
}
