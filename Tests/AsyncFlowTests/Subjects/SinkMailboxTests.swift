import AsyncFlowTesting
import Testing

@testable import AsyncFlow

@Suite("sink and assignFlow on hot sources: mailboxes", .hangGuard)
struct SinkMailboxTests {
  // MARK: Order and completion

  @Test func sinkReceivesEveryValueInOrderThenTheEndOnce() async {
    let subject = PassthroughFlow<Int, TestError>()
    let log = SinkLog()
    let subscription = subject.sink {
      log.completion($0)
    } receiveValue: {
      log.append(.value($0))
    }
    for value in 1...1_000 { subject.send(value) }
    subject.fail(TestError(id: 3))
    subject.send(1_001)  // after the end: ignored
    await log.logged(count: 1_001)
    #expect(log.events == (1...1_000).map { .value($0) } + [.failed(3)])
    #expect(subject.subscriberCount == 0)  // the end unsubscribed it
    withExtendedLifetime(subscription) {}
  }

  @Test @MainActor func mainActorSinkReceivesInOrderOnTheMainActor() async {
    let box = SinkBox()
    await sendOneToFiveHundred { subject, completed in
      subject.sink { _ in
        completed.fire()
      } receiveValue: { @MainActor value in
        MainActor.preconditionIsolated("a @MainActor sink ran off the main actor")
        box.received.append(value)
      }
    }
    #expect(box.received == Array(1...500))
  }

  @Test func aSinkAfterTheEndReceivesOnlyTheEnd() async {
    let subject = PassthroughFlow<Int, TestError>()
    subject.send(1)
    subject.finish()
    let log = SinkLog()
    let subscription = subject.sink {
      log.completion($0)
    } receiveValue: {
      log.append(.value($0))
    }
    await log.logged(count: 1)
    #expect(log.events == [.finished])
    withExtendedLifetime(subscription) {}
  }

  /// The subject may go once it has finished: the mailboxes still drain, then complete.
  @Test func mailboxesDrainThenCompleteAfterTheSubjectIsFinishedAndReleased() async {
    var subject: PassthroughFlow<Int, TestError>? = PassthroughFlow()
    let gate = Gate()
    let log = SinkLog()
    let subscription = subject!.sink {
      log.completion($0)
    } receiveValue: { value in
      if value == 1 { await gate.wait() }
      log.append(.value(value))
    }
    for value in 1...3 { subject!.send(value) }
    await gate.entered()
    subject!.finish()
    weak let released = subject
    subject = nil
    #expect(released == nil)
    gate.release()
    await log.logged(count: 4)
    #expect(log.events == [.value(1), .value(2), .value(3), .finished])
    withExtendedLifetime(subscription) {}
  }

  // MARK: Buffering policy

  /// The first value blocks the sink while 2...10 are sent: the mailbox keeps what the policy says,
  /// as an iterator's buffer does (`boundedPoliciesHoldForWhatTheSubscriberReceives`).
  @Test(arguments: [
    (FlowBufferingPolicy.unbounded, Array(1...10)), (.bufferingNewest(3), [1, 8, 9, 10]),
    (.bufferingOldest(3), [1, 2, 3, 4]), (.bufferingNewest(0), []),
  ])
  func slowSinkKeepsWhatThePolicySays(policy: FlowBufferingPolicy, expected: [Int]) async {
    let subject = PassthroughFlow<Int, TestError>(bufferingPolicy: policy)
    let gate = Gate()
    let log = SinkLog()
    let subscription = subject.sink {
      log.completion($0)
    } receiveValue: { value in
      if value == 1 { await gate.wait() }
      log.append(.value(value))
    }
    subject.send(1)
    if !expected.isEmpty { await gate.entered() }
    for value in 2...10 { subject.send(value) }
    subject.finish()
    gate.release()
    await log.logged(count: expected.count + 1)
    #expect(log.events == expected.map { .value($0) } + [.finished], "\(policy)")
    withExtendedLifetime(subscription) {}
  }

  // MARK: Cancellation

