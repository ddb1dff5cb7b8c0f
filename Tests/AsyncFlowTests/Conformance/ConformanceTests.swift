import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// The situations every operator is driven through by the one body of `ConformanceTests`.
enum ConformanceCase: String, CaseIterable, Sendable, CustomStringConvertible {
  case cancelBeforeFirstNext
  case cancelWhileSuspendedInNext
  case cancelBetweenElements
  case dropIteratorWithoutCancelling
  case nextAfterFinish
  case nextAfterFailure
  case upstreamIgnoresCancellation
  case upstreamFailsAfterCancellation
  case emptyUpstream
  case oneElementUpstream

  var description: String { rawValue }
}

/// What the consumer saw, written from its own task the moment each `next()` returned.
private final class ConsumerRecord: Sendable {
  private struct State {
    var steps: [Step] = []
    /// Elements `next()` returned after the test cancelled the consumer.
    var afterCancel: [Step] = []
    /// Bodies still running at the moment `next()` returned its first non-element.
    var liveAtEnd: Int?
    var returned = false
  }
  private let state = LockedState(State())
  let cancelRequested = LockedState(false)

  func record(_ step: Step, live: Int) {
    let cancelled = cancelRequested.withLock { $0 }
    state.withLock { state in
      state.steps.append(step)
      if cancelled, step.isElement { state.afterCancel.append(step) }
      if !step.isElement, state.liveAtEnd == nil { state.liveAtEnd = live }
    }
  }
  func markReturned() { state.withLock { $0.returned = true } }

  var steps: [Step] { state.withLock { $0.steps } }
  var afterCancel: [Step] { state.withLock { $0.afterCancel } }
  var liveAtEnd: Int? { state.withLock { $0.liveAtEnd } }
  var returned: Bool { state.withLock { $0.returned } }
}

/// Pulls until the first non-element, recording each step, then pulls `extra` more times: a
/// finished or failed iterator returns `nil` forever.
private func drain(_ stepper: AnyStepper, _ env: ProbeEnvironment, _ record: ConsumerRecord, extra: Int = 3) async {
  while true {
    let step = await stepper.next()
    record.record(step, live: env.lifetimes.live)
    if !step.isElement { break }
  }
  for _ in 0..<extra { record.record(await stepper.next(), live: env.lifetimes.live) }
}

/// A plain `AsyncSequence` (not a `Flow`, which drops what comes after cancellation by itself)
/// that ignores cancellation: 0 at once, then 2, 3, 4 once `latch` fires, cancelled or not.
struct RawStubborn: AsyncSequence, Sendable {
  let latch: CompletionSignal
  struct AsyncIterator: AsyncIteratorProtocol {
    let latch: CompletionSignal
    var i = 0
    mutating func next() async throws(TestError) -> Int? {
      i += 1
      if i == 1 { return 0 }
      if i > 4 { return nil }
      await latch.wait()
      return i
    }
    mutating func next(isolation actor: isolated (any Actor)?) async throws(TestError) -> Int? { try await next() }
  }
  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(latch: latch) }
}

