import Testing

@testable import AsyncFlow

/// Waiters and tasks are plain integers: consumers 1, watchers 2, the upstream's task 100 (another
/// 101), a drain's task 102; mailboxes are numbered by `mailbox()`.
private let upstreamTask = 100
private let otherUpstreamTask = 101

/// What `upstreamStarted` decided, for `#expect`: the task kept, cancelled, or kept with the grace
/// timer to start.
extension SubjectStateMachine.UpstreamStartedAction {
  var isKept: Bool {
    if case .none = self { return true }
    return false
  }
  var cancelled: Work? {
    if case .cancel(let task) = self { return task }
    return nil
  }
  var startGraceTimer: SubjectStateMachine.StartGraceTimer? {
    if case .startGraceTimer(let start) = self { return start }
    return nil
  }
}

/// The state × event grid of ``SubjectStateMachine``. States: `subject`, and for a share `idle`,
/// `starting`, `running`, `ended`. Each test drives the machine into one state with events only
/// (no storage, no lock), then sends one event and checks the action and the next state.
@Suite("SubjectStateMachine", .hangGuard)
struct SubjectStateMachineTests {
  typealias Machine = SubjectStateMachine<Int, TestError, Int, Int, Mailbox>

  /// A mailbox's number, of its own type: with `Int` mailboxes, `unsubscribe(mailbox)` would call
  /// the iterator's `unsubscribe(_ id: Int)`.
  struct Mailbox: Hashable {
    let number: Int
  }

  // MARK: Building states

  private static func subject(replay: [Int] = [], replayLimit: Int = 0) -> (Machine, subscriber: Int) {
    var machine = Machine(policy: .unbounded, replay: replay, replayLimit: replayLimit)
    let id = machine.subscribe().id
    return (machine, id)
  }

  /// A share with one subscriber that has not asked yet.
  private static func idle(replayLimit: Int = 0) -> (Machine, subscriber: Int) {
    var machine = Machine(sharingWith: .unbounded, replayLimit: replayLimit)
    let id = machine.subscribe().id
    return (machine, id)
  }

  /// A share whose subscriber asked: the task of generation `generation` is being created.
  private static func starting(replayLimit: Int = 0) -> (Machine, subscriber: Int, generation: Int) {
    var (machine, id) = idle(replayLimit: replayLimit)
    var batch: [Int] = []
    guard case .startUpstream(let generation) = machine.next(id, swapping: &batch) else {
      preconditionFailure("expected startUpstream")
    }
    return (machine, id, generation)
  }

  private static func running(replayLimit: Int = 0) -> (Machine, subscriber: Int, generation: Int) {
    var (machine, id, generation) = starting(replayLimit: replayLimit)
    precondition(machine.upstreamStarted(upstreamTask, generation: generation).isKept)
    return (machine, id, generation)
  }

  private static func ended(failure: TestError?) -> (Machine, subscriber: Int) {
    var (machine, id, generation) = running()
    _ = machine.upstreamEnded(failure: failure, generation: generation)
    return (machine, id)
  }

  private static func isIdle(_ machine: Machine) -> Bool {
    if case .idle = machine.upstream { return true }
    return false
  }

  private static func isRunning(_ machine: Machine, generation: Int, task: Int) -> Bool {
    if case .running(generation, let running, _) = machine.upstream { return running == task }
    return false
  }

  // MARK: subscribe

  @Test func testSubscribe_whenSubject_getsTheReplay() {
    var (machine, _) = Self.subject(replay: [7], replayLimit: 1)
    let late = machine.subscribe().id
    var batch: [Int] = []
    guard case .deliver = machine.next(late, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [7])
    #expect(machine.subscriberCount == 2)
  }

  @Test func testSubscribe_whenRunning_getsTheReplayAndKeepsTheUpstream() {
    var (machine, _, generation) = Self.running(replayLimit: 1)
    _ = machine.upstreamElement(1, generation: generation)
    _ = machine.upstreamElement(2, generation: generation)
    let late = machine.subscribe().id
    var batch: [Int] = []
    guard case .deliver = machine.next(late, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [2])
    #expect(Self.isRunning(machine, generation: generation, task: upstreamTask))
  }

  @Test func testSubscribe_whenStarting_waitsForTheUpstreamWithoutStartingAnother() {
    var (machine, _, generation) = Self.starting()
    let late = machine.subscribe().id
    var batch: [Int] = []
    guard case .suspend = machine.next(late, swapping: &batch) else {
      Issue.record("expected suspend")
      return
    }
    guard case .starting(generation) = machine.upstream else {
      Issue.record("expected starting(\(generation)), got \(machine.state)")
      return
    }
  }

  @Test func testSubscribe_whenEnded_getsOnlyTheEnd() {
    var (machine, _) = Self.ended(failure: TestError(id: 1))
    let late = machine.subscribe().id
    var batch: [Int] = []
    guard case .end(let failure) = machine.next(late, swapping: &batch) else {
      Issue.record("expected end")
      return
    }
    #expect(failure == TestError(id: 1))
    #expect(machine.subscriberCount == 1)  // the first one has not taken its end yet
  }

