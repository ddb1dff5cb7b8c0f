import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// Where an edge case runs: on a `TestClock`'s serial schedule, or on real threads (no clock
/// drives the consumer; the timed operators' `TestClock` is never advanced).
enum EdgeSchedule: String, CaseIterable, Sendable, CustomStringConvertible {
  case testClock
  case realThreads

  var description: String { rawValue }
}

/// How the consumer's task is cancelled.
enum EdgeCancellation: String, CaseIterable, Sendable, CustomStringConvertible {
  /// By the transform that makes element 3 of the upstream (`Flow.sequence(0..<6).map`): from the
  /// consumer's own task where the transform runs there (a serial operator), from the operator's
  /// task otherwise.
  case insideATransform
  /// From outside, while the upstream (a plain `AsyncSequence`, not a `Flow`) is parked after 0
  /// and 1; it then returns 2 and 3, cancelled or not.
  case whileParkedInAPlainUpstream

  var description: String { rawValue }
}

/// A plain `AsyncSequence` that ignores cancellation: 0 and 1 at once, then it reports that it is
/// parked and waits for `latch`, then 2 and 3.
struct ParkedPlainSequence: AsyncSequence, Sendable {
  let parked: LockedState<Bool>
  let latch: CompletionSignal

  struct AsyncIterator: AsyncIteratorProtocol {
    let parked: LockedState<Bool>
    let latch: CompletionSignal
    var next = 0

    mutating func next() async throws(TestError) -> Int? {
      defer { next += 1 }
      if next == 2 {
        parked.withLock { $0 = true }
        await latch.wait()
      }
      return next < 4 ? next : nil
    }

    mutating func next(isolation actor: isolated (any Actor)?) async throws(TestError) -> Int? { try await next() }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(parked: parked, latch: latch) }
}

/// One consumer of an edge case: what its `next()` returned, and who cancelled it when.
final class EdgeConsumer: Sendable {
  private struct State {
    var task: Task<Void, Never>?
    var ownTask: Int?
    var cancelRequested = false
    var cancelledInItsOwnTask = false
    var steps: [Step] = []
    var afterCancel: [Step] = []
    var liveAtEnd: Int?
    var returned = false
  }
  private let state = LockedState(State())
  /// On a serial schedule, or when the consumer cancelled itself, the moment `next()` returns is
  /// after every cancellation requested before it: an element then was delivered after it.
  let serial: Bool

  init(serial: Bool) { self.serial = serial }

  func setTask(_ task: Task<Void, Never>) { state.withLock { $0.task = task } }

  /// Cancels the consumer: in place when called from its own task (a transform running there),
  /// through its handle otherwise.
  func cancel() {
    let current = withUnsafeCurrentTask { $0?.hashValue }
    let (own, task) = state.withLock { state -> (Bool, Task<Void, Never>?) in
      let own = current != nil && current == state.ownTask
      state.cancelRequested = true
      state.cancelledInItsOwnTask = own
      return (own, state.task)
    }
    if own { withUnsafeCurrentTask { $0?.cancel() } } else { task?.cancel() }
  }

  /// Pulls until the first non-element, then twice more, recording each step from the consumer's
  /// task the moment `next()` returned.
  func drain(_ stepper: AnyStepper, _ lifetimes: Lifetimes) async {
    let own = withUnsafeCurrentTask { $0?.hashValue }
    state.withLock { $0.ownTask = own }
    defer { state.withLock { $0.returned = true } }
    var ended = false
    for _ in 0..<100 {
      let requestedBefore = state.withLock { $0.cancelRequested }
      let step = await stepper.next()
      let live = lifetimes.live
      let serial = serial
      state.withLock { state in
        state.steps.append(step)
        let after = requestedBefore || (state.cancelRequested && (serial || state.cancelledInItsOwnTask))
        if step.isElement, after { state.afterCancel.append(step) }
        if !step.isElement, state.liveAtEnd == nil { state.liveAtEnd = live }
      }
      if !step.isElement {
        if ended { return }
        ended = true
      }
    }
  }

