import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// How an iteration ends early in these tests.
enum EarlyEnd: String, CaseIterable, Sendable {
  /// The consumer's task is cancelled while it waits in `next()`.
  case consumerCancelled
  /// The first inner fails.
  case innerFails
}

/// An outer `Flow` that emits `1...count` one at a time (`bufferSize: 0`: each `emit` waits for the
/// operator to ask), then waits until cancelled; `ended` is set by its body's `defer`.
private func watchedOuter(_ count: Int, ended: LockedState<Bool>) -> Flow<Int, Never> {
  Flow(bufferSize: 0) { emitter in
    defer { ended.withLock { $0 = true } }
    for value in 1...count { await emitter.emit(value) }
    await Gate().wait()  // returns when cancelled
  }
}

@Suite("Flattening failures and early ends", .timeLimit(.minutes(1)))
struct FlatteningFailureTests {
  // Rule 6: the outer's body has ended when `next()` returns nil or throws, also when the outer
  // pump was waiting for a slot (`concatFlow`, `mergeFlow` with a limit) at that moment.
  @Test(arguments: [1, 2], EarlyEnd.allCases)
  func theOutersBodyHasEndedWhenNextReturns(maxConcurrent: Int, end: EarlyEnd) async {
    let outerEnded = LockedState(false)
    let innerGate = Gate()
    let flattened = watchedOuter(maxConcurrent + 1, ended: outerEnded).mergeFlow(maxConcurrent: maxConcurrent) {
      value in
      Flow<Int, TestError> { emitter throws(TestError) in
        await emitter.emit(value)
        await innerGate.wait()
        if end == .innerFails && value == 1 { throw TestError(id: 1) }
      }
    }
    let consumer = Task { () -> (elements: [Int], failure: TestError?, outerEndedAtOnce: Bool) in
      var iterator = flattened.makeAsyncIterator()
      var elements: [Int] = []
      do throws(TestError) {
        while let element = try await iterator.next(isolation: nil) { elements.append(element) }
        return (elements, nil, outerEnded.withLock { $0 })
      } catch {
        return (elements, error, outerEnded.withLock { $0 })
      }
    }
    // Every running inner has handed over its element and waits; the outer pump waits for a slot.
    await innerGate.entered(count: maxConcurrent)
    switch end {
    case .consumerCancelled: consumer.cancel()
    case .innerFails: innerGate.release()
    }
    let result = await consumer.value
    #expect(result.outerEndedAtOnce)
    #expect(result.failure == (end == .innerFails ? TestError(id: 1) : nil))
  }
}