@Suite("Conformance of every operator", .hangGuard)
struct ConformanceTests {
  /// The one body: `row`'s operator, driven through `situation` on a `TestClock`; every wait is a
  /// settle of the clock's executor or a clock advance, never a wall-clock sleep.
  @Test(arguments: operatorTable, ConformanceCase.allCases)
  func operatorKeepsTheIterationContract(_ row: OperatorCase, _ situation: ConformanceCase) async {
    let latch = CompletionSignal()
    let env: ProbeEnvironment =
      switch situation {
      case .cancelBeforeFirstNext, .dropIteratorWithoutCancelling, .cancelBetweenElements:
        ProbeEnvironment(outer: [0, 1, 2], then: .park, inners: 2, then: .park)
      case .cancelWhileSuspendedInNext: ProbeEnvironment(outer: [], then: .park, inners: 0, then: .park)
      case .nextAfterFinish: ProbeEnvironment(outer: [0, 1], then: .finish, inners: 2)
      case .nextAfterFailure: ProbeEnvironment(outer: [0, 1], then: .fail, inners: 2)
      case .upstreamIgnoresCancellation:
        ProbeEnvironment(outer: [0], then: .stubborn(latch: latch, more: [1, 2]), inners: 1, then: .park)
      case .upstreamFailsAfterCancellation:
        ProbeEnvironment(
          outer: [0], then: .stubbornFailure(latch: latch), inners: 1, then: .stubbornFailure(latch: latch))
      case .emptyUpstream: ProbeEnvironment(outer: [], then: .finish)
      case .oneElementUpstream: ProbeEnvironment(outer: [7], then: .finish)
      }
    let clock = env.clock
    let record = ConsumerRecord()
    let loopBody = Gate()
    let context = "\(row.name), \(situation)"

    let consumer = clock.task {
      defer { record.markReturned() }
      switch situation {
      case .cancelBeforeFirstNext:
        withUnsafeCurrentTask { $0?.cancel() }
        record.cancelRequested.withLock { $0 = true }
        await drain(row.make(env), env, record)
      case .cancelBetweenElements:
        // Pull until a body runs (an operator such as `prependState` delivers its first element
        // before starting the upstream), so that cancelling has something to end.
        let stepper = row.make(env)
        for _ in 0..<3 {
          let step = await stepper.next()
          record.record(step, live: env.lifetimes.live)
          guard step.isElement else { return }
          if env.lifetimes.live > 0 { break }
        }
        await loopBody.wait()  // the consumer is busy in its loop body; the test cancels it here
        await drain(stepper, env, record)
      case .dropIteratorWithoutCancelling:
        // The stepper (and the iterator in it) is released when this closure returns.
        let stepper = row.make(env)
        record.record(await stepper.next(), live: env.lifetimes.live)
      default:
        await drain(row.make(env), env, record)
      }
    }

    func cancelConsumer() {
      record.cancelRequested.withLock { $0 = true }
      consumer.cancel()
    }

    switch situation {
    case .cancelBeforeFirstNext, .nextAfterFinish, .nextAfterFailure, .emptyUpstream, .oneElementUpstream:
      await clock.run()
    case .cancelWhileSuspendedInNext:
      await clock.runCurrent()
      #expect(!record.returned, "\(context): next() returned before anything happened")
      cancelConsumer()
      await clock.runCurrent()
    case .cancelBetweenElements:
      await clock.advance(by: .seconds(3))
      #expect(record.steps.first?.isElement == true, "\(context): the consumer never received a first element")
      cancelConsumer()
      await clock.runCurrent()
    case .dropIteratorWithoutCancelling:
      await clock.advance(by: .seconds(3))
      #expect(record.returned, "\(context): the consumer never received a first element")
      await clock.runCurrent()
    case .upstreamIgnoresCancellation, .upstreamFailsAfterCancellation:
      await clock.advance(by: .seconds(3))
      cancelConsumer()
      await clock.runCurrent()
      // The upstream is still in its uncancellable wait: the iteration may wait for it (it must
      // not return while a body it started runs), so let it go and settle again.
      latch.fire()
      await clock.runCurrent()
    }

    guard record.returned else {
      Issue.record("\(context): next() did not return once the clock settled: it hangs")
      cancelConsumer()
      latch.fire()
      return
    }
    await bounded(consumer, "consumer")
    let steps = record.steps

    // Nothing is delivered after cancellation, and a cancelled consumer finishes, it does not throw.
    #expect(record.afterCancel.isEmpty, "\(context): delivered after cancellation: \(record.afterCancel)")
    switch situation {
    case .cancelBeforeFirstNext, .cancelWhileSuspendedInNext, .cancelBetweenElements, .upstreamIgnoresCancellation,
      .upstreamFailsAfterCancellation:
      #expect(!steps.contains { if case .failure = $0 { true } else { false } }, "\(context): \(steps)")
    default: break
    }
    // After the first non-element, `nil` forever.
    if let end = steps.firstIndex(where: { !$0.isElement }) {
      #expect(steps[(end + 1)...].allSatisfy { $0 == .end }, "\(context): after the end: \(steps)")
    } else if situation != .dropIteratorWithoutCancelling && situation != .cancelBetweenElements {
      Issue.record("\(context): the iteration never ended: \(steps)")
    }
    // Every body the iteration started had ended when `next()` returned its end, at once: except
    // the documented shareFlow upstream, which must have ended once the clock settled.
    if situation != .dropIteratorWithoutCancelling, row.upstream == .awaited {
      #expect(record.liveAtEnd == 0, "\(context): bodies running when next() returned its end")
    }
    await clock.runCurrent()
    // A share with a grace period keeps its upstream running for that long after the last
    // subscriber left, by design: it must have ended once that time has passed.
    if row.gracePeriod > .zero { await clock.advance(by: row.gracePeriod) }
    #expect(env.lifetimes.live == 0, "\(context): bodies still running after the iteration")
    #expect(clock.pendingSleepers == 0, "\(context): sleepers left behind")

    // What arrives from a finished upstream arrives completely.
    switch situation {
    case .nextAfterFinish, .oneElementUpstream:
      #expect(steps.contains { $0.isElement }, "\(context): nothing delivered: \(steps)")
    default: break
    }
  }

