import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// Each input of `combineLatest`, `zip` and `withLatestFromFlow` runs a bounded number of elements
/// ahead of the consumer, which takes them in batches; a failure still wins over a batch already
/// taken.
@Suite("Combining: reading ahead", .hangGuard)
struct CombiningReadAheadTests {
  enum Operator: String, CaseIterable, Sendable {
    case combineLatest, zip, withLatestFrom
  }

  /// Behind a stalled consumer each input holds at most 64 elements, plus at most 64 in the batch
  /// the consumer took, plus its latest and the one its `Flow` body's `emit` waits with (Guides/
  /// Effects.md); and it does run ahead (before, it was pulled at most one element ahead).
  @Test(arguments: Operator.allCases)
  func aStalledConsumerHoldsAtMostTheDocumentedBoundPerInput(_ op: Operator) async {
    let clock = TestClock()
    let tracker = Tracker()
    let never = Gate()
    let input: @Sendable () -> Flow<Tracked, Never> = {
      Flow<Tracked, Never>(bufferSize: 0) { emitter in
        for _ in 0..<5_000 {
          if Task.isCancelled { return }
          await emitter.emit(tracker.make())
        }
        await never.wait()
      }
    }
    let stall = Gate()
    let consumer = clock.task {
      let stepper =
        switch op {
        case .combineLatest: AnyStepper(Flow.combineLatest(input(), input()))
        case .zip: AnyStepper(Flow.zip(input(), input()))
        case .withLatestFrom: AnyStepper(input().withLatestFromFlow(input()))
        }
      _ = await stepper.next()
      await stall.wait()  // stalled: holds the iterator without pulling
      withExtendedLifetime(stepper) {}
    }
    await clock.advance(by: .seconds(1))
    let (held, made) = (tracker.live, tracker.made)
    #expect(stall.parkedCount == 1, "\(op): the consumer never got a first output")
    let bound = 2 * (64 + 64 + 1 + 1)
    #expect(held <= bound, "\(op): holds \(held) behind a stalled consumer, bound \(bound)")
    // The base reads ahead 64 (withLatestFrom's other is pulled as fast as it produces).
    #expect(made >= 64 + 2, "\(op): made \(made): the inputs did not read ahead")
    consumer.cancel()
    await bounded(consumer, "consumer")
    await clock.runCurrent()
    #expect(tracker.live == 0, "\(op): \(tracker.live) elements alive after the iteration was cancelled")
  }

  /// A batch the consumer has taken is not delivered past a failure that comes meanwhile: b2 and
  /// b3 are one batch, whose first output is (a1, b2); a's failure then comes before (a1, b3).
  @Test func aFailureWinsOverTheRestOfATakenBatch() async throws {
    let a = CombiningScript<String, TestError>()
    let b = CombiningScript<String, TestError>()
    var iterator = Flow.combineLatest(a, b).makeAsyncIterator()
    a.send("a1")
    b.send("b1")
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "a1b1")
    b.send("b2")
    b.send("b3")
    // b3 is held once b is asked for its fourth element.
    await b.pulled(count: 4)
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "a1b2")
    a.fail(TestError(id: 1))
    await a.released.wait()
    await #expect(throws: TestError(id: 1)) { try await iterator.next() }
    #expect(b.released.isFired)
    #expect(try await iterator.next() == nil)
  }
}
