import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// Pulls until the first non-element.
private func drain(_ stepper: AnyStepper) async {
  while await stepper.next().isElement {}
}

/// Starts `body` in a task at `priority` with `Trace.id` bound to `id`, as a request handler of a
/// server would: the task the iteration's first `next()` (or the subscription) is made from.
func inContext<T: Sendable>(
  _ id: String, priority: TaskPriority = consumerPriority, _ body: @escaping @Sendable () async -> T
) -> Task<T, Never> {
  Task(priority: priority) { await Trace.$id.withValue(id) { await body() } }
}

/// What the user's code of `row` saw, iterated to its end by a consumer in the consumer's context,
/// without a test clock: every task AsyncFlow starts is started as in an app.
private func seenWithoutTestClock(_ row: ContextCase) async -> [SeenContext]? {
  let probe = ContextProbe(clock: ImmediateClock())
  let consumer = inContext(consumerTraceID) {
    probe.note("consumer")
    await drain(row.make(probe))
  }
  guard await bounded(consumer, "the consumer of \(row)") != nil else { return nil }
  return probe.notes
}

/// The same on a test clock's schedule: the consumer is started there, from a task in the
/// consumer's context, and the clock runs until nothing sleeps.
private func seenOnTestClock(_ row: ContextCase) async -> [SeenContext]? {
  let clock = TestClock()
  let probe = ContextProbe(clock: clock)
  let consumer = await Task(priority: consumerPriority) {
    Trace.$id.withValue(consumerTraceID) {
      clock.task {
        probe.note("consumer")
        await drain(row.make(probe))
      }
    }
  }.value
  await clock.run()
  guard await clock.value(of: consumer) != nil else { return nil }
  return probe.notes
}

/// Every note has the consumer's trace ID and priority, and every one of `places` was reached.
func expectConsumersContext(
  _ seen: [SeenContext], _ name: String, places: Set<String>, sourceLocation: SourceLocation = #_sourceLocation
) {
  let strays = seen.filter { $0.id != consumerTraceID || $0.priority != consumerPriority }
  #expect(strays.isEmpty, "\(name): ran outside the consumer's context: \(strays)", sourceLocation: sourceLocation)
  let missing = places.subtracting(seen.map(\.place))
  #expect(missing.isEmpty, "\(name): never ran: \(missing.sorted())", sourceLocation: sourceLocation)
}

/// Issue 38: a task AsyncFlow starts for an iteration runs with the task-local values and the
/// priority of the task that made the iteration's first `next()`, with or without a test clock.
@Suite("Context: the consumer's task-local values and priority", .hangGuard)
struct ContextConformanceTests {
  @Test func everyOperatorRowHasAContextRow() {
    let missing = Set(operatorTable.map(\.name)).subtracting(contextTable.map(\.name))
    #expect(missing.isEmpty, "rows of operatorTable with no row in contextTable: \(missing.sorted())")
  }

  @Test(arguments: contextTable)
  func userCodeRunsInTheConsumersContextWithoutATestClock(_ row: ContextCase) async {
    guard let seen = await seenWithoutTestClock(row) else { return }
    expectConsumersContext(seen, row.name, places: row.places)
  }

  @Test(arguments: contextTable)
  func userCodeRunsInTheConsumersContextOnATestClock(_ row: ContextCase) async {
    guard let seen = await seenOnTestClock(row) else { return }
    expectConsumersContext(seen, row.name, places: row.places)
  }

  /// The body's binding ends with its scope: the consumer, and the inners that the outer's task
  /// starts for the elements the body emitted in it, see the consumer's value.
  @Test func aTaskLocalBoundInAFlowBodyStaysInTheBody() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let outer = Flow<Int, TestError> { emitter in
      await Trace.$id.withValue("bound in the body") {
        probe.note("body")
        await emitter.emit(1)
        await emitter.emit(2)
      }
    }
    let consumer = inContext(consumerTraceID) {
      var iterator = outer.switchToLatestFlow { probe.inner($0) }.makeAsyncIterator()
      while (try? await iterator.next()) != nil { probe.note("consumer loop") }
    }
    guard await bounded(consumer, "the consumer") != nil else { return }
    let seen = probe.notes
    #expect(seen.filter { $0.place == "body" }.map(\.id) == ["bound in the body"])
    let outside = seen.filter { $0.place != "body" }
    #expect(Set(outside.map(\.place)) == ["inner body", "consumer loop"])
    #expect(outside.allSatisfy { $0.id == consumerTraceID && $0.priority == consumerPriority }, "\(outside)")
  }

  // MARK: Terminal operators and app-facing tools (issue 38's table)

  /// `sink` on any sequence starts its task when called: the subscriber's context.
  @Test func aSinkRunsInTheSubscribersContext() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let ended = CompletionSignal()
    let subscription = await inContext(consumerTraceID) {
      probe.upstream().sink { _ in
        probe.note("completion")
        ended.fire()
      } receiveValue: { _ in
        probe.note("value")
      }
    }.value
    guard await bounded("the sink's completion", { await ended.wait() }) != nil else { return }
    expectConsumersContext(probe.notes, "sink", places: ["upstream body", "upstream map", "value", "completion"])
    subscription.cancel()
  }

  /// `assignFlow` on any sequence: its writes run in the subscriber's context (on the caller's
  /// isolation: none here).
  @Test func assignFlowWritesInTheSubscribersContext() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let target = NotedTarget(probe)
    let subscription = await inContext(consumerTraceID) {
      probe.upstream().replaceError(with: 0).assignFlow(to: \.value, on: target)
    }.value
    guard await bounded("the writes", { await target.written.wait() }) != nil else { return }
    expectConsumersContext(probe.notes, "assignFlow", places: ["upstream body", "upstream map", "write"])
    subscription.cancel()
  }

  /// `collectLatest`'s body runs in the task of each value's inner: the consumer's context.
  @Test func collectLatestRunsItsBodyInTheConsumersContext() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let consumer = inContext(consumerTraceID) {
      try? await probe.upstream().collectLatest { _ in probe.note("body") }
    }
    guard await bounded(consumer, "collectLatest") != nil else { return }
    expectConsumersContext(probe.notes, "collectLatest", places: ["upstream body", "upstream map", "body"])
  }

  /// `TaskSlots.run` already inherited the caller's context; kept as the last row.
  @Test func aTaskSlotsRunRunsInTheCallersContext() async {
    let probe = ContextProbe(clock: ImmediateClock())
    let slots = TaskSlots<Int>()
    let run = await inContext(consumerTraceID) { slots.run(0) { probe.note("operation") } }.value
    guard await bounded(run: run) != nil else { return }
    expectConsumersContext(probe.notes, "TaskSlots.run", places: ["operation"])
  }
}

/// What `assignFlow` writes to: the setter notes where it runs.
private final class NotedTarget: Sendable {
  let probe: ContextProbe
  let written = CompletionSignal()
  init(_ probe: ContextProbe) { self.probe = probe }
  var value: Int {
    get { 0 }
    set {
      probe.note("write")
      if newValue == 2 { written.fire() }
    }
  }
}