  /// `cancel()` from the sink's own isolation (the main actor) inside a batch: the values after it
  /// in that batch, and the end, are not delivered.
  @Test @MainActor func cancelOnTheMainActorDeliversNothingAfterItReturns() async {
    let clock = TestClock()
    let subject = PassthroughFlow<Int, Never>()
    let box = SinkBox()
    let completed = Signal()
    box.subscription = subject.sink { _ in
      completed.fire()
    } receiveValue: { @MainActor value in
      box.received.append(value)
      if value == 3 {
        box.subscription?.cancel()
        box.subscription = nil
      }
    }
    await clock.onSchedule {
      for value in 1...10 { subject.send(value) }  // one batch: the drain waits for the main actor
      subject.finish()
    }
    await clock.runCurrent()
    #expect(box.received == [1, 2, 3])
    #expect(!completed.isFired)
    #expect(subject.subscriberCount == 0)
  }

  /// `cancel()` on the main actor between two values of a background sink's batch.
  @Test @MainActor func cancelBetweenTwoDeliveriesStopsTheBatch() async {
    let executor = CountingExecutor()
    let subject = PassthroughFlow<Int, TestError>()
    let allSent = Gate()
    let gate = Gate()
    let log = SinkLog()
    let subscription = subject.sink {
      log.completion($0)
    } receiveValue: { value in
      log.append(.value(value))
      // Without this wait, a drain that began at once could empty the mailbox before 2 was sent,
      // end, and leave 2...5 to a second drain: three jobs instead of one batch's (seen under load).
      if value == 1 { await allSent.wait() }
      if value == 2 { await gate.wait() }
    }
    executor.scheduling {
      for value in 1...5 { subject.send(value) }
    }
    // Each release only once the drain's job has ended, so that the drain has suspended: a
    // continuation resumed before its task suspends lets the task go on in the same job, and the
    // drain ran in two jobs, not three (seen once under ThreadSanitizer beside a build; the wait
    // for the third job then never returned).
    await allSent.entered()
    await executor.finished(count: 1)
    allSent.release()
    await gate.entered()
    await executor.finished(count: 2)
    subscription.cancel()
    #expect(subject.subscriberCount == 0)
    subject.send(6)
    subject.finish()
    gate.release()
    // The drain's three jobs: up to the first gate, from there to the second, then from it to its
    // end. 3...5 meet the closed gate, 6 was never buffered, and the end is not delivered.
    await executor.finished(count: 3)
    #expect(executor.enqueued == 3)
    #expect(log.events == [.value(1), .value(2)])
  }

  /// `cancel()` reaches the call in progress, as it does a task-based sink's: the drain running
  /// the closure is cancelled, so an await in it that honours cancellation ends, and the drain with
  /// it, instead of keeping the closure and what it captures (a model) alive.
  @Test func cancelCancelsTheDrainRunningTheClosure() async {
    let executor = CountingExecutor()
    let subject = PassthroughFlow<Int, Never>()
    let gate = Gate()
    let sawCancellation = Signal()
    let subscription = subject.sink { _ in
      await withTaskCancellationHandler {
        await gate.wait()
      } onCancel: {
        sawCancellation.fire()
      }
    }
    executor.scheduling { subject.send(1) }
    await gate.entered()
    // The drain's first job has ended: its task is suspended at the gate. A cancellation that
    // came while it was still parking would resume it before it suspended, and the drain would
    // go on in that same job (one job, not two: a count the test cannot then wait for).
    await executor.finished(count: 1)
    subscription.cancel()
    #expect(sawCancellation.isFired)  // the handler ran inside cancel()
    gate.release()  // lets the closure end if it was not cancelled
    await executor.finished(count: 2)  // the drain: up to the gate, then to its end
    #expect(subject.subscriberCount == 0)
  }

  @Test func releasingTheSubscriptionCancelsEvenWhileItsDrainRuns() async {
    let executor = CountingExecutor()
    let subject = PassthroughFlow<Int, TestError>()
    let gate = Gate()
    let log = SinkLog()
    var subscription: FlowSubscription? = subject.sink {
      log.completion($0)
    } receiveValue: { value in
      log.append(.value(value))
      if value == 1 { await gate.wait() }
    }
    executor.scheduling {
      for value in 1...3 { subject.send(value) }
    }
    await gate.entered()
    await executor.finished(count: 1)  // suspended at the gate, not still parking (see above)
    weak let released = subscription
    subscription = nil
    #expect(released == nil)  // nothing else holds it: not the drain, not the subject
    #expect(subject.subscriberCount == 0)
    subject.finish()
    gate.release()
    await executor.finished(count: 2)
    #expect(executor.enqueued == 2)
    #expect(log.events == [.value(1)])
  }

