import Testing

@testable import AsyncFlow

/// Tasks to hand to the machine: it only stores and returns them.
private let upstreamTask = 100
private let timerTask = 103

private func same(_ lhs: Int?, _ rhs: Int) -> Bool { lhs == rhs }

/// Where the upstream's task is reported to start its grace timers: the machine only stores it and
/// hands it back with the grace timer to ask for.
private let upstreamTimers = GraceTimerStarter()

private func same(_ lhs: GraceTimerStarter?, _ rhs: GraceTimerStarter) -> Bool { lhs === rhs }

/// The grace-period cells of ``SubjectStateMachine``'s grid: the new state `lingering` (upstream
/// task known or still being created, timer task known or not) against every event that reaches
/// it, and the events that lead into it from `starting` and `running`.
@Suite("SubjectStateMachine: shareFlow's grace period", .hangGuard)
struct ShareGracePeriodStateMachineTests {
  typealias Machine = SubjectStateMachineTests.Machine

  /// A share with a grace period whose subscriber asked: the upstream is starting, or (`started`)
  /// running.
  private static func subscribed(started: Bool, replayLimit: Int = 1) -> (Machine, subscriber: Int, generation: Int) {
    var machine = Machine(sharingWith: .unbounded, replayLimit: replayLimit, hasGracePeriod: true)
    let id = machine.subscribe().id
    var batch: [Int] = []
    guard case .startUpstream(let generation) = machine.next(id, swapping: &batch) else {
      preconditionFailure("expected startUpstream")
    }
    if started {
      precondition(machine.upstreamStarted(upstreamTask, generation: generation, timers: upstreamTimers).isKept)
    }
    return (machine, id, generation)
  }

  /// The last subscriber left: the machine lingers, with its timer's task reported or not. Left
  /// while the upstream's task was being created (`started: false`), it has no timer to start yet:
  /// `timer` is then the one `upstreamStarted` will ask for.
  private static func lingering(
    started: Bool = true, timerReported: Bool = true
  ) -> (Machine, generation: Int, timer: Int) {
    var (machine, id, generation) = subscribed(started: started)
    _ = machine.upstreamElement(1, generation: generation)
    let action = machine.unsubscribe(id)
    guard case .lingering(let lingering)? = machine.upstream else { preconditionFailure("expected lingering") }
    guard started else {
      precondition(action.startGraceTimer == nil)
      return (machine, generation, lingering.timer)
    }
    guard let start = action.startGraceTimer, start.timer == lingering.timer else {
      preconditionFailure("expected startGraceTimer")
    }
    if timerReported { precondition(machine.graceTimerStarted(timerTask, timer: start.timer) == nil) }
    return (machine, generation, start.timer)
  }

  private static func isLingering(_ machine: Machine) -> Bool {
    if case .lingering? = machine.upstream { return true }
    return false
  }

  // MARK: Into lingering

  @Test func testLastUnsubscribe_whenRunning_lingersWithoutCancellingTheUpstream() {
    var (machine, id, _) = Self.subscribed(started: true)
    let action = machine.unsubscribe(id)
    #expect(action.cancelUpstream == nil)
    // The timer goes where the upstream's task runs, not where the last subscriber left from.
    #expect(same(action.startGraceTimer?.timers, upstreamTimers))
    guard case .lingering(let lingering)? = machine.upstream else {
      Issue.record("expected lingering, got \(machine.state)")
      return
    }
    #expect(lingering.timer == action.startGraceTimer?.timer)
    #expect(same(lingering.upstream, upstreamTask))
    #expect(lingering.timerTask == nil)
  }

  @Test func testLastUnsubscribe_whenStarting_lingersWithoutATimerUntilTheTaskReports() {
    var (machine, id, generation) = Self.subscribed(started: false)
    // The task, which starts the timer, is not known yet: the timer waits for it.
    #expect(machine.unsubscribe(id).startGraceTimer == nil)
    guard case .lingering(let before)? = machine.upstream else {
      Issue.record("expected lingering, got \(machine.state)")
      return
    }
    // The task reports: it is kept, not cancelled, and the timer is asked of it now.
    let start = machine.upstreamStarted(upstreamTask, generation: generation, timers: upstreamTimers)
      .startGraceTimer
    #expect(start?.timer == before.timer)
    #expect(same(start?.timers, upstreamTimers))
    guard case .lingering(let lingering)? = machine.upstream else {
      Issue.record("expected lingering, got \(machine.state)")
      return
    }
    #expect(same(lingering.upstream, upstreamTask))
    #expect(machine.graceTimerStarted(timerTask, timer: before.timer) == nil)
  }

  @Test func testLastUnsubscribe_whenStarting_thenUpstreamEnded_startsNoTimer() {
    // The upstream's task may run, and end, before its handle is reported.
    var (machine, id, generation) = Self.subscribed(started: false)
    _ = machine.unsubscribe(id)
    #expect(machine.upstreamEnded(failure: nil, generation: generation).cancelGraceTimer == nil)
    #expect(machine.upstreamStarted(upstreamTask, generation: generation).cancelled == upstreamTask)
    #expect(machine.isEnded)
  }

