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

/// Collects `sequence` on `clock` until everything waits; whether it had ended by then; then runs
/// `release` and waits for its end.
private func runUntilQuiet<S: AsyncSequence & Sendable>(
  _ sequence: S, on clock: TestClock, then release: @Sendable () -> Void
) async -> (endedAtOnce: Bool, failure: S.Failure?) where S.Element: Sendable, S.Failure: Sendable {
  let done = LockedState(false)
  let result = clock.task {
    defer { done.withLock { $0 = true } }
    return await collect(sequence).failure
  }
  await clock.runCurrent()
  let endedAtOnce = done.withLock { $0 }
  release()  // lets the test end either way
  return (endedAtOnce, await bounded(result, "result") ?? nil)
}

@Suite("Flattening failures and early ends", .hangGuard)
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
    guard let result = await bounded(consumer, "consumer") else { return }
    #expect(result.outerEndedAtOnce)
    #expect(result.failure == (end == .innerFails ? TestError(id: 1) : nil))
  }

  // Rule 3: an outer failure is not held back by inners that keep every slot busy: the outer is
  // pulled one element ahead of the slots, so its failure right after them ends the sequence at
  // once, cancelling the inners.
  @Test(arguments: [1, 2])
  func anOuterFailureEndsAtOnceWhileEverySlotIsBusy(maxConcurrent: Int) async {
    let clock = TestClock()
    let innerGate = Gate()
    let innersEnded = LockedState(0)
    let outer = Flow<Int, TestError>(bufferSize: 0) { emitter throws(TestError) in
      for value in 1...maxConcurrent { await emitter.emit(value) }
      throw TestError(id: 9)
    }
    let inner: @Sendable (Int) -> Flow<Int, TestError> = { value in
      Flow { emitter throws(TestError) in
        defer { innersEnded.withLock { $0 += 1 } }
        await emitter.emit(value)
        await innerGate.wait()  // returns when cancelled
      }
    }
    let (endedAtOnce, failure) =
      maxConcurrent == 1
      ? await runUntilQuiet(outer.concatFlow(inner), on: clock, then: innerGate.release)
      : await runUntilQuiet(outer.mergeFlow(maxConcurrent: 2, inner), on: clock, then: innerGate.release)
    #expect(endedAtOnce)
    #expect(failure == TestError(id: 9))
    #expect(innersEnded.withLock { $0 } == maxConcurrent)
  }

  // Rule 5: an outer failure is delivered at once; elements the inners offered that the consumer
  // has not taken yet are discarded (as Combine, Rx and Kotlin do).
  @Test func anOuterFailureDiscardsElementsNotTakenYet() async {
    let clock = TestClock()
    let outerGate = Gate()
    let innerGate = Gate()
    let consumerGate = Gate()
    let outer = Flow<Int, TestError>(bufferSize: 0) { emitter throws(TestError) in
      await emitter.emit(1)
      await outerGate.wait()
      throw TestError(id: 9)
    }
    let merged = outer.mergeFlow { _ in
      Flow<String, TestError> { emitter in
        await emitter.emit("a1")
        await innerGate.wait()
        await emitter.emit("a2")
        await emitter.emit("a3")
        await Gate().wait()  // returns when cancelled
      }
    }
    let result = clock.task { () -> (first: String?, rest: [String], failure: TestError?) in
      var iterator = merged.makeAsyncIterator()
      let first = try? await iterator.next(isolation: nil)
      await consumerGate.wait()
      var rest: [String] = []
      do throws(TestError) {
        while let element = try await iterator.next(isolation: nil) { rest.append(element) }
        return (first, rest, nil)
      } catch {
        return (first, rest, error)
      }
    }
    await clock.runCurrent()
    innerGate.release()
    await clock.runCurrent()  // "a2" and "a3" wait for the consumer
    outerGate.release()
    await clock.runCurrent()  // the outer failed
    consumerGate.release()
    guard case let (first, rest, failure)? = await bounded(result, "result") else { return }
    #expect(first == "a1")
    #expect(rest.isEmpty)
    #expect(failure == TestError(id: 9))
  }

  // Rule 5: an inner's failure is delivered at once too; only the elements that inner offered
  // before failing come first, in order. Another inner's elements not taken yet are discarded.
  @Test func anInnerFailureDeliversOnlyItsOwnEarlierElementsFirst() async {
    let clock = TestClock()
    let gates = (first: Gate(), second: Gate(), consumer: Gate())
    let merged = Flow.sequence([1, 2]).mergeFlow { value in
      Flow<String, TestError> { emitter throws(TestError) in
        if value == 1 {
          await emitter.emit("a1")
          await gates.first.wait()
          await emitter.emit("a2")
          await emitter.emit("a3")
          await Gate().wait()  // returns when cancelled
        } else {
          await emitter.emit("b1")
          await gates.second.wait()
          await emitter.emit("b2")
          throw TestError(id: 2)
        }
      }
    }
    let result = clock.task { () -> (elements: [String], failure: TestError?) in
      var iterator = merged.makeAsyncIterator()
      var elements: [String] = []
      if let first = try? await iterator.next(isolation: nil) { elements.append(first) }
      await gates.consumer.wait()
      do throws(TestError) {
        while let element = try await iterator.next(isolation: nil) { elements.append(element) }
        return (elements, nil)
      } catch {
        return (elements, error)
      }
    }
    await clock.runCurrent()  // "a1" and "b1" handed over; both inners wait
    gates.first.release()
    await clock.runCurrent()  // "a2" and "a3" wait for the consumer
    gates.second.release()
    await clock.runCurrent()  // "b2", then the failure
    gates.consumer.release()
    guard case let (elements, failure)? = await bounded(result, "result") else { return }
    #expect(failure == TestError(id: 2))
    #expect(elements.sorted() == ["a1", "b1", "b2"])
    #expect(elements.last == "b2")
  }
}