  /// The hot sources' `sink` is an overload chosen at compile time, as the docs say: through a
  /// generic parameter the task-based `sink` of `AsyncSequence` runs, even on a subject.
  @Test func aSinkThroughAGenericParameterIsTheTaskBasedOne() async {
    func sinkGenerically(_ sequence: some AsyncSequence<Int, Never> & Sendable) -> FlowSubscription {
      sequence.sink { _ in }
    }
    let subject = PassthroughFlow<Int, Never>()
    let direct = subject.sink { _ in }
    #expect(direct.task == nil)  // a mailbox, registered at once
    #expect(subject.subscriberCount == 1)
    let generic = sinkGenerically(subject)
    #expect(generic.task != nil)
    generic.cancel()
    if let task = generic.task { await bounded(task, "the generic sink's task") }
    withExtendedLifetime(direct) {}
  }

  // MARK: CurrentValueFlow and shareFlow

  @Test func currentValueSinkReceivesTheCurrentValueFirst() async {
    let filter = CurrentValueFlow(5)
    let log = SinkLog()
    let subscription = filter.sink { _ in
      log.append(.finished)
    } receiveValue: {
      log.append(.value($0))
    }
    await log.logged(count: 1)
    filter.value = 6
    filter.finish()
    await log.logged(count: 3)
    #expect(log.events == [.value(5), .value(6), .finished])
    withExtendedLifetime(subscription) {}
  }

  @Test func shareFlowSinkStartsTheUpstreamCountsAndStopsItWhenTheLastLeaves() async {
    let started = Signal()
    let stopped = Signal()
    let upstream = PassthroughFlow<Int, Never>()
    let shared = Flow<Int, Never> { emitter in
      started.fire()
      defer { stopped.fire() }
      for await value in upstream { await emitter.emit(value) }
    }.shareFlow(replay: 1)
    let log = SinkLog()
    var subscription: FlowSubscription? = shared.sink { log.append(.value($0)) }
    #expect(shared.subscriberCount == 1)
    await started.wait()  // a sink asks at once, as an iterator's first next() does
    await upstream.subscribers(count: 1)
    upstream.send(1)
    await log.logged(count: 1)
    // A late iterator gets the replay; the sink's leaving does not stop the upstream under it.
    var iterator = shared.makeAsyncIterator()
    #expect(await iterator.next() == 1)
    subscription = nil
    _ = subscription
    #expect(shared.subscriberCount == 1)
    upstream.send(2)
    #expect(await iterator.next() == 2)
    #expect(!stopped.isFired)
    _ = consume iterator  // the last subscriber leaves: the upstream stops
    await stopped.wait()
    #expect(log.values == [1])
  }