  /// An inner, fallback or operation that fails at every position: before its first element, after
  /// one, after two. The failure ends or is handled; nothing runs on when `next()` ends.
  @Test(arguments: operatorTable.filter(\.hasInners), 0...2)
  func innerFailingAtEveryPositionLeavesNothingRunning(_ row: OperatorCase, _ position: Int) async {
    let env = ProbeEnvironment(outer: [0, 1, 2], then: .finish, inners: position, then: .fail)
    let record = ConsumerRecord()
    let context = "\(row.name), inner fails after \(position) elements"
    let consumer = env.clock.task {
      defer { record.markReturned() }
      await drain(row.make(env), env, record)
    }
    await env.clock.run()
    guard record.returned else {
      Issue.record("\(context): next() did not return once the clock settled: it hangs")
      consumer.cancel()
      return
    }
    let steps = record.steps
    #expect(record.liveAtEnd == 0, "\(context): bodies running when next() returned its end: \(steps)")
    if let end = steps.firstIndex(where: { !$0.isElement }) {
      #expect(steps[(end + 1)...].allSatisfy { $0 == .end }, "\(context): after the end: \(steps)")
    }
    #expect(env.lifetimes.started > 0, "\(context)")
    #expect(env.clock.pendingSleepers == 0, "\(context)")
  }

  /// The operators that pull their upstream in tasks of their own, over a plain upstream that
  /// keeps returning elements after cancellation: nothing reaches the cancelled consumer.
  @Test(arguments: ["debounce", "throttle", "delay", "timeout", "switch", "merge", "concat", "exhaust", "share"])
  func concurrentOperatorDropsWhatAStubbornPlainUpstreamGivesAfterCancellation(_ name: String) async {
    let clock = TestClock()
    let latch = CompletionSignal()
    let raw = RawStubborn(latch: latch)
    let cancelled = LockedState(false)
    let after = LockedState<[String]>([])
    let task = clock.task {
      let s: AnyStepper
      switch name {
      case "debounce": s = AnyStepper(raw.debounceFlow(for: .seconds(1), clock: clock))
      case "throttle": s = AnyStepper(raw.throttleFlow(for: .seconds(1), clock: clock))
      case "delay": s = AnyStepper(raw.delayFlow(for: .seconds(1), clock: clock))
      case "timeout": s = AnyStepper(raw.timeoutFlow(after: .seconds(100), clock: clock))
      case "switch":
        s = AnyStepper(raw.switchToLatestFlow { Flow<Int, Never>.just($0).setFailureType(to: TestError.self) })
      case "merge": s = AnyStepper(Flow(raw).mergeFlow { Flow<Int, Never>.just($0).setFailureType(to: TestError.self) })
      case "concat":
        s = AnyStepper(Flow(raw).concatFlow { Flow<Int, Never>.just($0).setFailureType(to: TestError.self) })
      case "exhaust":
        s = AnyStepper(Flow(raw).exhaustFlow { Flow<Int, Never>.just($0).setFailureType(to: TestError.self) })
      default: s = AnyStepper(Flow(raw).shareFlow())
      }
      while true {
        let step = await s.next()
        if cancelled.withLock({ $0 }) { after.withLock { $0.append("\(step)") } }
        if !step.isElement { break }
      }
    }
    await clock.advance(by: .seconds(3))
    cancelled.withLock { $0 = true }
    task.cancel()
    await clock.runCurrent()
    // Its upstream task is stuck in the stubborn upstream: the iteration must not have ended yet
    // (shareFlow's upstream task is the shared source's, not awaited).
    let endedBeforeRelease = after.withLock { $0.contains("end") }
    #expect(endedBeforeRelease == (name == "share"), "\(name): next() returned while its upstream task ran")
    latch.fire()
    await clock.advance(by: .seconds(3))
    await bounded(task, "task")
    #expect(after.withLock { $0 } == ["end"], "\(name)")
  }
}