  var cancelRequested: Bool { state.withLock { $0.cancelRequested } }
  var steps: [Step] { state.withLock { $0.steps } }
  var afterCancel: [Step] { state.withLock { $0.afterCancel } }
  var liveAtEnd: Int? { state.withLock { $0.liveAtEnd } }
  var returned: Bool { state.withLock { $0.returned } }
}

/// A stepper made for an edge run, given the consumer (which a transform may cancel).
typealias EdgeMake = @Sendable (EdgeConsumer, ProbeEnvironment, ParkedPlainSequence) -> AnyStepper

/// Runs one edge case and checks it: nothing delivered after the cancellation, the end is `nil`
/// (and `nil` again), and no body the iteration started runs when it is returned (`awaited`).
func checkEdge(
  _ name: String, _ cancellation: EdgeCancellation, _ schedule: EdgeSchedule, awaited: Bool = true,
  mayNotCancel: Bool = false, env makeEnv: (ParkedPlainSequence) -> ProbeEnvironment, _ make: @escaping EdgeMake,
  sourceLocation: SourceLocation = #_sourceLocation
) async {
  let context = "\(name), \(cancellation), \(schedule)"
  let latch = CompletionSignal()
  let plain = ParkedPlainSequence(parked: LockedState(false), latch: latch)
  let env = makeEnv(plain)
  let consumer = EdgeConsumer(serial: schedule == .testClock)
  let start = CompletionSignal()
  let body: @Sendable () async -> Void = {
    await start.wait()
    await consumer.drain(make(consumer, env, plain), env.lifetimes)
  }
  let task = schedule == .testClock ? env.clock.task(body) : Task { await body() }
  consumer.setTask(task)
  start.fire()

  switch (cancellation, schedule) {
  case (.insideATransform, .testClock):
    await env.clock.run()
  case (.insideATransform, .realThreads):
    break
  case (.whileParkedInAPlainUpstream, .testClock):
    // A row's upstream may park from a plain `Task { }` of its own (the subjects' rows feed their
    // subject from one), which runs off the clock: settling does not wait for it, so the test does,
    // bounded, then lets the consumer on the clock take what it sent and park again.
    await env.clock.runCurrent()
    let parked = Task {
      while !plain.parked.withLock({ $0 }) { await Task.yield() }
    }
    await bounded(
      parked, "\(context): the upstream parking", fileID: sourceLocation.fileID, filePath: sourceLocation.filePath,
      line: sourceLocation.line, column: sourceLocation.column)
    await env.clock.runCurrent()
    consumer.cancel()
    await env.clock.runCurrent()
    latch.fire()
    await env.clock.run()
  case (.whileParkedInAPlainUpstream, .realThreads):
    let parked = Task {
      while !plain.parked.withLock({ $0 }) { await Task.yield() }
    }
    await bounded(
      parked, "\(context): the upstream parking", fileID: sourceLocation.fileID, filePath: sourceLocation.filePath,
      line: sourceLocation.line,
      column: sourceLocation.column)
    consumer.cancel()
    latch.fire()
  }
  if schedule == .testClock, !consumer.returned {
    Issue.record("\(context): next() did not return once the clock settled", sourceLocation: sourceLocation)
    consumer.cancel()
    latch.fire()
  }
  latch.fire()
  await bounded(
    task, "\(context): the consumer", fileID: sourceLocation.fileID, filePath: sourceLocation.filePath,
    line: sourceLocation.line, column: sourceLocation.column)

  let steps = consumer.steps
  if !mayNotCancel {
    #expect(
      consumer.cancelRequested, "\(context): the consumer was never cancelled: \(steps)", sourceLocation: sourceLocation
    )
  }
  #expect(
    consumer.afterCancel.isEmpty, "\(context): delivered after the cancellation: \(consumer.afterCancel) of \(steps)",
    sourceLocation: sourceLocation)
  if let end = steps.firstIndex(where: { !$0.isElement }) {
    #expect(
      steps[end...].allSatisfy { $0 == .end }, "\(context): ended with \(steps[end...])", sourceLocation: sourceLocation
    )
  } else {
    Issue.record("\(context): the iteration never ended: \(steps)", sourceLocation: sourceLocation)
  }
  if awaited {
    #expect(
      consumer.liveAtEnd == 0, "\(context): bodies running when next() returned nil", sourceLocation: sourceLocation)
  }
}