  @Test func shareFlowSinkReceivesTheUpstreamEndOnce() async {
    let shared = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      await emitter.emit(2)
      throw TestError(id: 7)
    }.shareFlow()
    let log = SinkLog()
    let subscription = shared.sink {
      log.completion($0)
    } receiveValue: {
      log.append(.value($0))
    }
    await log.logged(count: 3)
    #expect(log.events == [.value(1), .value(2), .failed(7)])
    #expect(shared.subscriberCount == 0)
    withExtendedLifetime(subscription) {}
  }

  /// The last sink leaving stops the share; the next sink starts it again, with the replay its
  /// scope keeps (as `shareReplaysThePreviousRunAcrossRestartsWhenAsked` for iterators).
  @Test(arguments: [(FlowReplayScope.whileRunning, [201]), (.acrossRestarts, [101, 201])])
  func shareFlowSinkRestartsTheUpstreamWithItsReplayScope(scope: FlowReplayScope, expected: [Int]) async {
    let runs = LockedState(0)
    let gate = Gate()
    let shared = Flow<Int, Never>(bufferSize: 0) { emitter in
      let run = runs.withLock { runs in
        runs += 1
        return runs
      }
      await emitter.emit(run * 100 + 1)
      await gate.wait()  // until cancelled
    }.shareFlow(replay: 1, replayScope: scope)
    let first = SinkLog()
    var subscription: FlowSubscription? = shared.sink { first.append(.value($0)) }
    await first.logged(count: 1)
    subscription = nil  // the last subscriber leaves: the upstream stops
    _ = subscription
    #expect(shared.subscriberCount == 0)
    let second = SinkLog()
    let next = shared.sink { second.append(.value($0)) }
    await second.logged(count: expected.count)
    #expect(second.values == expected, "\(scope)")
    #expect(first.values == [101])
    withExtendedLifetime(next) {}
  }

  // MARK: No task while idle, one drain while busy

  @Test func idleSinksStartNoTaskAndEachSendStartsOneDrainPerIdleMailbox() async {
    let executor = CountingExecutor()
    let subject = PassthroughFlow<Int, Never>()
    let received = Counter()
    let subscriptions = executor.scheduling {
      (0..<100).map { _ in subject.sink { _ in received.add() } }
    }
    #expect(subject.subscriberCount == 100)
    #expect(executor.enqueued == 0)  // 100 idle sinks: no task
    executor.scheduling { subject.send(1) }
    #expect(executor.enqueued == 100)  // one drain per mailbox
    await executor.finished(count: 100)
    #expect(received.value == 100)
    // Each drain delivered and ended in its one job: every mailbox is idle again, with no task.
    #expect(subject.storage.state.withLock { $0.drainingCount } == 0)
    #expect(executor.enqueued == 100)
    withExtendedLifetime(subscriptions) {}
  }

  /// A slow sink while many values arrive: they wait in its mailbox for the one drain that runs,
  /// which delivers them in batches; no task per value.
  @Test func slowSinkHasOneDrainWhileManyValuesArrive() async {
    let executor = CountingExecutor()
    let subject = PassthroughFlow<Int, TestError>()
    let gate = Gate()
    let log = SinkLog()
    let subscription = subject.sink {
      log.completion($0)
    } receiveValue: { value in
      if value == 0 { await gate.wait() }
      log.append(.value(value))
    }
    executor.scheduling { subject.send(0) }
    await gate.entered()
    executor.scheduling {
      for value in 1..<10_000 { subject.send(value) }
      subject.finish()
    }
    #expect(executor.enqueued == 1)  // the drain, parked in the sink's closure: no other task
    gate.release()
    await log.logged(count: 10_001)
    #expect(log.values == Array(0..<10_000))
    #expect(log.events.last == .finished)
    withExtendedLifetime(subscription) {}
  }

  /// Senders on several threads and sinks draining on others: nothing lost, nothing twice, each
  /// sender's order kept, the end once and last.
  @Test func concurrentSendersAndSinksLoseNothing() async {
    for _ in 0..<20 {
      let subject = PassthroughFlow<Int, TestError>()
      let logs = (0..<4).map { _ in SinkLog() }
      let subscriptions = logs.map { log in
        subject.sink {
          log.completion($0)
        } receiveValue: {
          log.append(.value($0))
        }
      }
      await withTaskGroup(of: Void.self) { group in
        for sender in 0..<4 {
          group.addTask {
            for index in 0..<1_000 {
              subject.send(sender * 10_000 + index)
              if index % 100 == 0 { await Task.yield() }
            }
          }
        }
      }
      subject.finish()
      for log in logs {
        await log.logged(count: 4_001)
        #expect(log.events.last == .finished)
        let values = log.values
        #expect(values.count == 4_000)
        for sender in 0..<4 {
          let own = values.filter { $0 / 10_000 == sender }
          #expect(own == (0..<1_000).map { sender * 10_000 + $0 })
        }
      }
      withExtendedLifetime(subscriptions) {}
    }
  }

  // MARK: assignFlow

  @MainActor final class Model {
    var writes = 0
    var value = 0 {
      didSet {
        MainActor.preconditionIsolated("assignFlow wrote off the caller's isolation")
        writes += 1
      }
    }
  }

  @Test @MainActor func assignFlowOnASubjectWritesOnTheCallersIsolationAndEndsWhenTheObjectIsGone() async {
    let clock = TestClock()
    let subject = PassthroughFlow<Int, Never>()
    var model: Model? = Model()
    let subscription = subject.assignFlow(to: \Model.value, on: model!)
    #expect(subject.subscriberCount == 1)
    await clock.onSchedule {
      subject.send(1)
      subject.send(2)
    }
    await clock.runCurrent()
    #expect(model?.value == 2)
    #expect(model?.writes == 2)
    weak let released = model
    model = nil
    #expect(released == nil)  // held weakly
    await clock.onSchedule { subject.send(3) }
    await clock.runCurrent()
    #expect(subject.subscriberCount == 0)  // the write that found the object gone ended it
    withExtendedLifetime(subscription) {}
  }

  @Test @MainActor func assignFlowOnACurrentValueFlowWritesTheCurrentValueFirstAndStopsOnCancel() async {
    let clock = TestClock()
    let filter = CurrentValueFlow(4)
    let model = Model()
    let subscription = await clock.onSchedule {
      filter.assignFlow(to: \Model.value, on: model, isolation: MainActor.shared)
    }
    await clock.runCurrent()
    #expect(model.value == 4)
    subscription.cancel()
    await clock.onSchedule { filter.value = 5 }
    await clock.runCurrent()
    #expect(model.value == 4)
    #expect(filter.subscriberCount == 0)
  }
}

