import AsyncFlowTesting
import Testing

@testable import AsyncFlow

@Suite("Shaping and observing", .hangGuard)
struct ShapingAndObservingTests {
  // MARK: scanFlow

  @Test func scanDeliversEveryRunningResultAndNotTheInitialOne() async {
    #expect(await collect(Flow.sequence([1, 2, 3, 4]).scanFlow(0, +)).elements == [1, 3, 6, 10])
    #expect(await collect(Flow<Int, Never>.empty.scanFlow(0, +)).elements == [])
  }

  @Test func scanEndsWithTheBaseFailureOrItsOwnAndThenStaysOver() async throws {
    let base = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      throw TestError(id: 1)
    }
    let failed = await collect(base.scanFlow(10, +))
    #expect(failed.elements == [11] && failed.failure == TestError(id: 1))

    var iterator = Flow<Int, TestError>.sequenceOfTyped([1, 2, 3]).scanFlow(0) { (total, next) throws(TestError) in
      if next == 2 { throw TestError(id: 2) }
      return total + next
    }.makeAsyncIterator()
    #expect(try await iterator.next() == 1)
    await #expect(throws: TestError(id: 2)) { try await iterator.next() }
    #expect(try await iterator.next() == nil)
  }

  // MARK: removeDuplicatesFlow

  @Test func removeDuplicatesDropsOnlyARepeatOfThePreviousDelivered() async {
    #expect(await collect(Flow.sequence([1, 1, 2, 2, 2, 1, 3, 3]).removeDuplicatesFlow()).elements == [1, 2, 1, 3])
    let byTens = Flow.sequence([10, 12, 25, 29, 31]).removeDuplicatesFlow { $0 / 10 == $1 / 10 }
    #expect(await collect(byTens).elements == [10, 25, 31])
  }

  // MARK: collectFlow(count:)

  @Test func collectDeliversFullArraysThenTheRemainderBeforeTheEnd() async {
    #expect(await collect(Flow.sequence(1...5).collectFlow(count: 2)).elements == [[1, 2], [3, 4], [5]])
    #expect(await collect(Flow.sequence(1...4).collectFlow(count: 2)).elements == [[1, 2], [3, 4]])
    #expect(await collect(Flow<Int, Never>.empty.collectFlow(count: 2)).elements == [])
  }

  @Test func collectDeliversTheRemainderBeforeTheFailure() async {
    let base = Flow<Int, TestError> { emitter throws(TestError) in
      for value in 1...3 { await emitter.emit(value) }
      throw TestError(id: 3)
    }
    let result = await collect(base.collectFlow(count: 2))
    #expect(result.elements == [[1, 2], [3]])
    #expect(result.failure == TestError(id: 3))
  }

  @Test func collectRejectsACountBelowOne() async {
    await #expect(processExitsWith: .failure) {
      _ = Flow.just(1).collectFlow(count: 0)
    }
  }

  // MARK: materialize / dematerialize

  @Test func materializeTurnsEveryEventIntoAnElementAndDematerializeTurnsThemBack() async {
    let failing = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      await emitter.emit(2)
      throw TestError(id: 7)
    }
    let events = await collect(failing.materialize()).elements
    #expect(events == [.element(1), .element(2), .failed(TestError(id: 7))])
    let roundTrip = await collect(Flow.sequence(events).dematerialize())
    #expect(roundTrip.elements == [1, 2] && roundTrip.failure == TestError(id: 7))

    let finishing = await collect(Flow.sequence([1]).materialize()).elements
    #expect(finishing == [.element(1), .finished])
    #expect(await collect(Flow.sequence(finishing).dematerialize()).elements == [1])
  }

  @Test func dematerializeReadsNothingAfterTheEnd() async {
    let events: [FlowEvent<Int, TestError>] = [.element(1), .finished, .element(2), .failed(TestError())]
    let result = await collect(Flow.sequence(events).dematerialize())
    #expect(result.elements == [1] && result.failure == nil)
  }

  @Test func aCancelledConsumerGetsNoFinishedEvent() async {
    let events = await inCancelledTask { await collect(Flow.sequence([1, 2]).materialize()).elements }
    #expect(events == [])
  }

  // MARK: handleEventsFlow

  @Test func handleEventsReportsStartElementsAndExactlyOneEnd() async {
    let log = EventLog<String>()
    let handled = { (base: Flow<Int, TestError>) in
      base.handleEventsFlow(
        onStart: { log.append("start") }, onElement: { log.append("element \($0)") },
        onFinish: { log.append("finish") }, onFailure: { log.append("failure \($0.id)") },
        onCancel: { log.append("cancel") })
    }
    _ = await collect(handled(Flow.sequenceOfTyped([1, 2])))
    _ = await collect(handled(Flow.fail(TestError(id: 4))))
    #expect(log.all == ["start", "element 1", "element 2", "finish", "start", "failure 4"])
  }

  @Test func handleEventsReportsACancelWhenTheConsumerIsCancelledOrStopsEarly() async {
    let log = EventLog<String>()
    let handled = Flow.sequence(1...10).handleEventsFlow(
      onFinish: { log.append("finish") }, onCancel: { log.append("cancel") })
    _ = await inCancelledTask { await collect(handled).elements }
    #expect(log.all == ["cancel"])
    do {
      var iterator = handled.makeAsyncIterator()
      _ = await iterator.next()
    }  // released after one element
    #expect(log.all == ["cancel", "cancel"])
    // An iterator never asked for anything has not started: nothing to report.
    _ = handled.makeAsyncIterator()
    #expect(log.all == ["cancel", "cancel"])
  }

  /// When each hook runs relative to the upstream's end, with a `Flow` source whose body logs its
  /// last line: a pull-based sequence has no dispose hook, so this order is the documented rule
  /// (RxSwift's `testDoOnOrder_Completed_Async` and `_Dispose` differ: there `onCompleted` runs
  /// before the source is disposed). Finish, failure and a cancelled consumer's task: the body has
  /// ended before the hook. A released iterator: `onCancel` runs first, then the body, cancelled,
  /// ends.
  @Test func handleEventsHooksRunInADocumentedOrderAgainstTheBodysLastLine() async {
    let log = EventLog<String>()
    let handlers = { (base: Flow<Int, TestError>) in
      base.handleEventsFlow(
        onStart: { log.append("start") }, onFinish: { log.append("finish") },
        onFailure: { _ in log.append("failure") }, onCancel: { log.append("cancel") })
    }
    // Finish and failure.
    _ = await collect(handlers(Flow { _ in log.append("body end") }))
    _ = await collect(
      handlers(
        Flow { _ throws(TestError) in
          defer { log.append("body end") }
          throw TestError(id: 1)
        }))
    #expect(log.all == ["start", "body end", "finish", "start", "body end", "failure"])

    // A body that waits until it is cancelled, then logs its last line.
    let bodyEnded = Signal()
    let waiting = handlers(
      Flow { emitter in
        defer {
          log.append("body end")
          bodyEnded.fire()
        }
        await emitter.emit(1)
        let (never, keep) = AsyncStream<Never>.makeStream()
        for await _ in never {}  // ends when the body's task is cancelled
        withExtendedLifetime(keep) {}
      })

    // The consumer's task is cancelled while it waits: the body ends before `onCancel`.
    let consumer = Task {
      var iterator = waiting.makeAsyncIterator()
      _ = try? await iterator.next()
      log.append("asking")
      _ = try? await iterator.next()
    }
    for _ in 0..<1_000_000 {
      if log.all.contains("asking") { break }
      await Task.yield()
    }
    consumer.cancel()
    await bounded(consumer, "consumer")
    #expect(bodyEnded.isFired)
    #expect(log.all.suffix(4) == ["start", "asking", "body end", "cancel"])

    // The iterator is released after an element: `onCancel` runs in its release, before the
    // body, cancelled by that release, ends.
    let bodyEndedAfterRelease = Signal()
    let second = handlers(
      Flow { emitter in
        defer {
          log.append("body end")
          bodyEndedAfterRelease.fire()
        }
        await emitter.emit(1)
        let (never, keep) = AsyncStream<Never>.makeStream()
        for await _ in never {}
        withExtendedLifetime(keep) {}
      })
    do {
      var iterator = second.makeAsyncIterator()
      _ = try? await iterator.next()
    }
    for _ in 0..<1_000_000 {
      if bodyEndedAfterRelease.isFired { break }
      await Task.yield()
    }
    #expect(bodyEndedAfterRelease.isFired)
    #expect(log.all.suffix(3) == ["start", "cancel", "body end"])
  }

  // MARK: traceFlow

  @Test func traceNumbersIterationsAndReportsEachEventInOrder() async {
    let events = EventLog<FlowTraceEvent>()
    let traced = Flow.sequence([1, 2]).traceFlow("numbers") { events.append($0) }
    _ = await collect(traced)
    _ = await inCancelledTask { await collect(traced).elements }
    let lines = events.all.map { "#\($0.iteration) \(String(describing: $0).split(separator: "] ")[1])" }
    #expect(lines == ["#1 start", "#1 element: 1", "#1 element: 2", "#1 finish", "#2 start", "#2 cancel"])
    #expect(events.all.allSatisfy { $0.label == "numbers" && $0.offset >= .zero })
    // Each iteration's offsets run forward from its own start.
    for iteration in 1...2 {
      let offsets = events.all.filter { $0.iteration == iteration }.map(\.offset)
      #expect(offsets == offsets.sorted())
    }
  }

  @Test func traceDescribesAnEventOnOneLine() {
    let event = FlowTraceEvent(iteration: 3, label: "search", kind: .failure(TestError(id: 1)), offset: .seconds(1))
    #expect(event.description == "[search #3 +1.0 seconds] failure: TestError(id: 1)")
  }

  // MARK: Flow.deferred, Flow.single

  @Test func deferredMakesItsSequenceAnewForEveryIteration() async {
    let made = LockedState(0)
    let flow = Flow<Int, Never>.deferred {
      let count = made.withLock { $0 += 1; return $0 }
      return Flow.sequence([count])
    }
    #expect(made.withLock { $0 } == 0)
    #expect(await collect(flow).elements == [1])
    #expect(await collect(flow).elements == [2])
  }

  @Test func singleCallsItsOperationOncePerIterationAndFailsWithItsError() async {
    let calls = LockedState(0)
    let request = Flow<String, TestError>.single { () throws(TestError) in
      let call = calls.withLock { $0 += 1; return $0 }
      if call == 2 { throw TestError(id: call) }
      return "answer \(call)"
    }
    #expect(await collect(request).elements == ["answer 1"])
    #expect(await collect(request).failure == TestError(id: 2))
    #expect(calls.withLock { $0 } == 2)
    // A cancelled consumer does not make the call.
    _ = await inCancelledTask { await collect(request).elements }
    #expect(calls.withLock { $0 } == 2)
  }

  // MARK: collectLatest

  @Test func collectLatestCancelsTheRunningBodyWhenANewerElementArrivesAndWaitsForTheLast() async {
    let clock = TestClock()
    let log = EventLog<String>()
    let queries = Flow<String, Never> { emitter in
      await emitter.emit("s")
      try? await clock.sleep(for: .milliseconds(100))
      await emitter.emit("sw")
    }
    let done = clock.task {
      await queries.collectLatest { query in
        do {
          try await clock.sleep(for: .milliseconds(300))
          log.append("finished \(query)")
        } catch {
          log.append("cancelled \(query)")
        }
      }
      log.append("returned")
    }
    await clock.advance(by: .milliseconds(100))
    #expect(log.all == ["cancelled s"])
    await clock.advance(by: .milliseconds(300))
    await bounded(done, "done")
    #expect(log.all == ["cancelled s", "finished sw", "returned"])
    #expect(clock.pendingSleepers == 0)
  }

  @Test func collectLatestThrowsTheSequenceFailure() async {
    let failing = Flow<Int, TestError>.fail(TestError(id: 9))
    await #expect(throws: TestError(id: 9)) { try await failing.collectLatest { _ in } }
  }

  // MARK: assignFlow

  @MainActor final class Model {
    let written = Signal()
    var value = 0 {
      didSet {
        // A write off the main actor would be a data race on a main-actor model: stop here.
        MainActor.preconditionIsolated("assignFlow wrote off the caller's isolation")
        written.fire()
      }
    }
  }

  @Test @MainActor func assignFlowWritesOnTheCallersIsolationAndEndsWhenTheObjectIsGone() async {
    let gate = Gate()
    let bodyEnded = Signal()
    let values = Flow<Int, Never> { emitter in
      defer { bodyEnded.fire() }
      await emitter.emit(5)
      await gate.wait()
      await emitter.emit(6)
      await gate.wait()  // parks for good unless the iteration ends
    }
    var model: Model? = Model()
    weak let released = model
    let written = model!.written
    let subscription = values.assignFlow(to: \Model.value, on: model!)
    await written.wait()
    #expect(model?.value == 5)
    model = nil
    #expect(released == nil)  // the subscription holds the model weakly
    await gate.entered()
    gate.release()
    // 6 found the model gone: the iteration ended, though the subscription was never cancelled.
    await bodyEnded.wait()
    withExtendedLifetime(subscription) {}
  }
}

extension Flow where Failure == TestError {
  /// `Flow.sequence` with a failure type, for operators whose closures throw it.
  static func sequenceOfTyped(_ elements: [Element]) -> Flow {
    Flow<Element, Never>.sequence(elements).setFailureType(to: TestError.self)
  }
}