/// The upstream of `insideATransform`: 0 ..< 6, made in the task that pulls it; making 3 cancels
/// the consumer.
func cancellingUpstream(_ consumer: EdgeConsumer) -> Flow<Int, TestError> {
  Flow<Int, Never>.sequence(0..<6).setFailureType(to: TestError.self).map { (value: Int) throws(TestError) -> Int in
    if value == 3 { consumer.cancel() }
    return value
  }
}

/// The environment of an operator row: the upstream replaced by the edge's, inners that emit one
/// element and finish.
func edgeEnvironment(_ cancellation: EdgeCancellation, _ consumer: @escaping @Sendable () -> EdgeConsumer?)
  -> (ParkedPlainSequence) -> ProbeEnvironment
{
  { plain in
    ProbeEnvironment(outer: [], then: .finish, inners: 1, then: .finish) {
      switch cancellation {
      case .insideATransform: cancellingUpstream(consumer()!)
      case .whileParkedInAPlainUpstream: Flow(plain)
      }
    }
  }
}

/// The environment of a run whose upstream is made by the row itself.
func plainEnvironment(_: ParkedPlainSequence) -> ProbeEnvironment {
  ProbeEnvironment(outer: [], then: .finish)
}

/// The rows whose operator never iterates the upstream.
private let rowsWithoutUpstream: Set<String> = ["Flow.single"]

/// The sources, each with a transform fused after it: where the consumer's task makes an element,
/// the transform cancels it (at the second element), and nothing more may be delivered; parked, a
/// source is cancelled from outside and then given one more element.
struct EdgeSource: Sendable, CustomStringConvertible {
  var name: String
  /// Made with a transform that cancels the consumer at its second element.
  var transformed: @Sendable (EdgeConsumer, ProbeEnvironment) -> AnyStepper
  /// Made parked after one element, with what gives it one more (`nil`: it has no parked state).
  var parked: (@Sendable (ProbeEnvironment, CompletionSignal, LockedState<Bool>) -> AnyStepper)?

  var description: String { name }
}

/// `value` after its `index`th call cancels the consumer (a fused transform's call).
func cancelling<T>(_ consumer: EdgeConsumer, atCall index: Int) -> @Sendable (T) -> T {
  let calls = LockedState(0)
  return { value in
    if calls.withLock({
      $0 += 1
      return $0
    }) == index {
      consumer.cancel()
    }
    return value
  }
}