/// The drain-end race, explored on the pure machine: a sender and the drains that its sends start
/// take turns in a seeded random order, one machine event or one delivery per turn, as threads
/// could interleave them. Whatever the order: every value is delivered once and in order, at most
/// one drain exists at a time, the end comes once and last, and when everything stopped no value
/// waits in a mailbox without a drain (the lost wake-up).
@Suite("Mailbox drain interleavings", .hangGuard)
struct MailboxInterleavingTests {
  typealias Machine = SubjectStateMachineTests.Machine

  /// One drain job as the storage runs it: take a batch (one turn), deliver it one value per turn.
  struct Drain {
    var batch: [Int] = []
    var position = 0
    var mustTake = true
  }

  static func explore(seed: UInt64) -> String? {
    var random = SplitMix64(state: seed)
    let policies: [FlowBufferingPolicy] = [.unbounded, .bufferingOldest(64), .bufferingNewest(64)]
    let policy = policies[Int.random(in: 0..<policies.count, using: &random)]
    var machine = Machine(policy: policy, replayLimit: 0)
    let mailbox = SubjectStateMachineTests.mailbox()
    _ = machine.subscribe(mailbox)
    let total = Int.random(in: 1...12, using: &random)
    let ends = Bool.random(using: &random)
    var sent = 0
    var ended = false
    var drains: [Drain] = []
    var delivered: [Int] = []
    var completions = 0
    while sent < total || (ends && !ended) || !drains.isEmpty {
      if drains.count > 1 { return "\(drains.count) drains at once" }
      let senderCanMove = sent < total || (ends && !ended)
      if senderCanMove, drains.isEmpty || Bool.random(using: &random) {
        let action: Machine.SendAction
        if sent < total {
          action = machine.send(sent)
          sent += 1
        } else {
          action = machine.end(failure: nil)
          ended = true
        }
        drains += action.startDrains.map { _ in Drain() }
        continue
      }
      let index = Int.random(in: 0..<drains.count, using: &random)
      if drains[index].mustTake {
        switch machine.take(mailbox, swapping: &drains[index].batch) {
        case .deliver:
          drains[index].position = 0
          drains[index].mustTake = false
        case .idle, .stop:
          drains.remove(at: index)
        case .complete:
          if completions > 0 { return "the end delivered twice" }
          if sent < total { return "the end before the values" }
          completions += 1
          drains.remove(at: index)
        }
      } else {
        if completions > 0 { return "a value after the end" }
        delivered.append(drains[index].batch[drains[index].position])
        drains[index].position += 1
        drains[index].mustTake = drains[index].position == drains[index].batch.count
      }
    }
    if delivered != Array(0..<total) { return "delivered \(delivered) of 0..<\(total)" }
    if ends, completions != 1 { return "\(completions) ends" }
    if machine.drainingCount != 0 || machine.pushSubscribers.contains(where: { !$0.buffer.isEmpty }) {
      return "a value waits in a mailbox that no drain serves"
    }
    return nil
  }

