import AsyncFlowTesting
import Testing

@testable import AsyncFlow

@Suite("bufferFlow", .hangGuard)
struct BufferFlowTests {
  /// A producer that emits `count` elements without waiting for anyone, then ends with `failure`.
  private func producer(_ count: Int, failure: TestError? = nil, produced: LockedState<Int>) -> Flow<Int, TestError> {
    Flow(bufferSize: 0) { emitter throws(TestError) in
      for value in 1...count {
        produced.withLock { $0 = value }
        await emitter.emit(value)
      }
      if let failure { throw failure }
    }
  }

  /// Lets the producer run ahead while the consumer holds back, then takes everything.
  private func run(_ policy: FlowBufferingPolicy, count: Int, failure: TestError? = nil) async -> (
    elements: [Int], failure: TestError?
  ) {
    let clock = TestClock()
    let produced = LockedState(0)
    return await clock.task {
      var iterator = producer(count, failure: failure, produced: produced).bufferFlow(policy: policy)
        .makeAsyncIterator()
      var elements: [Int] = []
      do throws(TestError) {
        elements.append(try await iterator.next()!)  // the first, at once
        // The consumer is busy: the producer runs to its end meanwhile.
        await clock.runCurrent()
        #expect(produced.withLock { $0 } == count)
        while let element = try await iterator.next() { elements.append(element) }
        return (elements, nil)
      } catch {
        return (elements, error)
      }
    }.value
  }

  @Test func unboundedLosesNothingAndDeliversTheFailureLast() async {
    let result = await run(.unbounded, count: 100, failure: TestError(id: 1))
    #expect(result.elements == Array(1...100))
    #expect(result.failure == TestError(id: 1))
  }

  @Test func bufferingNewestKeepsTheNewestWhileTheConsumerIsBusy() async {
    let result = await run(.bufferingNewest(3), count: 10)
    #expect(result.elements == [1, 8, 9, 10])
  }

  @Test func bufferingOldestKeepsTheOldestAndDropsTheRest() async {
    let result = await run(.bufferingOldest(3), count: 10)
    #expect(result.elements == [1, 2, 3, 4])
  }

  @Test func cancellingEndsTheProducersWorkBeforeNextReturns() async {
    let bodyEnded = LockedState(false)
    let endless = Flow<Int, Never> { emitter in
      defer { bodyEnded.withLock { $0 = true } }
      var value = 0
      while !Task.isCancelled {
        value += 1
        await emitter.emit(value)
      }
    }
    let task = Task {
      var iterator = endless.bufferFlow(policy: .bufferingNewest(1)).makeAsyncIterator()
      _ = await iterator.next()
      withUnsafeCurrentTask { $0?.cancel() }
      let afterCancel = await iterator.next()
      return (afterCancel, bodyEnded.withLock { $0 })
    }
    guard case let (afterCancel, ended)? = await bounded(task, "task") else { return }
    #expect(afterCancel == nil)
    #expect(ended)  // checked at once, not eventually
  }

  @Test func aBoundedLimitBelowOneStopsWithAPrecondition() async {
    await #expect(processExitsWith: .failure) { _ = Flow.just(1).bufferFlow(policy: .bufferingNewest(0)) }
    await #expect(processExitsWith: .failure) { _ = Flow.just(1).bufferFlow(policy: .bufferingOldest(0)) }
  }
}