let edgeSources: [EdgeSource] = [
  EdgeSource(name: "Flow.sequence") { consumer, _ in
    AnyStepper(Flow.sequence(0..<6).map(cancelling(consumer, atCall: 2)))
  },
  EdgeSource(name: "Flow.just") { consumer, _ in AnyStepper(Flow.just(1).map(cancelling(consumer, atCall: 1))) },
  EdgeSource(
    name: "Flow { }",
    transformed: { consumer, _ in
      AnyStepper(
        Flow<Int, Never> { emitter in for i in 0..<6 { await emitter.emit(i) } }.map(cancelling(consumer, atCall: 2)))
    },
    parked: { env, latch, parked in
      let lifetimes = env.lifetimes
      return AnyStepper(
        Flow<Int, Never>(bufferSize: 0) { emitter in
          lifetimes.start()
          defer { lifetimes.end() }
          await emitter.emit(0)
          parked.withLock { $0 = true }
          await latch.wait()
          await emitter.emit(1)
          await emitter.emit(2)
        })
    }),
  EdgeSource(
    name: "Flow.single",
    transformed: { consumer, _ in AnyStepper(Flow<Int, Never>.single { 1 }.map(cancelling(consumer, atCall: 1))) },
    parked: { env, latch, parked in
      AnyStepper(
        Flow<Int, Never>.single {
          env.lifetimes.start()
          defer { env.lifetimes.end() }
          parked.withLock { $0 = true }
          await latch.wait()
          return 1
        })
    }),
  EdgeSource(
    name: "Flow.deferred",
    transformed: { consumer, _ in
      AnyStepper(Flow.deferred { Flow.sequence(0..<6) }.map(cancelling(consumer, atCall: 2)))
    },
    parked: { _, latch, parked in
      AnyStepper(Flow.deferred { ParkedPlainSequence(parked: parked, latch: latch) })
    }),
  EdgeSource(
    name: "Flow(base)",
    transformed: { consumer, _ in
      AnyStepper(
        Flow(
          AsyncStream<Int> {
            for i in 0..<6 { $0.yield(i) }
            $0.finish()
          }
        ).map(cancelling(consumer, atCall: 2)))
    },
    parked: { _, latch, parked in AnyStepper(Flow(ParkedPlainSequence(parked: parked, latch: latch))) }),
  EdgeSource(
    name: "Flow.callbacks",
    transformed: { consumer, _ in
      AnyStepper(
        Flow<Int, Never>.callbacks { callbacks in
          for i in 0..<6 { _ = callbacks.send(i) }
          return {}
        }.map(cancelling(consumer, atCall: 2)))
    },
    parked: { env, latch, parked in
      AnyStepper(
        Flow<Int, Never>.callbacks { callbacks in
          _ = callbacks.send(0)
          parked.withLock { $0 = true }
          // The callback API calls back once more, on its own thread, after the consumer left.
          Task {
            await latch.wait()
            _ = callbacks.send(1)
          }
          return {}
        })
    }),
  EdgeSource(
    name: "PassthroughFlow",
    transformed: { consumer, _ in
      // Each element sends the next one from the transform, in the consumer's task: no task
      // beside the consumer (whose start the clock could not see) feeds the subject.
      let subject = PassthroughFlow<Int, Never>()
      let cancel: @Sendable (Int) -> Int = cancelling(consumer, atCall: 2)
      let elements = subject.map { (value: Int) -> Int in
        if value < 5 { subject.send(value + 1) }
        return cancel(value)
      }
      let stepper = AnyStepper(elements)  // its iterator subscribes when it is made
      subject.send(0)
      return stepper
    },
    parked: { _, latch, parked in
      let subject = PassthroughFlow<Int, Never>()
      return AnyStepper(
        Flow.deferred {
          Task {
            await subject.subscribers(count: 1)
            subject.send(0)
            parked.withLock { $0 = true }
            await latch.wait()
            subject.send(1)
          }
          return subject
        })
    }),
  EdgeSource(
    name: "CurrentValueFlow",
    transformed: { consumer, _ in
      // The current value 0 first, then each element sends the next one from the transform, in
      // the consumer's task (see PassthroughFlow's row).
      let subject = CurrentValueFlow(0)
      let cancel: @Sendable (Int) -> Int = cancelling(consumer, atCall: 2)
      return AnyStepper(
        subject.map { (value: Int) -> Int in
          if value < 5 { subject.send(value + 1) }
          return cancel(value)
        })
    },
    parked: { _, latch, parked in
      let subject = CurrentValueFlow(0)
      parked.withLock { $0 = true }
      Task {
        await latch.wait()
        subject.send(1)
      }
      return AnyStepper(subject)
    }),
  EdgeSource(
    name: "shareFlow",
    transformed: { consumer, _ in
      AnyStepper(Flow.sequence(0..<6).shareFlow().map(cancelling(consumer, atCall: 2)))
    },
    parked: { _, latch, parked in AnyStepper(Flow(ParkedPlainSequence(parked: parked, latch: latch)).shareFlow()) }),
  EdgeSource(
    name: "Flow.timer",
    transformed: { consumer, env in
      AnyStepper(Flow.timer(every: .seconds(1), clock: env.clock).map(cancelling(consumer, atCall: 2)))
    },
    parked: nil),
]

