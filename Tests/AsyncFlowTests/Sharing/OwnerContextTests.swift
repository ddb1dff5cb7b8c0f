import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// A share made in a `FlowOwner` runs its upstream in the owner's context: the task-local values
/// and priority of where the owner was made, whoever subscribes, reconnects included; a share
/// without one keeps the subscriber's that started it. The task-local value is a request ID, as a
/// service's logger reads it.
@Suite("Shares in an owner's context", .hangGuard)
struct OwnerContextTests {
  /// An upstream that logs each connect with the request ID and priority it runs with, emits one
  /// element, then waits until it is stopped.
  private static func connection(_ probe: ContextProbe) -> Flow<Int, Never> {
    Flow { emitter in
      probe.note("connect")
      await emitter.emit(1)
      await Gate().wait()  // returns once cancelled: the share stopped it
    }
  }

  /// Subscribes as request `id` (at the consumers' priority), takes the first element, and leaves.
  private static func firstElement(of share: AsyncShareFlowSequence<Int, Never>, as id: String) async -> Int? {
    await inContext(id) {
      var iterator = share.makeAsyncIterator()
      return await iterator.next()
    }.value
  }

  @Test func aShareMadeInAnOwnerConnectsInTheOwnersContextWhoeverSubscribes() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let owner = await Task(priority: .utility) { Trace.$id.withValue("service") { FlowOwner() } }.value
    let share = Self.connection(probe).shareFlow(owner: owner)
    #expect(await Self.firstElement(of: share, as: "A") == 1)
    // A left: the upstream stopped. B's subscription connects again.
    #expect(await Self.firstElement(of: share, as: "B") == 1)
    #expect(await owner.shutdown().isComplete)
    #expect(
      probe.notes == [
        SeenContext(place: "connect", id: "service", priority: .utility),
        SeenContext(place: "connect", id: "service", priority: .utility),
      ])
  }

  /// Without an owner, the rule stays: the subscriber that started the upstream.
  @Test func aShareWithoutAnOwnerConnectsInTheContextOfTheSubscriberThatStartedIt() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let share = Self.connection(probe).shareFlow()
    #expect(await Self.firstElement(of: share, as: "A") == 1)
    #expect(await Self.firstElement(of: share, as: "B") == 1)
    #expect(probe.notes.map(\.id) == ["A", "B"])
  }

  /// A key's upstream in the owner's context, on the test clock's
  /// schedule, where the owner made on it runs its task.
  @Test func aKeyedSharesUpstreamRunsInTheOwnersContextOnTheClock() async {
    let clock = TestClock()
    let probe = ContextProbe(clock: clock)
    let owner = await clock.onSchedule { Trace.$id.withValue("service") { FlowOwner() } }
    let quotes = KeyedShareFlow(gracePeriod: .seconds(5), clock: clock, owner: owner) { (symbol: String) in
      Flow<String, Never> { emitter in
        probe.note("connect \(symbol)")
        await emitter.emit(symbol)
        await Gate().wait()
      }
    }
    let subscriber = await Task(priority: consumerPriority) {
      Trace.$id.withValue("A") {
        clock.task {
          var iterator = quotes["AAPL"].makeAsyncIterator()
          return await iterator.next()
        }
      }
    }.value
    await clock.runCurrent()
    #expect(await bounded(subscriber, "the subscriber") == "AAPL")
    await clock.advance(by: .seconds(5))  // the grace period ran out: the upstream stopped
    #expect(quotes.keyCount == 0)
    #expect(probe.notes.map(\.id) == ["service"])
    let shutdown = clock.task { await owner.shutdown() }
    await clock.runCurrent()
    #expect(await bounded(shutdown, "the shutdown")?.isComplete == true)
  }

  /// A hot source's own `sink` has no task while idle: its values are delivered in the sender's
  /// context. The same source erased to a `Flow` takes the sequence's `sink`, which costs a task,
  /// started where `sink` was called: its closure runs with that caller's task-local values.
  @Test func aSinkAsksForItsCallersContextByErasingTheSourceToAFlow() async {
    let subject = PassthroughFlow<Int, Never>()
    let calls = ControlledCalls<String, Void>()
    let inCallersContext = Trace.$id.withValue("caller") {
      subject.eraseToFlow().sink { _ in await calls.call("caller's task: \(Trace.id)") }
    }
    let inSendersContext = Trace.$id.withValue("caller") {
      subject.sink { _ in await calls.call("mailbox: \(Trace.id)") }
    }
    await Task { Trace.$id.withValue("sender") { subject.send(1) } }.value
    await calls.calls(count: 2)
    #expect(calls.arguments.sorted() == ["caller's task: caller", "mailbox: sender"])
    for call in calls.waitingCalls { calls.respond(toCall: call.index, with: ()) }
    inCallersContext.cancel()
    inSendersContext.cancel()
  }
}
