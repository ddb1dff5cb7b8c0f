import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// A clock whose sleeps note the context they run in (the grace timer's), then sleep on `base`.
private struct NotingClock: Clock {
  typealias Instant = AnyFlowClock.Instant
  let base: AnyFlowClock
  let probe: ContextProbe
  let slept: CompletionSignal

  var now: Instant { base.now }
  var minimumResolution: Duration { base.minimumResolution }

  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    probe.note("grace timer")
    slept.fire()
    try await base.sleep(until: deadline, tolerance: tolerance)
  }
}

/// Starts `body` on `clock`'s schedule from a task at `priority` with `Trace.id` bound to `id`.
private func onClock(
  _ clock: TestClock, _ id: String, priority: TaskPriority = consumerPriority,
  _ body: @escaping @Sendable () async -> Void
) async -> Task<Void, Never> {
  await Task(priority: priority) { Trace.$id.withValue(id) { clock.task(body) } }.value
}

/// The hot sources' context rules (Guides/Guarantees.md, "Context"), without a test clock: a
/// share's upstream runs in the context of the subscriber whose iteration started it, and its grace
/// timer in the upstream's; a subject's sink delivers in the context of the send that found it idle.
@Suite("Hot sources: whose context", .hangGuard)
struct HotSourcesContextTests {
  @Test func aShareRunsItsUpstreamInTheContextOfTheSubscriberThatStartedIt() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let gate = Gate()
    let share = Flow<Int, Never> { emitter in
      probe.note("upstream body")
      await emitter.emit(1)
      await gate.wait()  // the second subscriber joins meanwhile
      await emitter.emit(2)
    }.map {
      probe.note("upstream map")
      return $0
    }.shareFlow()
    let firstGotOne = CompletionSignal()
    let first = inContext("first") {
      var iterator = share.makeAsyncIterator()
      var received = await iterator.next().map { [$0] } ?? []
      firstGotOne.fire()
      while let element = await iterator.next() { received.append(element) }
      return received
    }
    guard await bounded("the first element", { await firstGotOne.wait() }) != nil else { return }
    let second = inContext("second", priority: .medium) { await share.reduce(into: []) { $0.append($1) } }
    await share.subscribers(count: 2)
    await gate.entered()
    gate.release()
    #expect(await bounded(first, "the first subscriber") == [1, 2])
    #expect(await bounded(second, "the second subscriber") == [2])
    #expect(
      probe.notes == [
        SeenContext(place: "upstream body", id: "first", priority: .high),
        SeenContext(place: "upstream map", id: "first", priority: .high),
        SeenContext(place: "upstream map", id: "first", priority: .high),
      ])
  }

  @Test func aShareStartedAgainRunsInTheContextOfTheSubscriberThatStartedItAgain() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let never = Gate()
    let share = Flow<Int, Never> { emitter in
      probe.note("upstream body")
      await emitter.emit(1)
      await never.wait()  // until the last subscriber leaves
    }.shareFlow()
    for id in ["first", "third"] {
      // Leaves after one element: the upstream stops, and the next subscriber starts it again.
      let subscriber = inContext(id) { await share.first { _ in true } }
      #expect(await bounded(subscriber, id) == 1)
    }
    #expect(probe.notes.map(\.id) == ["first", "third"])
    #expect(probe.notes.allSatisfy { $0.priority == .high })
  }

  /// The last subscriber to leave starts the grace period, but its timer runs in the upstream's
  /// context: the one of the subscriber that started the upstream, not the leaver's.
  @Test func aShareGraceTimerRunsInTheUpstreamsContextNotTheLastLeaversOne() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let slept = CompletionSignal()
    let never = Gate()
    let share = Flow<Int, Never> { emitter in
      await emitter.emit(1)
      await never.wait()  // until the grace period ends
    }.shareFlow(
      replay: 1, gracePeriod: .seconds(2), clock: NotingClock(base: probe.clock, probe: probe, slept: slept))
    let (firstJoined, secondJoined, firstLeft) = (CompletionSignal(), CompletionSignal(), CompletionSignal())
    let first = inContext("first") {
      var iterator = share.makeAsyncIterator()
      _ = await iterator.next()  // started the upstream
      firstJoined.fire()
      await secondJoined.wait()
    }
    guard await bounded("the first subscriber's element", { await firstJoined.wait() }) != nil else { return }
    let second = inContext("second", priority: .medium) {
      var iterator = share.makeAsyncIterator()
      _ = await iterator.next()  // the replay
      secondJoined.fire()
      await firstLeft.wait()
    }
    guard await bounded(first, "the first subscriber") != nil else { return }
    firstLeft.fire()
    guard await bounded(second, "the second subscriber") != nil else { return }
    guard await bounded("the grace timer", { await slept.wait() }) != nil else { return }
    #expect(probe.notes == [SeenContext(place: "grace timer", id: "first", priority: .high)])
  }

  /// The same on a test clock's schedule, where the timer's executor preference comes with the
  /// upstream task's context.
  @Test func aShareGraceTimerRunsInTheUpstreamsContextOnATestClock() async {
    let clock = TestClock()
    let probe = ContextProbe(clock: clock)
    let slept = CompletionSignal()
    let never = Gate()
    let share = Flow<Int, Never> { emitter in
      await emitter.emit(1)
      await never.wait()  // until the grace period ends
    }.shareFlow(
      replay: 1, gracePeriod: .seconds(2), clock: NotingClock(base: probe.clock, probe: probe, slept: slept))
    let (secondJoined, firstLeft) = (CompletionSignal(), CompletionSignal())
    let first = await onClock(clock, "first") {
      var iterator = share.makeAsyncIterator()
      _ = await iterator.next()
      await secondJoined.wait()
    }
    await clock.runCurrent()
    let second = await onClock(clock, "second", priority: .medium) {
      var iterator = share.makeAsyncIterator()
      _ = await iterator.next()  // the replay
      secondJoined.fire()
      await firstLeft.wait()
    }
    await clock.runCurrent()
    #expect(await clock.value(of: first) != nil)
    firstLeft.fire()
    #expect(await clock.value(of: second) != nil)
    #expect(probe.notes == [SeenContext(place: "grace timer", id: "first", priority: .high)])
    await clock.advance(by: .seconds(2))
    #expect(clock.pendingSleepers == 0)
    #expect(share.subscriberCount == 0)
  }

  /// A sink holds no task while idle: its drain starts at `send`, in the sender's task, and
  /// delivers in the sender's context, as Combine's `send` calls its sinks in the sender's thread.
  @Test func aSubjectSinkDeliversInTheSendersContext() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let subject = PassthroughFlow<Int, Never>()
    let delivered = [CompletionSignal(), CompletionSignal()]
    let executor = CountingExecutor()
    let subscription = await inContext("subscriber", priority: .medium) {
      subject.sink { value in
        probe.note("sink \(value)")
        delivered[value].fire()
      }
    }.value
    await inContext("first sender") { executor.scheduling { subject.send(0) } }.value
    guard await bounded("the first delivery", { await delivered[0].wait() }) != nil else { return }
    let second = await sendOneAfterTheFirstDrain(
      from: "second sender", to: subject.storage, on: executor, delivered: delivered[1]
    ) { subject.send(1) }
    guard second else { return }
    #expect(
      probe.notes == [
        SeenContext(place: "sink 0", id: "first sender", priority: .high),
        SeenContext(place: "sink 1", id: "second sender", priority: .medium),
      ])
    subscription.cancel()
  }

  /// What a `CurrentValueFlow` sink gets at once, its current value, is delivered from `sink`'s
  /// call: in the subscriber's context. Later values come in their senders'.
  @Test func aCurrentValueSinkGetsTheCurrentValueInTheSubscribersContext() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let subject = CurrentValueFlow(0)
    let delivered = [CompletionSignal(), CompletionSignal()]
    let executor = CountingExecutor()
    let subscription = await inContext("subscriber") {
      executor.scheduling {
        subject.sink { value in
          probe.note("sink \(value)")
          delivered[value].fire()
        }
      }
    }.value
    guard await bounded("the current value", { await delivered[0].wait() }) != nil else { return }
    let sent = await sendOneAfterTheFirstDrain(
      from: "sender", to: subject.storage, on: executor, delivered: delivered[1]
    ) { subject.send(1) }
    guard sent else { return }
    #expect(
      probe.notes == [
        SeenContext(place: "sink 0", id: "subscriber", priority: .high),
        SeenContext(place: "sink 1", id: "sender", priority: .medium),
      ])
    subscription.cancel()
  }

  /// Waits until the drain that delivered 0 has ended (its one job on `executor`), then runs `send`
  /// in `sender`'s context at `.medium` and waits for that delivery; `false` if a wait gave up.
  /// Until the first drain has ended, a second value would join it, in the first one's context:
  /// the delivery's signal fires before the drain looks for more.
  private func sendOneAfterTheFirstDrain(
    from sender: String, to storage: SubjectStorage<Int, Never>, on executor: CountingExecutor,
    delivered: CompletionSignal, _ send: @escaping @Sendable () -> Void
  ) async -> Bool {
    guard await bounded("the first drain's end", { await executor.finished(count: 1) }) != nil else { return false }
    #expect(storage.state.withLock { $0.drainingCount } == 0)
    await inContext(sender, priority: .medium) { executor.scheduling(send) }.value
    return await bounded("the delivery from \(sender)", { await delivered.wait() }) != nil
  }
}
