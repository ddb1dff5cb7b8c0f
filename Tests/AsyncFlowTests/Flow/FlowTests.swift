import AsyncFlow
import AsyncFlowTesting
import Synchronization
import Testing

// Five minutes: under ThreadSanitizer on two cores its longest tests take most of one when idle.
@Suite("Flow", .hangGuard)
struct FlowTests {
  @Test func bodyRunsOncePerIterationAndOnlyWhenIterated() async {
    let runs = Atomic(0)
    let flow = Flow<Int, Never> { emitter in
      let run = runs.add(1, ordering: .relaxed).newValue
      await emitter.emit(run)
    }
    var iterator = flow.makeAsyncIterator()
    #expect(runs.load(ordering: .relaxed) == 0)
    #expect(await iterator.next() == 1)
    #expect(await collect(flow).elements == [2])
    #expect(await collect(flow).elements == [3])
    #expect(runs.load(ordering: .relaxed) == 3)
  }

  @Test func bodyDeliversEveryElementInOrder() async {
    let flow = Flow<Int, Never>(bufferSize: 4) { emitter in
      for value in 0..<10_000 { await emitter.emit(value) }
    }
    #expect(await collect(flow).elements == Array(0..<10_000))
  }

  @Test func bodyFailureArrivesAfterTheElementsEmittedBeforeIt() async {
    let flow = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      await emitter.emit(2)
      throw TestError(id: 7)
    }
    let result = await collect(flow)
    #expect(result.elements == [1, 2])
    #expect(result.failure == TestError(id: 7))
  }

  @Test func iteratorReturnsNilAfterFailure() async throws {
    var iterator = Flow<Int, TestError>.fail(TestError()).makeAsyncIterator()
    await #expect(throws: TestError()) { try await iterator.next() }
    #expect(try await iterator.next() == nil)
  }

  /// With `bufferSize: n` the body may only run on towards element `k + 1` once the consumer has
  /// asked for at least `k + 1 - n` elements (`asked` counts its calls to `next()`). The body checks
  /// this whenever `emit` returns; across many runs, a hand-off that let it run further is caught.
  /// The first failing run (or the one the time limit cut) ends the test with one issue.
  @Test(arguments: [0, 1, 3])
  func bodyNeverRunsMoreThanBufferSizeAheadOfDemand(bufferSize: Int) async throws {
    for run in 0..<200 where !Task.isCancelled {
      let asked = Atomic(0)
      let violations = Atomic(0)
      let flow = Flow<Int, Never>(bufferSize: bufferSize) { emitter in
        for value in 1...20 {
          await emitter.emit(value)
          if value + 1 > asked.load(ordering: .sequentiallyConsistent) + bufferSize {
            violations.add(1, ordering: .relaxed)
          }
        }
      }
      var received: [Int] = []
      var iterator = flow.makeAsyncIterator()
      while true {
        asked.add(1, ordering: .sequentiallyConsistent)
        guard let value = await iterator.next() else { break }
        received.append(value)
      }
      try #require(!Task.isCancelled, "cut (by the time limit?) in run \(run)")
      try #require(received == Array(1...20), "run \(run)")
      try #require(violations.load(ordering: .relaxed) == 0, "run \(run)")
    }
  }

  @Test func cancellingTheConsumerEndsTheBodyParkedInEmit() async {
    let log = EventLog<String>()
    let consumerHoldsFirst = Gate()
    let flow = Flow<Int, Never>(bufferSize: 0) { emitter in
      await emitter.emit(1)
      log.append("emit(1) returned, cancelled: \(Task.isCancelled)")
      await emitter.emit(2)
      log.append("emit(2) returned")
    }
    let consumer = Task {
      var iterator = flow.makeAsyncIterator()
      let first = await iterator.next()
      await consumerHoldsFirst.wait()
      let second = await iterator.next()
      return (first, second)
    }
    await consumerHoldsFirst.entered()
    consumer.cancel()
    guard case let (first, second)? = await bounded(consumer, "consumer") else { return }
    #expect(first == 1)
    #expect(second == nil)
    // `next()` returned only after the body had ended: its whole log is there.
    #expect(log.all == ["emit(1) returned, cancelled: true", "emit(2) returned"])
  }

  @Test func leavingTheLoopCancelsTheBody() async {
    let bodyEnded = Signal()
    let flow = Flow<Int, Never>(bufferSize: 0) { emitter in
      var value = 0
      while !Task.isCancelled {
        value += 1
        await emitter.emit(value)
      }
      bodyEnded.fire()
    }
    for await value in flow where value == 3 { break }
    await bodyEnded.wait()
    #expect(bodyEnded.isFired)
  }

  @Test func consumerCancelledBeforeTheFirstElementNeverStartsTheBody() async {
    let started = Atomic(false)
    let flow = Flow<Int, Never> { emitter in
      started.store(true, ordering: .relaxed)
      await emitter.emit(1)
    }
    let result = await inCancelledTask { await collect(flow).elements }
    #expect(result?.isEmpty == true)
    #expect(started.load(ordering: .relaxed) == false)
  }

  @Test func wrapsAnotherSequenceAndRestartsItPerIteration() async {
    let flow = Flow(Flow<Int, Never>.sequence([1, 2, 3]).map { $0 * 10 }.eraseToFlow())
    #expect(await collect(flow).elements == [10, 20, 30])
    #expect(await collect(flow).elements == [10, 20, 30])
    let stream = AsyncStream<Int> { continuation in
      continuation.yield(5)
      continuation.finish()
    }
    #expect(await collect(stream.eraseToFlow()).elements == [5])
  }

  @Test func factories() async {
    #expect(await collect(Flow.just(4)).elements == [4])
    #expect(await collect(Flow<Int, Never>.empty).elements == [])
    #expect(await collect(Flow.sequence(1...3)).elements == [1, 2, 3])
    let failed = await collect(Flow<Int, TestError>.fail(TestError(id: 2)))
    #expect(failed.elements == [] && failed.failure == TestError(id: 2))
  }

  @Test func synchronousTransformsFuse() async {
    let flow = Flow.sequence(1...10).map { $0 * 3 }.filter { $0 % 2 == 0 }.compactMap { $0 > 10 ? $0 : nil }
    #expect(await collect(flow).elements == [12, 18, 24, 30])
  }

  @Test func asynchronousTransforms() async {
    let flow = Flow<Int, Never> { emitter in
      for value in 1...6 { await emitter.emit(value) }
    }
    .map { value async in value + 1 }
    .filter { value async in value % 2 == 0 }
    .compactMap { value async in value == 4 ? nil : "\(value)" }
    #expect(await collect(flow).elements == ["2", "6"])
  }

  @Test func builderFlowsFuseSynchronousStagesOverTheirBatches() async {
    let flow = Flow<Int, Never> { emitter in
      for value in 1...10 { await emitter.emit(value) }
    }
    .map { $0 * 3 }.filter { $0 % 2 == 0 }.compactMap { $0 > 10 ? $0 : nil }
    .setFailureType(to: TestError.self)
    let result = await collect(flow)
    #expect(result.elements == [12, 18, 24, 30] && result.failure == nil)
  }

  // The stages take elements of the consumer's batch without suspending; a cancelled consumer
  // must still get nothing more from that batch.
  @Test func aCancelledConsumerTakesNothingMoreFromItsBatch() async {
    let flow = Flow<Int, Never>(bufferSize: 4) { emitter in
      for value in 1...100 {
        await emitter.emit(value)
        if Task.isCancelled { return }
      }
    }
    .map { $0 * 10 }
    let clock = TestClock()
    // On the serial test executor the body emits 1 to 5 (and parks) before the consumer runs, so
    // the consumer's first batch holds all five.
    let afterCancellation = clock.task {
      var iterator = flow.makeAsyncIterator()
      let first = await iterator.next(isolation: nil)
      withUnsafeCurrentTask { $0?.cancel() }
      var rest: [Int] = []
      while let value = await iterator.next(isolation: nil) { rest.append(value) }
      return (first, rest)
    }
    guard case let (first, rest)? = await bounded(afterCancellation, "afterCancellation") else { return }
    #expect(first == 10)
    #expect(rest.isEmpty)
  }

  // The emitter is Sendable: a body may emit from several child tasks, and several may wait for
  // room at once. Each must be resumed, or the body never ends.
  @Test func emitFromManyChildTasksDeliversEverythingAndEnds() async {
    let flow = Flow<Int, Never>(bufferSize: 1) { emitter in
      await withTaskGroup(of: Void.self) { group in
        for child in 0..<8 {
          group.addTask {
            for step in 0..<50 { await emitter.emit(child * 100 + step) }
          }
        }
      }
    }
    let elements = await collect(flow).elements
    #expect(elements.count == 400)
    #expect(Set(elements).count == 400)
  }

  @Test func throwingTransformEndsTheIterationWithItsFailure() async {
    let flow = Flow<Int, TestError> { emitter throws(TestError) in
      for value in 1...5 { await emitter.emit(value) }
    }
    .map { (value: Int) throws(TestError) -> Int in
      if value == 3 { throw TestError(id: value) }
      return value
    }
    let result = await collect(flow)
    #expect(result.elements == [1, 2])
    #expect(result.failure == TestError(id: 3))
  }

  @Test func synchronousSourceStopsWhenTheConsumerIsCancelled() async {
    let infinite = Flow.sequence(0...).map { $0 + 1 }
    #expect(await inCancelledTask { await collect(infinite).elements }?.isEmpty == true)
  }

  @Test func negativeBufferSizeIsAProgrammerError() async {
    await #expect(processExitsWith: .failure) {
      _ = Flow<Int, Never>(bufferSize: -1) { _ in }
    }
  }
}