  @Test func testLastUnsubscribe_whenRunningAfterALingerWhileStarting_keepsWhereTheTaskStartsTimers() {
    // Left while starting, rejoined before the task reported, left again once it ran.
    var (machine, generation, _) = Self.lingering(started: false)
    let id = machine.subscribe().id
    #expect(machine.upstreamStarted(upstreamTask, generation: generation, timers: upstreamTimers).isKept)
    #expect(same(machine.unsubscribe(id).startGraceTimer?.timers, upstreamTimers))
  }

  @Test func testLastUnsubscribe_afterALingerThatRejoined_keepsWhereTheTaskStartsTimers() {
    var (machine, _, _) = Self.lingering()
    let id = machine.subscribe().id
    #expect(same(machine.unsubscribe(id).startGraceTimer?.timers, upstreamTimers))
  }

  @Test func testLastPushUnsubscribe_whenRunning_lingers() {
    var machine = Machine(sharingWith: .unbounded, replayLimit: 0, hasGracePeriod: true)
    let mailbox = SubjectStateMachineTests.mailbox()
    guard let generation = machine.subscribe(mailbox).startUpstream else {
      Issue.record("expected startUpstream")
      return
    }
    #expect(machine.upstreamStarted(upstreamTask, generation: generation, timers: upstreamTimers).isKept)
    let action = machine.unsubscribe(mailbox)
    #expect(action.cancelUpstream == nil)
    #expect(same(action.startGraceTimer?.timers, upstreamTimers))
    #expect(Self.isLingering(machine))
  }

  @Test func testUnsubscribe_whenOthersRemain_doesNotLinger() {
    var (machine, id, _) = Self.subscribed(started: true)
    _ = machine.subscribe()
    #expect(machine.unsubscribe(id).startGraceTimer == nil)
    guard case .running? = machine.upstream else {
      Issue.record("expected running, got \(machine.state)")
      return
    }
  }

  @Test func testLastUnsubscribe_withoutGracePeriod_stopsAtOnce() {
    var machine = Machine(sharingWith: .unbounded, replayLimit: 1)
    let id = machine.subscribe().id
    var batch: [Int] = []
    guard case .startUpstream(let generation) = machine.next(id, swapping: &batch) else { return }
    #expect(machine.upstreamStarted(upstreamTask, generation: generation).isKept)
    _ = machine.upstreamElement(1, generation: generation)
    let action = machine.unsubscribe(id)
    #expect(action.startGraceTimer == nil)
    #expect(same(action.cancelUpstream, upstreamTask))
    #expect(Array(action.releasedReplay) == [1])
    guard case .idle? = machine.upstream else {
      Issue.record("expected idle, got \(machine.state)")
      return
    }
  }

  // MARK: Events while lingering

  @Test func testGraceTimerStarted_whenLingering_keepsTheTask() {
    let (machine, _, _) = Self.lingering(timerReported: true)
    guard case .lingering(let lingering)? = machine.upstream else { return }
    #expect(same(lingering.timerTask, timerTask))
  }

  @Test func testSubscribe_whenLingering_joinsTheRunningUpstreamWithTheReplay() {
    var (machine, generation, _) = Self.lingering()
    let subscribed = machine.subscribe()
    let id = subscribed.id
    #expect(same(subscribed.cancelGraceTimer, timerTask))
    guard case .running(generation, let task, let timers)? = machine.upstream else {
      Issue.record("expected running(\(generation)), got \(machine.state)")
      return
    }
    #expect(same(task, upstreamTask))
    #expect(same(timers, upstreamTimers))
    var batch: [Int] = []
    guard case .deliver = machine.next(id, swapping: &batch) else {
      Issue.record("expected the replay")
      return
    }
    #expect(batch == [1])
  }

  @Test func testSubscribe_whenLingeringWhileStarting_goesBackToStarting() {
    var (machine, generation, _) = Self.lingering(started: false)
    _ = machine.subscribe()
    guard case .starting(generation)? = machine.upstream else {
      Issue.record("expected starting(\(generation)), got \(machine.state)")
      return
    }
  }

  @Test func testSubscribe_whenLingeringBeforeTheTimerReported_cancelsTheTimerWhenItReports() {
    var (machine, _, timer) = Self.lingering(timerReported: false)
    #expect(machine.subscribe().cancelGraceTimer == nil)
    #expect(same(machine.graceTimerStarted(timerTask, timer: timer), timerTask))
  }

  @Test func testPushSubscribe_whenLingering_joinsWithoutStartingAnotherUpstream() {
    var (machine, _, _) = Self.lingering()
    let action = machine.subscribe(SubjectStateMachineTests.mailbox())
    #expect(action.startUpstream == nil)
    #expect(same(action.cancelGraceTimer, timerTask))
    #expect(action.startDrain != nil)  // the replay
    guard case .running? = machine.upstream else {
      Issue.record("expected running, got \(machine.state)")
      return
    }
  }