@Suite("Cancellation at the edges: nothing after it, on every path", .hangGuard)
struct CancellationEdgeConformanceTests {
  /// Every operator of `operatorTable` over an upstream whose element is made after the consumer's
  /// cancellation, in each way and on each schedule.
  @Test(arguments: operatorTable, EdgeCancellation.allCases)
  func operatorDeliversNothingAfterTheCancellation(_ row: OperatorCase, _ cancellation: EdgeCancellation) async {
    // Nothing parks where no upstream is iterated: the sources' table has the operation parked.
    if cancellation == .whileParkedInAPlainUpstream, rowsWithoutUpstream.contains(row.name) { return }
    for schedule in EdgeSchedule.allCases {
      let holder = LockedState<EdgeConsumer?>(nil)
      await checkEdge(
        row.name, cancellation, schedule, awaited: row.upstream == .awaited,
        mayNotCancel: rowsWithoutUpstream.contains(row.name),
        env: edgeEnvironment(cancellation) { holder.withLock { $0 } }
      ) { consumer, env, _ in
        holder.withLock { $0 = consumer }
        return row.make(env)
      }
    }
  }

  /// The serial operators directly over a plain sequence parked when the consumer is cancelled
  /// from outside: what it returns after is not delivered.
  @Test(arguments: [
    "scanFlow", "removeDuplicatesFlow()", "removeDuplicatesFlow(by:)", "collectFlow(count:)", "handleEventsFlow",
    "traceFlow", "catch", "mapError", "replaceError", "materialize", "asLoadState", "prependState",
    "retryWithBackoff", "debounceFlow", "bufferFlow", "switchToLatestFlow",
  ])
  func serialOperatorOverAParkedPlainSequenceDeliversNothingAfterTheCancellation(_ name: String) async {
    for schedule in EdgeSchedule.allCases {
      await checkEdge(
        name, .whileParkedInAPlainUpstream, schedule,
        env: plainEnvironment
      ) { _, env, plain in
        switch name {
        case "scanFlow": AnyStepper(plain.scanFlow(0) { (sum: Int, x: Int) throws(TestError) in sum + x })
        case "removeDuplicatesFlow()": AnyStepper(plain.removeDuplicatesFlow())
        case "removeDuplicatesFlow(by:)": AnyStepper(plain.removeDuplicatesFlow { $0 == $1 })
        case "collectFlow(count:)": AnyStepper(plain.collectFlow(count: 1))
        case "handleEventsFlow": AnyStepper(plain.handleEventsFlow(onElement: { _ in }))
        case "traceFlow": AnyStepper(plain.traceFlow("edge") { _ in })
        case "catch": AnyStepper(plain.catch { _ in Flow<Int, Never>.just(-1) })
        case "mapError": AnyStepper(plain.mapError { TestError(id: $0.id + 1) })
        case "replaceError": AnyStepper(plain.replaceError(with: -1))
        case "materialize": AnyStepper(plain.materialize())
        case "asLoadState": AnyStepper(plain.asLoadState())
        case "prependState": AnyStepper(plain.prependState(-1))
        case "retryWithBackoff":
          AnyStepper(plain.retryWithBackoff(maxRetries: 1, initialDelay: .seconds(1), clock: env.clock))
        case "debounceFlow": AnyStepper(plain.debounceFlow(for: .seconds(1), clock: env.clock))
        case "bufferFlow": AnyStepper(plain.bufferFlow(policy: .unbounded))
        default: AnyStepper(plain.switchToLatestFlow { Flow<Int, Never>.just($0).setFailureType(to: TestError.self) })
        }
      }
    }
  }

  /// Every source, with a fused transform that cancels the consumer, and parked when the
  /// consumer is cancelled from outside, then given one more element.
  @Test(arguments: edgeSources, EdgeCancellation.allCases)
  func sourceDeliversNothingAfterTheCancellation(_ source: EdgeSource, _ cancellation: EdgeCancellation) async {
    if cancellation == .whileParkedInAPlainUpstream, source.parked == nil { return }
    // The timer's clock is the test clock: it ticks only when advanced.
    for schedule in EdgeSchedule.allCases where !(source.name == "Flow.timer" && schedule == .realThreads) {
      // A share's upstream is the shared source's: not awaited by its subscriber (Guides/Effects.md).
      await checkEdge(
        source.name, cancellation, schedule, awaited: source.name != "shareFlow",
        mayNotCancel: false, env: plainEnvironment
      ) { consumer, env, plain in
        switch cancellation {
        case .insideATransform: source.transformed(consumer, env)
        case .whileParkedInAPlainUpstream: source.parked!(env, plain.latch, plain.parked)
        }
      }
    }
  }
}
