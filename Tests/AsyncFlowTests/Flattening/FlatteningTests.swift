import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// An inner sequence for the flattening tests: it emits `"<name>1"`, then waits for `proceed`
/// (ignoring cancellation, as a request that cannot be stopped would), then emits `"<name>2"`,
/// `"<name>3"` and ends, or fails if `failing`; it logs when its iteration ended.
private func stubborn(_ name: String, proceed: Signal, failing: Bool = false, log: EventLog<String>) -> Flow<
  String, TestError
> {
  Flow(bufferSize: 0) { emitter throws(TestError) in
    defer { log.append("\(name) ended") }
    await emitter.emit("\(name)1")
    await proceed.wait()
    if failing { throw TestError(id: 1) }
    await emitter.emit("\(name)2")
    await emitter.emit("\(name)3")
  }
}

/// An outer sequence that emits `first`, parks on `gate`, emits `second`, parks on `gate` again,
/// then finishes. With `bufferSize: 0` its `emit` returns only when the operator asks for the next
/// element, so once the test sees the second park, the operator has received `second`.
private func twoStep(_ first: String, _ second: String, gate: Gate, log: EventLog<String>) -> Flow<String, Never> {
  Flow(bufferSize: 0) { emitter in
    defer { log.append("outer ended") }
    await emitter.emit(first)
    await gate.wait()
    await emitter.emit(second)
    await gate.wait()
  }
}

@Suite("Flattening", .hangGuard)
struct FlatteningTests {
  // Rule 1 and 2: a superseded inner never delivers, not even its failure.
  @Test(arguments: [false, true])
  func supersededInnerNeverDeliversAgain(failing: Bool) async throws {
    let log = EventLog<String>()
    let outerGate = Gate()
    let proceedA = Signal()
    let proceedB = Signal()
    let flattened = twoStep("a", "b", gate: outerGate, log: log).switchToLatestFlow { name in
      stubborn(name, proceed: name == "a" ? proceedA : proceedB, failing: failing && name == "a", log: log)
    }
    var iterator = flattened.makeAsyncIterator()
    #expect(try await iterator.next() == "a1")
    await outerGate.entered()
    outerGate.release()
    #expect(try await iterator.next() == "b1")  // the operator has received "b"
    await outerGate.entered()
    proceedA.fire()  // "a" ignores its cancellation and goes on (or fails)
    proceedB.fire()
    outerGate.release()
    var rest: [String] = []
    while let value = try await iterator.next() { rest.append(value) }
    #expect(rest == ["b2", "b3"])
  }

  // An element superseded before its inner's task began costs nothing: its transform (often the
  // request itself) never runs. On the serial test executor the outer delivers all three elements
  // before the first inner task gets to run.
  @Test func anElementSupersededBeforeItsInnerBeganIsNeverTransformed() async {
    let transformed = EventLog<String>()
    let latest = Flow.sequence(["a", "b", "c"]).switchToLatestFlow { name in
      transformed.append(name)
      return Flow<String, Never>.just(name)
    }
    let clock = TestClock()
    let result = clock.task { await collect(latest).elements }
    #expect(await bounded(result, "result") == ["c"])
    #expect(transformed.all == ["c"])
  }

  // Rule 3: the current inner's failure, or the outer's, ends the sequence.
  @Test func currentInnerFailureEndsTheSequence() async {
    let result = await collect(
      Flow.sequence(["x"]).switchToLatestFlow { _ in
        Flow<String, TestError> { emitter throws(TestError) in
          await emitter.emit("x1")
          throw TestError(id: 5)
        }
      })
    #expect(result.elements == ["x1"])
    #expect(result.failure == TestError(id: 5))
  }