  @Test func drainEndAndANewSendNeverLoseOrReorderAValue() {
    for seed in stressSeeds(0..<5_000) {
      if let problem = Self.explore(seed: seed) {
        Issue.record(
          Comment(
            rawValue: "\(problem); seed \(seed); replay with: ASYNCFLOW_SEED=\(seed) swift test --filter "
              + "MailboxInterleavingTests"))
        return
      }
    }
  }

  /// Leaving while drains start, run and end, explored as above, with the storage's report of each
  /// drain's task (`drainStarted`) as a turn of its own that may come late. Whatever the order:
  /// nothing is delivered after `unsubscribe`, and every drain still serving the mailbox then is
  /// cancelled, at once or when its task is reported; a report for a drain that ended cancels
  /// nothing.
  static func exploreLeaving(seed: UInt64) -> String? {
    var random = SplitMix64(state: seed)
    var machine = Machine(policy: .unbounded, replayLimit: 0)
    let mailbox = SubjectStateMachineTests.mailbox()
    _ = machine.subscribe(mailbox)
    let total = Int.random(in: 1...8, using: &random)
    let leaveAfter = Int.random(in: 0...(total + 6), using: &random)  // turns before leaving
    var sent = 0
    var turns = 0
    var left = false
    var drains: [Drain] = []
    var ids: [Int] = []  // of `drains`, in the same order
    var unreported: [Int] = []
    var tasks: [Int: Int] = [:]
    var servingWhenLeft: Set<Int> = []
    var cancelled: Set<Int> = []
    while sent < total || !drains.isEmpty || !unreported.isEmpty || !left {
      turns += 1
      if !left, turns > leaveAfter {
        left = true
        servingWhenLeft = Set(ids)
        if let task = machine.unsubscribe(mailbox).cancelDrain, let id = tasks.first(where: { $0.value == task })?.key {
          cancelled.insert(id)
        }
        continue
      }
      switch Int.random(in: 0..<3, using: &random) {
      case 0 where sent < total:
        for drain in machine.send(sent).startDrains {
          if left { return "a drain started after leaving" }
          drains.append(Drain())
          ids.append(drain.id)
          unreported.append(drain.id)
          if drains.count > 1 { return "\(drains.count) drains at once" }
        }
        sent += 1
      case 1 where !unreported.isEmpty:
        let id = unreported.remove(at: Int.random(in: 0..<unreported.count, using: &random))
        let task = 100 + id
        tasks[id] = task
        if let toCancel = machine.drainStarted(mailbox, id: id, task: task) {
          if toCancel != task { return "drainStarted returned another task" }
          if !servingWhenLeft.contains(id) { return "drain \(id) cancelled though it had ended" }
          cancelled.insert(id)
        }
      case 2 where !drains.isEmpty:
        let index = Int.random(in: 0..<drains.count, using: &random)
        if left {  // the gate is closed: the drain delivers nothing more and ends
          drains.remove(at: index)
          ids.remove(at: index)
          continue
        }
        if drains[index].mustTake {
          switch machine.take(mailbox, swapping: &drains[index].batch) {
          case .deliver:
            drains[index].position = 0
            drains[index].mustTake = false
          case .idle, .stop, .complete:
            drains.remove(at: index)
            ids.remove(at: index)
          }
        } else {
          drains[index].position += 1
          drains[index].mustTake = drains[index].position == drains[index].batch.count
        }
      default:
        if sent >= total, drains.isEmpty, unreported.isEmpty, left { break }
        continue
      }
    }
    if cancelled != servingWhenLeft {
      return "cancelled \(cancelled.sorted()), serving when left \(servingWhenLeft.sorted())"
    }
    if machine.subscriberCount != 0 { return "still subscribed" }
    return nil
  }

  @Test func leavingCancelsTheServingDrainWhateverTheOrder() {
    for seed in stressSeeds(0..<2_000) {
      if let problem = Self.exploreLeaving(seed: seed) {
        Issue.record(Comment(rawValue: "\(problem); seed \(seed)"))
        return
      }
    }
  }
}