  @Test func testUpstreamElement_whenLingering_reachesTheReplayOnly() {
    var (machine, generation, _) = Self.lingering()
    let action = machine.upstreamElement(2, generation: generation)
    #expect(action?.resume.isEmpty == true)
    #expect(action?.startDrains.isEmpty == true)
    #expect(action?.released.count == 1)  // 1 left the replay of one
    #expect(Array(machine.replay) == [2])
  }

  @Test func testGraceExpired_whenLingering_stopsTheUpstreamAndEmptiesTheReplay() {
    var (machine, _, timer) = Self.lingering()
    let action = machine.graceExpired(timer: timer)
    #expect(same(action.cancelUpstream, upstreamTask))
    #expect(Array(action.releasedReplay) == [1])
    guard case .idle? = machine.upstream else {
      Issue.record("expected idle, got \(machine.state)")
      return
    }
    // A subscriber after it starts a new run.
    let id = machine.subscribe().id
    var batch: [Int] = []
    guard case .startUpstream = machine.next(id, swapping: &batch) else {
      Issue.record("expected startUpstream")
      return
    }
  }

  @Test func testGraceExpired_acrossRestarts_keepsTheReplay() {
    var machine = Machine(sharingWith: .unbounded, replayLimit: 1, keepsReplayWhenStopped: true, hasGracePeriod: true)
    let id = machine.subscribe().id
    var batch: [Int] = []
    guard case .startUpstream(let generation) = machine.next(id, swapping: &batch) else { return }
    #expect(machine.upstreamStarted(upstreamTask, generation: generation).isKept)
    _ = machine.upstreamElement(1, generation: generation)
    guard let start = machine.unsubscribe(id).startGraceTimer else {
      Issue.record("expected startGraceTimer")
      return
    }
    #expect(machine.graceExpired(timer: start.timer).releasedReplay.isEmpty)
    #expect(Array(machine.replay) == [1])
  }

  @Test func testGraceExpired_whenLingeringWhileStarting_doesNothing() {
    // No timer was asked for (it waits for the task): an older one firing changes nothing.
    var (machine, generation, timer) = Self.lingering(started: false)
    #expect(machine.graceExpired(timer: timer - 1).cancelUpstream == nil)
    #expect(Self.isLingering(machine))
    #expect(machine.upstreamStarted(upstreamTask, generation: generation).startGraceTimer?.timer == timer)
  }

  @Test func testGraceExpired_ofAnOlderTimer_doesNothing() {
    var (machine, _, timer) = Self.lingering()
    // A subscriber comes and leaves again: a new timer.
    let id = machine.subscribe().id
    guard let newer = machine.unsubscribe(id).startGraceTimer else {
      Issue.record("expected startGraceTimer")
      return
    }
    #expect(newer.timer != timer)
    let action = machine.graceExpired(timer: timer)
    #expect(action.cancelUpstream == nil)
    #expect(Self.isLingering(machine))
  }

  @Test func testUpstreamEnded_whenLingering_endsAndCancelsTheTimer() {
    var (machine, generation, timer) = Self.lingering()
    let action = machine.upstreamEnded(failure: TestError(id: 7), generation: generation)
    #expect(same(action.cancelGraceTimer, timerTask))
    guard case .ended(let failure) = machine.state else {
      Issue.record("expected ended, got \(machine.state)")
      return
    }
    #expect(failure == TestError(id: 7))
    #expect(machine.graceExpired(timer: timer).cancelUpstream == nil)  // too late: nothing to stop
    // A later subscriber ends at once.
    let id = machine.subscribe().id
    var batch: [Int] = []
    guard case .end(let end) = machine.next(id, swapping: &batch) else {
      Issue.record("expected end")
      return
    }
    #expect(end == TestError(id: 7))
  }

  @Test func testUpstreamEnded_whenLingeringBeforeTheTimerReported_cancelsTheTimerWhenItReports() {
    var (machine, generation, timer) = Self.lingering(timerReported: false)
    #expect(machine.upstreamEnded(failure: nil, generation: generation).cancelGraceTimer == nil)
    #expect(same(machine.graceTimerStarted(timerTask, timer: timer), timerTask))
  }

  @Test func testUpstreamEvents_ofAnOlderGeneration_whenLingering_doNothing() {
    var (machine, generation, _) = Self.lingering()
    #expect(machine.upstreamElement(9, generation: generation + 1) == nil)
    #expect(machine.upstreamEnded(failure: nil, generation: generation + 1).isEmpty)
    #expect(same(machine.upstreamStarted(timerTask, generation: generation + 1).cancelled, timerTask))
    #expect(Self.isLingering(machine))
  }

  @Test func testGraceTimerStarted_whenIdle_cancelsIt() {
    var machine = Machine(sharingWith: .unbounded, replayLimit: 0, hasGracePeriod: true)
    #expect(same(machine.graceTimerStarted(timerTask, timer: 0), timerTask))
  }
}