  @Test func outerFailureEndsTheSequence() async {
    let outer = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      throw TestError(id: 9)
    }
    let result = await collect(
      outer.switchToLatestFlow { value in Flow.just(value).setFailureType(to: TestError.self) })
    #expect(result.failure == TestError(id: 9))
  }

  // Rule 4: finishing waits for the current inner.
  @Test func finishesWhenTheOuterAndTheCurrentInnerHaveFinished() async {
    let result = await collect(Flow.just(3).switchToLatestFlow { count in Flow.sequence(1...count) })
    #expect(result.elements == [1, 2, 3])
  }

  // Rule 5: in order, none lost, pulled on demand, outer watched while the consumer is slow.
  @Test func innerIsPulledOnDemandAndTheOuterIsWatchedMeanwhile() async {
    let log = EventLog<String>()
    let outerGate = Gate()
    let pulls = LockedState(0)
    let flattened = twoStep("a", "b", gate: outerGate, log: log).switchToLatestFlow { name in
      Flow.sequence(1...1000).map { value in
        pulls.withLock { $0 += 1 }
        return "\(name)\(value)"
      }
    }
    var iterator = flattened.makeAsyncIterator()
    #expect(await iterator.next() == "a1")
    await outerGate.entered()
    // The consumer is slow: the inner has pulled at most its bounded buffer and one element more.
    #expect(pulls.withLock { $0 } <= FlattenInnerChannel<String, Never>.bufferLimit + 2)
    outerGate.release()
    await outerGate.entered()
    // "b" superseded "a" while nobody was asking for elements.
    #expect(await iterator.next() == "b1")
    outerGate.release()
    var count = 1
    while let value = await iterator.next() {
      count += 1
      #expect(value == "b\(count)")
    }
    #expect(count == 1000)
  }

  // Rule 6: cancelling the consumer ends every task before `next()` returns.
  @Test func cancellingTheConsumerEndsOuterAndInnersFirst() async {
    let log = EventLog<String>()
    let outerGate = Gate()
    let innerGate = Gate()
    let consumerGate = Gate()
    let flattened = twoStep("a", "b", gate: outerGate, log: log).switchToLatestFlow { name in
      Flow<String, Never>(bufferSize: 0) { emitter in
        defer { log.append("\(name) ended") }
        await emitter.emit("\(name)1")
        await innerGate.wait()  // returns when cancelled
      }
    }
    let consumer = Task {
      var iterator = flattened.makeAsyncIterator()
      // Opaque sequences expose the protocol's untyped `next()`; the typed one does not throw here.
      let first = await iterator.next(isolation: nil)
      await consumerGate.wait()
      let second = await iterator.next(isolation: nil)
      return (first, second, log.all.sorted())
    }
    await consumerGate.entered()
    await innerGate.entered()
    await outerGate.entered()
    consumer.cancel()
    guard case let (first, second, logAtEnd)? = await bounded(consumer, "consumer") else { return }
    #expect(first == "a1")
    #expect(second == nil)
    #expect(logAtEnd == ["a ended", "outer ended"])
  }

  @Test func leavingTheLoopEndsOuterAndInners() async {
    let innerEnded = Signal()
    let outerEnded = Signal()
    let outer = Flow<Int, Never> { emitter in
      defer { outerEnded.fire() }
      await emitter.emit(1)
      await Gate().wait()
    }
    let flattened = outer.switchToLatestFlow { _ in
      Flow<Int, Never> { emitter in
        defer { innerEnded.fire() }
        var value = 0
        while !Task.isCancelled {
          value += 1
          await emitter.emit(value)
        }
      }
    }
    let received = await bounded("the loop's first three values") {
      var received: [Int] = []
      for await value in flattened {
        received.append(value)
        if value == 3 { break }
      }
      return received
    }
    #expect(received == [1, 2, 3])
    await bounded("the inner's end once the loop was left") { await innerEnded.wait() }
    await bounded("the outer's end once the loop was left") { await outerEnded.wait() }
    #expect(innerEnded.isFired && outerEnded.isFired)
  }

  // Rule 7
  @Test func mergeNeverRunsMoreThanMaxConcurrent() async {
    let gate = Gate()
    let running = LockedState((now: 0, peak: 0))
    let merged = Flow.sequence(1...10).mergeFlow(maxConcurrent: 3) { value in
      Flow<Int, Never> { emitter in
        running.withLock { state in
          state.now += 1
          state.peak = max(state.peak, state.now)
        }
        await gate.wait()
        running.withLock { $0.now -= 1 }
        await emitter.emit(value)
      }
    }
    let result = Task { await collect(merged).elements }
    // Three parked at once before the first release: released one by one as they came, the
    // inners could overlap by fewer than three when the test's thread ran ahead of their starts.
    await gate.entered(count: 3)
    gate.release()
    for _ in 0..<3 {
      await gate.entered(count: 1)
      gate.release()
    }
    // Keep releasing until everything has run.
    let drainer = Task {
      while !Task.isCancelled {
        await gate.entered()
        gate.release()
      }
    }
    guard let elements = await bounded(result, "result") else { return }
    drainer.cancel()
    #expect(elements.sorted() == Array(1...10))
    #expect(running.withLock { $0.peak } == 3)
  }

  @Test func mergeRunsAllAtOnceByDefault() async {
    let gate = Gate()
    let merged = Flow.sequence(1...5).mergeFlow { value in
      Flow<Int, Never> { emitter in
        await gate.wait()
        await emitter.emit(value)
      }
    }
    let result = Task { await collect(merged).elements }
    await gate.entered(count: 5)
    gate.release()
    #expect(await bounded(result, "result")?.sorted() == [1, 2, 3, 4, 5])
  }

  // The whole of mergeFlow is bounded, not only each inner: with a stalled consumer the outer stops
  // once `behindInnersLimit` inners are behind the consumer (before, every outer element started an inner
  // that buffered 64).
  @Test func mergeStopsPullingTheOuterWhileTheConsumerIsStalled() async {
    let clock = TestClock()
    let outerPulled = LockedState(0)
    let produced = LockedState(0)
    let consumerGate = Gate()
    let outer = Flow<Int, Never>(bufferSize: 0) { emitter in
      for value in 0..<2_000 {
        outerPulled.withLock { $0 += 1 }
        await emitter.emit(value)
      }
    }
    let merged = outer.mergeFlow { _ in
      Flow.sequence(0..<1_000).map { value in
        produced.withLock { $0 += 1 }
        return value
      }
    }
    let consumer = clock.task {
      var iterator = merged.makeAsyncIterator()
      _ = await iterator.next(isolation: nil)
      await consumerGate.wait()  // stalled: holds the iterator, takes nothing more
    }
    await clock.runCurrent()
    // 16 inners holding elements (the documented limit), plus the outer element held for a slot;
    // each inner pulled its buffer of 64 and one in hand. (Before the bound: 2,000 and 130,064.)
    #expect(FlattenBacklog.defaultLimit == 16)
    #expect(outerPulled.withLock { $0 } <= 16 + 2)
    #expect(produced.withLock { $0 } <= (16 + 2) * (FlattenInnerChannel<Int, Never>.bufferLimit + 1))
    consumerGate.release()
    await bounded(consumer, "consumer")
  }

  @Test func mergeMaxConcurrentBelowOneIsAProgrammerError() async {
    await #expect(processExitsWith: .failure) {
      _ = Flow.sequence([1]).mergeFlow(maxConcurrent: 0) { Flow.just($0) }
    }
  }

  @Test func concatRunsOneAfterAnotherNoneDropped() async {
    let result = await collect(
      Flow.sequence(1...3).concatFlow { value in Flow.sequence([value * 10, value * 10 + 1]) })
    #expect(result.elements == [10, 11, 20, 21, 30, 31])
  }

  // Rule 8
  @Test func exhaustDropsElementsWhileAnInnerRuns() async {
    let clock = TestClock()
    let outerGate = Gate()
    let innerGate = Gate()
    let outer = Flow<String, Never>(bufferSize: 0) { emitter in
      await emitter.emit("a")
      await emitter.emit("b")
      await outerGate.wait()
      await emitter.emit("c")
    }
    let exhausted = outer.exhaustFlow { name in
      Flow<String, Never> { emitter in
        if name == "a" { await innerGate.wait() }
        await emitter.emit(name)
      }
    }
    let result = clock.task { await collect(exhausted).elements }
    await clock.runCurrent()  // "a" runs, parked; "b" arrived meanwhile and was dropped
    #expect(innerGate.parkedCount == 1 && outerGate.parkedCount == 1)
    innerGate.release()
    await clock.runCurrent()  // "a" has finished
    outerGate.release()
    #expect(await bounded(result, "result") == ["a", "c"])
  }

  // exhaustFlow's turn ends when the inner's work ends, not when the consumer has taken its
  // elements (Rx's flatMapFirst): taps 1, 2, 3 with a paused consumer all run.
  @Test func exhaustsTurnEndsWithTheInnersWorkEvenWhileTheConsumerIsPaused() async {
    let clock = TestClock()
    let tapGate = Gate()
    let consumerGate = Gate()
    let taps = Flow<Int, Never>(bufferSize: 0) { emitter in
      await emitter.emit(1)
      await tapGate.wait()
      await emitter.emit(2)
      await tapGate.wait()
      await emitter.emit(3)
    }
    let receipts = taps.exhaustFlow { tap in Flow<Int, Never>.just(tap) }
    let result = clock.task { () -> [Int] in
      var iterator = receipts.makeAsyncIterator()
      var received: [Int] = []
      if let first = await iterator.next(isolation: nil) { received.append(first) }
      await consumerGate.wait()  // paused while taps 2 and 3 arrive
      while let receipt = await iterator.next(isolation: nil) { received.append(receipt) }
      return received
    }
    await clock.runCurrent()  // tap 1 ran and was delivered
    tapGate.release()
    await clock.runCurrent()  // tap 2 ran; its receipt waits for the consumer
    tapGate.release()
    await clock.runCurrent()  // tap 3 arrives after tap 2's work ended: it runs
    consumerGate.release()
    #expect(await bounded(result, "result") == [1, 2, 3])
  }

  // Rule 9
  @Test func keyedLatestCancelsOnlyItsOwnKey() async {
    let gate = Gate()
    let outer = Flow<(key: String, version: Int), Never>(bufferSize: 0) { emitter in
      await emitter.emit(("k1", 1))
      await emitter.emit(("k2", 1))
      await emitter.emit(("k1", 2))
      await gate.wait()
    }
    let loads = outer.switchToLatestFlow(by: \.key) { request in
      Flow<String, Never> { emitter in
        await gate.wait()
        await emitter.emit("\(request.key)v\(request.version)")
      }
    }
    let clock = TestClock()
    let result = clock.task { await collect(loads).elements }
    await clock.runCurrent()  // everything has run until it parked
    #expect(gate.parkedCount == 3)  // k2v1, k1v2 and the outer; k1v1 was cancelled and left
    gate.release()
    #expect(await bounded(result, "result")?.sorted() == ["k1v2", "k2v1"])
  }

  @Test func keyedLatestLoadsAHundredRowsConcurrently() async {
    let gate = Gate()
    let loads = Flow.sequence(0..<100).switchToLatestFlow(by: { $0 }) { row in
      Flow<Int, Never> { emitter in
        await gate.wait()
        await emitter.emit(row)
      }
    }
    let result = Task { await collect(loads).elements }
    await gate.entered(count: 100)
    gate.release()
    #expect(await bounded(result, "result")?.sorted() == Array(0..<100))
  }

  @Test func failureTypesFollowTheRule() async throws {
    let never = Flow.sequence([1])
    let typed = Flow<Int, TestError>.fail(TestError())
    let _: any AsyncSequence<Int, Never> = never.switchToLatestFlow { Flow.just($0) }
    let _: any AsyncSequence<Int, TestError> = never.switchToLatestFlow { _ in typed }
    let _: any AsyncSequence<Int, TestError> = typed.switchToLatestFlow { _ in typed }
    let _: any AsyncSequence<Int, TestError> = typed.switchToLatestFlow { Flow.just($0) }
    // Two different failure types are not merged silently: the caller maps one of them.
    let _: any AsyncSequence<Int, TestError> = typed.switchToLatestFlow { _ in
      Flow<Int, MarbleFailure>.empty.mapError { _ in TestError() }
    }
    let _: any AsyncSequence<Int, Never> = never.mergeFlow { Flow.just($0) }
    let _: any AsyncSequence<Int, Never> = never.concatFlow { Flow.just($0) }
    let _: any AsyncSequence<Int, Never> = never.exhaustFlow { Flow.just($0) }
    let _: any AsyncSequence<Int, Never> = never.switchToLatestFlow(by: { $0 }) { Flow.just($0) }
    let _: any AsyncSequence<Int, Never> = Flow.sequence([never]).switchToLatestFlow()
    // The annotations above are the test's compile-time half; the run-time half: each rule's
    // sequence fails, or not, as its type says.
    var values: [Int] = []
    for await value in never.switchToLatestFlow({ Flow.just($0) }) { values.append(value) }
    #expect(values == [1])
    await #expect(throws: TestError.self) {
      for try await _ in never.switchToLatestFlow({ _ in typed }) {}
    }
  }

  // Every operator has a concrete type: it can be stored, and its iterator's `next()` is typed.
  @Test func concreteTypesHaveTypedIterators() async {
    let never = Flow.sequence([1, 2])
    let latest: AsyncSwitchToLatestFlowSequence<Flow<Int, Never>, Flow<Int, Never>, Never> =
      never.switchToLatestFlow { Flow.just($0) }
    let merged: AsyncMergeFlowSequence<Flow<Int, Never>, Flow<Int, Never>, Never> = never.mergeFlow { Flow.just($0) }
    let concatenated: AsyncConcatFlowSequence<Flow<Int, Never>, Flow<Int, Never>, Never> =
      never.concatFlow { Flow.just($0) }
    let exhausted: AsyncExhaustFlowSequence<Flow<Int, Never>, Flow<Int, Never>, Never> =
      never.exhaustFlow { Flow.just($0) }
    let keyed: AsyncSwitchToLatestByKeyFlowSequence<Flow<Int, Never>, Int, Flow<Int, Never>, Never> =
      never.switchToLatestFlow(by: { $0 }) { Flow.just($0) }
    var iterators = (
      latest.makeAsyncIterator(), merged.makeAsyncIterator(), concatenated.makeAsyncIterator(),
      exhausted.makeAsyncIterator(), keyed.makeAsyncIterator()
    )
    // No `try`: with `Failure == Never` the iterators cannot throw.
    #expect([1, 2].contains(await iterators.1.next()))  // merge: either inner may come first
    #expect(await iterators.2.next() == 1)
    #expect(await iterators.3.next() == 1)
    #expect(await iterators.4.next() != nil)
    #expect(await iterators.0.next() != nil)
  }
}