  // MARK: watchers (subscribers(count:))

  // The watchers are the `CountWatcherList` in the machine's table: `LockedState.waitUntil` registers
  // them there (and resumes a cancelled task's), `subscribe` resumes those the new count satisfies.

  @Test func testWatchSubscribers_whenTheCountIsReached_resumesAtOnce() {
    var (machine, _) = Self.subject()
    let watcher = 2
    let waits = machine.subscribers.watchers.register(watcher, until: 1, current: machine.subscriberCount)
    #expect(!waits)
  }

  @Test func testWatchSubscribers_whenCancelled_resumesAtOnce() async {
    let storage = SubjectStorage<Int, Never>(SubjectStorage.Machine(policy: .unbounded, replayLimit: 0))
    await inCancelledTask { await storage.subscribers(count: 2) }
    #expect(storage.subscriberCount == 0)
  }

  @Test func testSubscribe_whenAWatcherWaits_resumesItOnceTheCountIsReached() {
    var (machine, _, _) = Self.running()
    let watcher = 2
    let token = machine.subscribers.watchers.makeID()
    let waits = machine.subscribers.watchers.register(watcher, id: token, until: 3, current: machine.subscriberCount)
    #expect(waits)
    #expect(machine.subscribe().resumeWatchers.isEmpty)  // 2 of 3
    let resumed = machine.subscribe().resumeWatchers
    #expect(resumed.count == 1 && resumed.first == watcher)
    let cancelled = machine.subscribers.watchers.cancel(token)
    #expect(cancelled == nil)  // already gone
  }

  @Test func testWatcherCancelled_whenWaiting_returnsItsContinuation() {
    var (machine, _) = Self.idle()
    let watcher = 2
    let token = machine.subscribers.watchers.makeID()
    let waits = machine.subscribers.watchers.register(watcher, id: token, until: 2, current: machine.subscriberCount)
    let cancelled = machine.subscribers.watchers.cancel(token)
    #expect(waits && cancelled == watcher)
    #expect(machine.subscribe().resumeWatchers.isEmpty)
  }

  // MARK: next

  @Test func testNext_whenSubject_suspendsOnAnEmptyBufferAndDeliversABatch() {
    var (machine, id) = Self.subject()
    var batch: [Int] = []
    guard case .suspend = machine.next(id, swapping: &batch) else {
      Issue.record("expected suspend")
      return
    }
    _ = machine.send(1)
    _ = machine.send(2)
    guard case .deliver = machine.next(id, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1, 2])
  }

  @Test func testNext_whenSubjectIsBounded_takesOneElementAtATime() {
    var machine = Machine(policy: .bufferingNewest(3), replayLimit: 0)
    let id = machine.subscribe().id
    for value in 1...3 { _ = machine.send(value) }
    var batch: [Int] = []
    guard case .deliver = machine.next(id, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1])
    for value in 4...10 { _ = machine.send(value) }  // 2 and 3 are still inside the bound: dropped
    #expect(Array(machine.subscribers.iterators[0].buffer) == [8, 9, 10])
  }

  @Test func testNext_whenIdle_startsTheUpstreamOnce() {
    var (machine, id) = Self.idle()
    let other = machine.subscribe().id
    var batch: [Int] = []
    guard case .startUpstream(let generation) = machine.next(id, swapping: &batch) else {
      Issue.record("expected startUpstream")
      return
    }
    guard case .starting(generation) = machine.upstream else {
      Issue.record("expected starting(\(generation)), got \(machine.state)")
      return
    }
    // A second subscriber asking while the task is being created does not start another.
    guard case .suspend = machine.next(other, swapping: &batch) else {
      Issue.record("expected suspend")
      return
    }
  }

  @Test func testNext_whenStarting_suspends() {
    var (machine, id, _) = Self.starting()
    var batch: [Int] = []
    guard case .suspend = machine.next(id, swapping: &batch) else {
      Issue.record("expected suspend")
      return
    }
  }

  @Test func testNext_whenRunning_deliversWhatTheUpstreamSent() {
    var (machine, id, generation) = Self.running()
    _ = machine.upstreamElement(1, generation: generation)
    var batch: [Int] = []
    guard case .deliver = machine.next(id, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1])
  }

  @Test func testNext_whenEnded_drainsThenEndsAndUnsubscribes() {
    var (machine, id, generation) = Self.running()
    _ = machine.upstreamElement(1, generation: generation)
    _ = machine.upstreamEnded(failure: TestError(id: 2), generation: generation)
    var batch: [Int] = []
    guard case .deliver = machine.next(id, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1])
    guard case .end(let failure) = machine.next(id, swapping: &batch) else {
      Issue.record("expected end")
      return
    }
    #expect(failure == TestError(id: 2))
    #expect(machine.subscriberCount == 0)
  }

  @Test func testNext_whenUnsubscribed_ends() {
    var (machine, id) = Self.subject()
    _ = machine.unsubscribe(id)
    var batch: [Int] = []
    guard case .end(nil) = machine.next(id, swapping: &batch) else {
      Issue.record("expected end(nil)")
      return
    }
  }

  // MARK: suspend

  @Test func testSuspend_whenSubject_registersAndSendWakesIt() {
    var (machine, id) = Self.subject()
    let consumer = 1
    #expect(machine.suspend(id, consumer) == nil)
    let waking = machine.send(1).resume
    #expect(waking.count == 1 && waking.first == consumer)
  }

  @Test func testSuspend_whenRunning_registersAndAnUpstreamElementWakesIt() {
    var (machine, id, generation) = Self.running()
    let consumer = 1
    #expect(machine.suspend(id, consumer) == nil)
    let waking = machine.upstreamElement(1, generation: generation)?.resume
    #expect(waking?.count == 1 && waking?.first == consumer)
  }

  @Test func testSuspend_whenStarting_registersAndTheFirstElementWakesIt() {
    var (machine, id, generation) = Self.starting()
    let consumer = 1
    #expect(machine.suspend(id, consumer) == nil)
    let waking = machine.upstreamElement(1, generation: generation)?.resume
    #expect(waking?.count == 1 && waking?.first == consumer)
  }

  @Test func testSuspend_whenEnded_resumesAtOnce() {
    var (machine, id) = Self.ended(failure: nil)
    let consumer = 1
    #expect(machine.suspend(id, consumer) == consumer)
  }

  // MARK: unsubscribe

  @Test func testUnsubscribe_whenSubject_returnsTheWaitingConsumerAndStopsNothing() {
    var (machine, id) = Self.subject()
    let consumer = 1
    _ = machine.suspend(id, consumer)
    let action = machine.unsubscribe(id)
    #expect(action.resumeConsumer == consumer)
    #expect(action.cancelUpstream == nil)
    guard case .subject = machine.upstream else {
      Issue.record("expected subject, got \(machine.state)")
      return
    }
  }

  @Test func testUnsubscribe_whenIdle_changesNothing() {
    var (machine, id) = Self.idle()
    let action = machine.unsubscribe(id)
    #expect(action.cancelUpstream == nil)
    #expect(Self.isIdle(machine))
  }

  @Test func testUnsubscribe_whenStartingAndLast_stopsAndTheTaskIsCancelledWhenItReports() {
    var (machine, id, generation) = Self.starting()
    #expect(machine.unsubscribe(id).cancelUpstream == nil)
    #expect(Self.isIdle(machine))
    #expect(machine.upstreamStarted(upstreamTask, generation: generation).cancelled == upstreamTask)
    #expect(Self.isIdle(machine))
  }

  @Test func testUnsubscribe_whenRunningAndLast_cancelsTheUpstreamAndANewcomerStartsANewGeneration() {
    var (machine, id, generation) = Self.running()
    #expect(machine.unsubscribe(id).cancelUpstream == upstreamTask)
    #expect(Self.isIdle(machine))
    let newcomer = machine.subscribe().id
    var batch: [Int] = []
    guard case .startUpstream(let next) = machine.next(newcomer, swapping: &batch) else {
      Issue.record("expected startUpstream")
      return
    }
    #expect(next != generation)
  }

  @Test func testUnsubscribe_whenRunningAndLast_emptiesTheReplayWhileRunningScoped() {
    var (machine, id, generation) = Self.running(replayLimit: 1)
    _ = machine.upstreamElement(1, generation: generation)
    _ = machine.unsubscribe(id)
    #expect(machine.replay.isEmpty)
  }

  @Test func testUnsubscribe_whenRunningAndLast_keepsTheReplayAcrossRestarts() {
    var machine = Machine(sharingWith: .unbounded, replayLimit: 1, keepsReplayWhenStopped: true)
    let id = machine.subscribe().id
    var batch: [Int] = []
    guard case .startUpstream(let generation) = machine.next(id, swapping: &batch) else {
      Issue.record("expected startUpstream")
      return
    }
    _ = machine.upstreamElement(1, generation: generation)
    _ = machine.unsubscribe(id)
    #expect(Array(machine.replay) == [1])
    let newcomer = machine.subscribe().id
    guard case .startUpstream = machine.next(newcomer, swapping: &batch) else {
      Issue.record("expected startUpstream")
      return
    }
    guard case .deliver = machine.next(newcomer, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1])
  }

  /// The last subscriber leaves while a newcomer arrives: registering and deciding to stop are
  /// events of one machine, so whichever comes first, the newcomer is served.
  @Test func testUnsubscribe_whenRunningAndANewcomerSubscribedFirst_keepsTheUpstream() {
    var (machine, id, generation) = Self.running()
    let newcomer = machine.subscribe().id
    #expect(machine.unsubscribe(id).cancelUpstream == nil)
    #expect(Self.isRunning(machine, generation: generation, task: upstreamTask))
    _ = machine.upstreamElement(1, generation: generation)
    var batch: [Int] = []
    guard case .deliver = machine.next(newcomer, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1])
  }

  @Test func testUnsubscribe_whenEnded_changesNothing() {
    var (machine, id) = Self.ended(failure: nil)
    #expect(machine.unsubscribe(id).cancelUpstream == nil)
    #expect(machine.isEnded)
  }

  // MARK: send and end (subjects)

  @Test func testSend_whenEnded_isIgnored() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let id = machine.subscribe().id
    _ = machine.end(failure: nil)
    #expect(machine.send(1).isEmpty)
    var batch: [Int] = []
    guard case .end(nil) = machine.next(id, swapping: &batch) else {
      Issue.record("expected end")
      return
    }
  }

  @Test func testEnd_whenSubject_endsOnceWithTheFirstFailure() {
    var (machine, id) = Self.subject()
    let consumer = 1
    _ = machine.suspend(id, consumer)
    let waking = machine.end(failure: TestError(id: 5)).resume
    #expect(waking.count == 1 && waking.first == consumer)
    #expect(machine.end(failure: TestError(id: 6)).isEmpty)
    guard case .ended(let failure) = machine.state else {
      Issue.record("expected ended")
      return
    }
    #expect(failure == TestError(id: 5))
  }

  @Test func testSend_whenStarting_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = SubjectStateMachine<Int, Never, Int, Int, Int>(sharingWith: .unbounded, replayLimit: 0)
      let id = machine.subscribe().id
      var batch: [Int] = []
      _ = machine.next(id, swapping: &batch)  // starting
      _ = machine.send(1)
    }
  }

  @Test func testEnd_whenIdle_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = SubjectStateMachine<Int, Never, Int, Int, Int>(sharingWith: .unbounded, replayLimit: 0)
      _ = machine.end(failure: nil)
    }
  }

  // MARK: upstreamStarted

  @Test func testUpstreamStarted_whenStarting_runs() {
    var (machine, _, generation) = Self.starting()
    #expect(machine.upstreamStarted(upstreamTask, generation: generation).isKept)
    #expect(Self.isRunning(machine, generation: generation, task: upstreamTask))
  }

  @Test func testUpstreamStarted_whenRunningAnotherGeneration_cancelsTheStaleTask() {
    var (machine, id, stale) = Self.starting()
    _ = machine.unsubscribe(id)  // stopped before the task reported
    let newcomer = machine.subscribe().id
    var batch: [Int] = []
    guard case .startUpstream(let current) = machine.next(newcomer, swapping: &batch) else {
      Issue.record("expected startUpstream")
      return
    }
    #expect(machine.upstreamStarted(otherUpstreamTask, generation: current).isKept)
    #expect(machine.upstreamStarted(upstreamTask, generation: stale).cancelled == upstreamTask)
    #expect(Self.isRunning(machine, generation: current, task: otherUpstreamTask))
  }

  @Test func testUpstreamStarted_whenEnded_cancelsTheTask() {
    // The upstream may end before its task's handle is reported.
    var (machine, _, generation) = Self.starting()
    _ = machine.upstreamEnded(failure: nil, generation: generation)
    #expect(machine.upstreamStarted(upstreamTask, generation: generation).cancelled == upstreamTask)
    #expect(machine.isEnded)
  }

  @Test func testUpstreamStarted_whenRunningTheSameGeneration_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = SubjectStateMachine<Int, Never, Int, Int, Int>(sharingWith: .unbounded, replayLimit: 0)
      let id = machine.subscribe().id
      var batch: [Int] = []
      guard case .startUpstream(let generation) = machine.next(id, swapping: &batch) else { return }
      let task = 7
      _ = machine.upstreamStarted(task, generation: generation)
      _ = machine.upstreamStarted(task, generation: generation)
    }
  }

  @Test func testUpstreamStarted_whenSubject_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = SubjectStateMachine<Int, Never, Int, Int, Int>(policy: .unbounded, replayLimit: 0)
      _ = machine.upstreamStarted(7, generation: 0)
    }
  }

  // MARK: upstreamElement

  @Test func testUpstreamElement_whenStarting_deliversBeforeTheTaskReports() {
    var (machine, id, generation) = Self.starting()
    #expect(machine.upstreamElement(1, generation: generation) != nil)
    var batch: [Int] = []
    guard case .deliver = machine.next(id, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1])
  }

  @Test func testUpstreamElement_whenIdleAfterAStop_isRefused() {
    var (machine, id, generation) = Self.running()
    _ = machine.unsubscribe(id)
    #expect(machine.upstreamElement(1, generation: generation) == nil)
    #expect(machine.replay.isEmpty)
  }

  @Test func testUpstreamElement_whenRunningAnotherGeneration_isRefused() {
    var (machine, id, stale) = Self.running()
    _ = machine.unsubscribe(id)
    let newcomer = machine.subscribe().id
    var batch: [Int] = []
    guard case .startUpstream(let current) = machine.next(newcomer, swapping: &batch) else {
      Issue.record("expected startUpstream")
      return
    }
    _ = machine.upstreamStarted(otherUpstreamTask, generation: current)
    #expect(machine.upstreamElement(99, generation: stale) == nil)
    #expect(machine.upstreamElement(1, generation: current) != nil)
    guard case .deliver = machine.next(newcomer, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1])
  }

  @Test func testUpstreamElement_whenEnded_isRefused() {
    var (machine, _) = Self.ended(failure: nil)
    #expect(machine.upstreamElement(1, generation: 0) == nil)
  }

  @Test func testUpstreamElement_whenSubject_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = SubjectStateMachine<Int, Never, Int, Int, Int>(policy: .unbounded, replayLimit: 0)
      _ = machine.upstreamElement(1, generation: 0)
    }
  }

  // MARK: upstreamEnded

  @Test func testUpstreamEnded_whenRunning_endsEverySubscriber() {
    var (machine, id, generation) = Self.running()
    let consumer = 1
    _ = machine.suspend(id, consumer)
    let waking = machine.upstreamEnded(failure: TestError(id: 3), generation: generation).resume
    #expect(waking.count == 1 && waking.first == consumer)
    guard case .ended(let failure) = machine.state else {
      Issue.record("expected ended")
      return
    }
    #expect(failure == TestError(id: 3))
  }

  @Test func testUpstreamEnded_whenStarting_ends() {
    var (machine, _, generation) = Self.starting()
    _ = machine.upstreamEnded(failure: nil, generation: generation)
    #expect(machine.isEnded)
  }

  /// A stopped iteration that finishes (as a cancelled one often does) does not end the share.
  @Test func testUpstreamEnded_whenIdleAfterAStop_isIgnored() {
    var (machine, id, generation) = Self.running()
    _ = machine.unsubscribe(id)
    #expect(machine.upstreamEnded(failure: nil, generation: generation).isEmpty)
    #expect(Self.isIdle(machine))
  }

  @Test func testUpstreamEnded_whenEnded_isIgnored() {
    var (machine, _) = Self.ended(failure: TestError(id: 1))
    #expect(machine.upstreamEnded(failure: TestError(id: 2), generation: 0).isEmpty)
    guard case .ended(let failure) = machine.state else {
      Issue.record("expected ended")
      return
    }
    #expect(failure == TestError(id: 1))
  }

  @Test func testUpstreamEnded_whenSubject_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = SubjectStateMachine<Int, Never, Int, Int, Int>(policy: .unbounded, replayLimit: 0)
      _ = machine.upstreamEnded(failure: nil, generation: 0)
    }
  }

  // MARK: Push subscribers (mailboxes)

  /// A mailbox to register, a new number each time: the machine only stores it and hands it back.
  static func mailbox() -> Mailbox {
    nextMailbox.withLock { next in
      defer { next += 1 }
      return Mailbox(number: next)
    }
  }
  private static let nextMailbox = LockedState(1)

  enum Phase { case idle, draining }

  private static func phase(_ machine: Machine, _ mailbox: Mailbox) -> Phase? {
    switch machine.pushSubscribers.first(where: { $0.mailbox == mailbox })?.phase {
    case .idle: .idle
    case .draining: .draining
    case nil: nil
    }
  }

  /// The task of the drain serving `mailbox`, once reported.
  private static func drainTask(_ machine: Machine, _ mailbox: Mailbox) -> Int? {
    guard case .draining(_, let task) = machine.pushSubscribers.first(where: { $0.mailbox == mailbox })?.phase
    else { return nil }
    return task
  }

  private static func startsDrain(_ action: Machine.SendAction, _ mailbox: Mailbox) -> Bool {
    action.startDrains.count == 1 && action.startDrains[0].mailbox == mailbox
  }

  /// Takes until the machine says something other than `deliver`; returns what was delivered and
  /// that last action.
  private static func drain(_ machine: inout Machine, _ mailbox: Mailbox) -> ([Int], Machine.DrainAction) {
    var delivered: [Int] = []
    var batch: [Int] = []
    while true {
      let action = machine.take(mailbox, swapping: &batch)
      guard case .deliver = action else { return (delivered, action) }
      delivered += batch
    }
  }

  @Test func testSubscribeMailbox_whenSubject_isIdleAndCounts() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    let action = machine.subscribe(mailbox)
    #expect(action.startDrain == nil && action.startUpstream == nil)
    #expect(Self.phase(machine, mailbox) == .idle)
    #expect(machine.subscriberCount == 1)
    #expect(machine.drainingCount == 0)
  }

  @Test func testSubscribeMailbox_whenSubjectHasAReplay_drainsTheCurrentValueFirst() {
    var machine = Machine(policy: .bufferingNewest(1), replay: [7], replayLimit: 1)
    let mailbox = Self.mailbox()
    #expect(machine.subscribe(mailbox).startDrain != nil)
    #expect(Self.phase(machine, mailbox) == .draining)
    let (delivered, last) = Self.drain(&machine, mailbox)
    #expect(delivered == [7])
    guard case .idle = last else {
      Issue.record("expected idle, got \(last)")
      return
    }
    #expect(Self.phase(machine, mailbox) == .idle)
  }

  @Test func testSubscribeMailbox_whenIdle_startsTheUpstreamAtOnce() {
    var machine = Machine(sharingWith: .unbounded, replayLimit: 0)
    let action = machine.subscribe(Self.mailbox())
    guard let generation = action.startUpstream, case .starting(generation) = machine.upstream else {
      Issue.record("expected startUpstream and starting, got \(machine.state)")
      return
    }
    #expect(action.startDrain == nil)
  }

  @Test func testSubscribeMailbox_whenStarting_doesNotStartAnotherUpstream() {
    var (machine, _, generation) = Self.starting()
    #expect(machine.subscribe(Self.mailbox()).startUpstream == nil)
    guard case .starting(generation) = machine.upstream else {
      Issue.record("expected starting(\(generation)), got \(machine.state)")
      return
    }
  }

  @Test func testSubscribeMailbox_whenRunning_drainsTheReplayAndKeepsTheUpstream() {
    var (machine, _, generation) = Self.running(replayLimit: 2)
    for value in 1...3 { _ = machine.upstreamElement(value, generation: generation) }
    let mailbox = Self.mailbox()
    let action = machine.subscribe(mailbox)
    #expect(action.startDrain != nil && action.startUpstream == nil)
    #expect(Self.drain(&machine, mailbox).0 == [2, 3])
    #expect(Self.isRunning(machine, generation: generation, task: upstreamTask))
  }

  @Test func testSubscribeMailbox_whenEnded_drainsOnlyTheEnd() {
    var (machine, _) = Self.ended(failure: TestError(id: 4))
    let mailbox = Self.mailbox()
    #expect(machine.subscribe(mailbox).startDrain != nil)
    let (delivered, last) = Self.drain(&machine, mailbox)
    guard delivered.isEmpty, case .complete(TestError(id: 4)) = last else {
      Issue.record("expected only complete(4), got \(delivered), \(last)")
      return
    }
  }

  @Test func testSubscribeMailbox_whenAWatcherWaits_resumesItOnceTheCountIsReached() {
    var (machine, _) = Self.subject()
    let watcher = 2
    let waits = machine.subscribers.watchers.register(watcher, until: 2, current: machine.subscriberCount)
    let resumed = machine.subscribe(Self.mailbox()).resumeWatchers
    #expect(waits)
    #expect(resumed.count == 1 && resumed.first == watcher)
  }

  @Test func testSubscribeMailbox_whenAlreadyRegistered_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = SubjectStateMachine<Int, Never, Int, Int, Int>(policy: .unbounded, replayLimit: 0)
      let mailbox = 1
      _ = machine.subscribe(mailbox)
      _ = machine.subscribe(mailbox)
    }
  }

  // MARK: send and upstreamElement with mailboxes

  @Test func testSend_whenMailboxIdle_startsOneDrain() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    #expect(Self.startsDrain(machine.send(1), mailbox))
    #expect(Self.phase(machine, mailbox) == .draining)
  }

  @Test func testSend_whenMailboxDraining_buffersWithoutAnotherDrain() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    _ = machine.send(1)
    #expect(machine.send(2).isEmpty)
    var batch: [Int] = []
    guard case .deliver = machine.take(mailbox, swapping: &batch) else {
      Issue.record("expected deliver")
      return
    }
    #expect(batch == [1, 2])
    // Sent while the batch is delivered: the running drain takes it, no other starts.
    #expect(machine.send(3).isEmpty)
    #expect(Self.drain(&machine, mailbox).0 == [3])
  }

  @Test func testSend_whenMailboxKeepsNothing_startsNoDrain() {
    var machine = Machine(policy: .bufferingNewest(0), replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    #expect(machine.send(1).isEmpty)
    #expect(Self.phase(machine, mailbox) == .idle)
  }

  @Test func testSend_whenMailboxBoundedAndBehind_keepsWhatThePolicySays() {
    for (policy, expected) in [
      (FlowBufferingPolicy.bufferingNewest(3), [1, 8, 9, 10]), (.bufferingOldest(3), [1, 2, 3, 4]),
    ] {
      var machine = Machine(policy: policy, replayLimit: 0)
      let mailbox = Self.mailbox()
      _ = machine.subscribe(mailbox)
      for value in 1...3 { _ = machine.send(value) }
      var batch: [Int] = []
      guard case .deliver = machine.take(mailbox, swapping: &batch) else {
        Issue.record("expected deliver")
        return
      }
      #expect(batch == [1])  // one at a time: the rest stays inside the bound
      for value in 4...10 { _ = machine.send(value) }
      #expect([1] + Self.drain(&machine, mailbox).0 == expected, "\(policy)")
    }
  }

  @Test func testSend_whenEndedWithAMailbox_isIgnored() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    _ = machine.end(failure: nil)
    #expect(machine.send(1).isEmpty)
    guard case .complete(nil) = Self.drain(&machine, mailbox).1 else {
      Issue.record("expected complete(nil)")
      return
    }
  }

  @Test func testUpstreamElement_whenRunningAndMailboxIdle_startsOneDrain() {
    var (machine, _, generation) = Self.running()
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    guard let action = machine.upstreamElement(1, generation: generation) else {
      Issue.record("expected an action")
      return
    }
    #expect(Self.startsDrain(action, mailbox))
  }

  @Test func testUpstreamElement_whenStartingAndMailboxIdle_startsOneDrain() {
    var machine = Machine(sharingWith: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    guard let generation = machine.subscribe(mailbox).startUpstream,
      let action = machine.upstreamElement(1, generation: generation)
    else {
      Issue.record("expected startUpstream and an action")
      return
    }
    #expect(Self.startsDrain(action, mailbox))
  }

  @Test func testUpstreamElement_whenStaleWithAMailbox_isRefused() {
    var (machine, id, generation) = Self.running()
    _ = machine.unsubscribe(id)
    let mailbox = Self.mailbox()
    guard let current = machine.subscribe(mailbox).startUpstream else {
      Issue.record("expected startUpstream")
      return
    }
    #expect(machine.upstreamElement(99, generation: generation) == nil)
    #expect(Self.phase(machine, mailbox) == .idle)
    #expect(current != generation)
  }

  // MARK: take

  @Test func testTake_whenDrainingAndEmpty_endsTheDrainInTheSameStep() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    _ = machine.send(1)
    let (delivered, last) = Self.drain(&machine, mailbox)
    guard delivered == [1], case .idle = last else {
      Issue.record("expected [1] then idle, got \(delivered), \(last)")
      return
    }
    #expect(machine.drainingCount == 0)
    // The next element finds the mailbox idle: it starts the next drain, none is lost.
    #expect(Self.startsDrain(machine.send(2), mailbox))
  }

  @Test func testTake_whenEndedAndDraining_deliversTheRestThenCompletesOnceAndUnsubscribes() {
    var (machine, _, generation) = Self.running()
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    _ = machine.upstreamElement(1, generation: generation)
    #expect(machine.upstreamEnded(failure: TestError(id: 8), generation: generation).isEmpty)  // already draining
    let (delivered, last) = Self.drain(&machine, mailbox)
    guard delivered == [1], case .complete(TestError(id: 8)) = last else {
      Issue.record("expected [1] then complete(8), got \(delivered), \(last)")
      return
    }
    #expect(machine.subscriberCount == 1)  // the iterator; the mailbox is gone
    var batch: [Int] = []
    guard case .stop = machine.take(mailbox, swapping: &batch) else {
      Issue.record("expected stop: the end is delivered once")
      return
    }
  }

  @Test func testTake_whenUnsubscribed_stops() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    _ = machine.send(1)
    _ = machine.unsubscribe(mailbox)
    var batch: [Int] = []
    guard case .stop = machine.take(mailbox, swapping: &batch) else {
      Issue.record("expected stop")
      return
    }
    #expect(batch.isEmpty)
  }

  @Test func testTake_whenMailboxIdle_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = SubjectStateMachine<Int, Never, Int, Int, Int>(policy: .unbounded, replayLimit: 0)
      let mailbox = 1
      _ = machine.subscribe(mailbox)
      var batch: [Int] = []
      _ = machine.take(mailbox, swapping: &batch)
    }
  }

  // MARK: end and upstreamEnded with mailboxes

  @Test func testEnd_whenMailboxIdle_startsADrainForTheEnd() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    #expect(Self.startsDrain(machine.end(failure: TestError(id: 1)), mailbox))
    guard case .complete(TestError(id: 1)) = Self.drain(&machine, mailbox).1 else {
      Issue.record("expected complete(1)")
      return
    }
    #expect(machine.subscriberCount == 0)
  }

  @Test func testEnd_whenMailboxDraining_leavesTheEndToTheRunningDrain() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    _ = machine.send(1)
    #expect(machine.end(failure: nil).isEmpty)
    let (delivered, last) = Self.drain(&machine, mailbox)
    guard delivered == [1], case .complete(nil) = last else {
      Issue.record("expected [1] then complete(nil), got \(delivered), \(last)")
      return
    }
  }

  @Test func testUpstreamEnded_whenRunningAndMailboxIdle_startsADrainForTheEnd() {
    var (machine, _, generation) = Self.running()
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    #expect(Self.startsDrain(machine.upstreamEnded(failure: nil, generation: generation), mailbox))
  }

  // MARK: unsubscribe(mailbox)

  @Test func testUnsubscribeMailbox_whenSubject_removesItAndStopsNothing() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    #expect(machine.unsubscribe(mailbox).cancelUpstream == nil)
    #expect(machine.subscriberCount == 0)
    #expect(machine.send(1).isEmpty)
    #expect(machine.unsubscribe(mailbox).cancelUpstream == nil)  // twice: nothing
  }

  @Test func testUnsubscribeMailbox_whenRunningAndLast_cancelsTheUpstream() {
    var (machine, id, _) = Self.running()
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    #expect(machine.unsubscribe(id).cancelUpstream == nil)  // the mailbox still listens
    #expect(machine.unsubscribe(mailbox).cancelUpstream == upstreamTask)
    #expect(Self.isIdle(machine))
  }

  @Test func testUnsubscribeMailbox_whenStartingAndLast_stops() {
    var machine = Machine(sharingWith: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    guard let generation = machine.subscribe(mailbox).startUpstream else {
      Issue.record("expected startUpstream")
      return
    }
    #expect(machine.unsubscribe(mailbox).cancelUpstream == nil)
    #expect(Self.isIdle(machine))
    #expect(machine.upstreamStarted(upstreamTask, generation: generation).cancelled == upstreamTask)
  }

  @Test func testUnsubscribeMailbox_whenEnded_changesNothing() {
    var (machine, _) = Self.ended(failure: nil)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    #expect(machine.unsubscribe(mailbox).cancelUpstream == nil)
    #expect(machine.isEnded)
  }

  // MARK: drainStarted, and leaving while a drain runs

  @Test func testDrainStarted_whenDraining_recordsTheTaskThatLeavingCancels() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    let drain = machine.send(1).startDrains[0]
    #expect(machine.drainStarted(mailbox, id: drain.id, task: upstreamTask) == nil)
    #expect(Self.drainTask(machine, mailbox) == upstreamTask)
    #expect(machine.unsubscribe(mailbox).cancelDrain == upstreamTask)
  }

  @Test func testUnsubscribeMailbox_whenTheDrainIsNotReportedYet_cancelsItWhenItReports() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    let drain = machine.send(1).startDrains[0]
    #expect(machine.unsubscribe(mailbox).cancelDrain == nil)
    #expect(machine.drainStarted(mailbox, id: drain.id, task: upstreamTask) == upstreamTask)
  }

  @Test func testUnsubscribeMailbox_whenIdle_cancelsNoDrain() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    let drain = machine.send(1).startDrains[0]
    #expect(machine.drainStarted(mailbox, id: drain.id, task: upstreamTask) == nil)
    #expect(Self.drain(&machine, mailbox).0 == [1])
    #expect(Self.phase(machine, mailbox) == .idle)
    #expect(machine.unsubscribe(mailbox).cancelDrain == nil)
  }

  /// The drain found the mailbox empty and ended before its task was reported, and a later send
  /// started another: the late report changes nothing, and leaving cancels the later drain.
  @Test func testDrainStarted_whenThatDrainEndedAlready_keepsTheCurrentOne() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    let first = machine.send(1).startDrains[0]
    #expect(Self.drain(&machine, mailbox).0 == [1])
    let second = machine.send(2).startDrains[0]
    #expect(second.id != first.id)
    let secondTask = 102
    #expect(machine.drainStarted(mailbox, id: second.id, task: secondTask) == nil)
    #expect(machine.drainStarted(mailbox, id: first.id, task: upstreamTask) == nil)
    #expect(machine.unsubscribe(mailbox).cancelDrain == secondTask)
  }

  /// The drain took the end, which removed the subscriber, before its task was reported: it is
  /// delivering the end and is not cancelled.
  @Test func testDrainStarted_whenTheDrainTookTheEnd_cancelsNothing() {
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = Self.mailbox()
    _ = machine.subscribe(mailbox)
    let drain = machine.end(failure: nil).startDrains[0]
    guard case .complete = Self.drain(&machine, mailbox).1 else {
      Issue.record("expected complete")
      return
    }
    #expect(machine.drainStarted(mailbox, id: drain.id, task: upstreamTask) == nil)
  }

  @Test func testDrainStarted_whenReportedTwice_isAnInternalInconsistency() async {
    await #expect(processExitsWith: .failure) {
      var machine = SubjectStateMachine<Int, Never, Int, Int, Int>(policy: .unbounded, replayLimit: 0)
      let mailbox = 1
      _ = machine.subscribe(mailbox)
      let drain = machine.send(1).startDrains[0]
      let task = 7
      _ = machine.drainStarted(mailbox, id: drain.id, task: task)
      _ = machine.drainStarted(mailbox, id: drain.id, task: task)
    }
  }
}

// The machine's batches are ring buffers handed over empty (the subscriber moves each element out
// as it returns it). The grids drive it with arrays they read back: these adapters release the
// array's old elements first, as a subscriber does, then copy the refill out.
extension SubjectStateMachine {
  mutating func next(_ id: Int, swapping batch: inout [Element]) -> NextAction {
    batch.removeAll()
    var ring = RingBuffer<Element>()
    defer { batch = Array(ring) }
    return next(id, swapping: &ring)
  }

  mutating func take(_ mailbox: Mailbox, swapping batch: inout [Element]) -> DrainAction {
    batch.removeAll()
    var ring = RingBuffer<Element>()
    defer { batch = Array(ring) }
    return take(mailbox, swapping: &ring)
  }
}
