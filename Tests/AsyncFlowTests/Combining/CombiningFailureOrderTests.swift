import AsyncFlow
import AsyncFlowTesting
import Testing

/// The first failure of any input ends the result when it happens, as RxSwift's
/// `testCombineLatest_ErrorThrow` / `_ThrowError` and `testCombineLatest_ConsecutiveEndWithErrorLeft`
/// / `_Right` expect, in both argument orders. RxSwift's virtual times map to ticks of 5 from 200
/// (210 is tick 2, 230 tick 6). The result is drawn with its failure as the failing input's id
/// followed by the end, so that `#1` and `#2` tell apart.
@Suite("Combining: the first failure wins", .hangGuard)
struct CombiningFailureOrderTests {
  enum Operator: String, CaseIterable, Sendable {
    case merge, combineLatest, zip, withLatestFrom
  }

  /// A marble input whose `#` is `TestError(id: id)`.
  private static func input(_ marbles: Marbles, _ diagram: String, id: Int) -> AsyncMapErrorSequence<
    Flow<String, MarbleFailure>, TestError
  > {
    marbles.input(diagram).mapError { _ in TestError(id: id) }
  }

  /// `op` over `first` and `second`, each output drawn as its first element, a failure as its id.
  private static func combined<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable>(
    _ op: Operator, _ first: A, _ second: B
  ) -> Flow<String, Never>
  where A.Element == String, B.Element == String, A.Failure == TestError, B.Failure == TestError {
    let result: Flow<String, TestError> =
      switch op {
      case .merge: Flow(Flow.merge(first, second))
      case .combineLatest: Flow(Flow.combineLatest(first, second)).map { $0.0 }
      case .zip: Flow(Flow.zip(first, second)).map { $0.0 }
      case .withLatestFrom: Flow(first.withLatestFromFlow(second)).map { $0.0 }
      }
    return Flow { emitter in
      var iterator = result.makeAsyncIterator()
      do throws(TestError) {
        while let output = try await iterator.next(isolation: nil) { await emitter.emit(output) }
      } catch {
        await emitter.emit("\(error.id)")
      }
    }
  }

  /// RxSwift `testCombineLatest_ErrorThrow` and `_ThrowError`: one input gives 2 at 210 and fails
  /// (#1) at 220, the other fails (#2) at 230. Before, the input holding 2 was not pulled until
  /// the other produced, so #2 won at 230.
  @Test(arguments: [Operator.combineLatest, .zip, .merge, .withLatestFrom], [false, true])
  func anEarlierFailureBehindAHeldElementWins(_ op: Operator, swapped: Bool) async {
    let marbles = Marbles(tick: .seconds(1))
    let early = Self.input(marbles, "--2-#", id: 1)
    let late = Self.input(marbles, "------#", id: 2)
    let output = await marbles.record(
      swapped ? Self.combined(op, late, early) : Self.combined(op, early, late), ticks: 10)
    switch op {
    // merge delivers the 2 at once; withLatestFrom drops a base element before the other's first.
    case .merge: #expect(output == "--2-[1|]", "swapped: \(swapped)")
    default: #expect(output == "----[1|]", "\(op), swapped: \(swapped)")
    }
    #expect(marbles.clock.pendingSleepers == 0)
  }

  /// RxSwift `testCombineLatest_ConsecutiveEndWithErrorLeft` and `_Right`: one input gives 2 at 215
  /// and 4 at 225 and fails at 230; the other gives 6 at 235 and 7 at 240 and finishes at 250.
  /// Expected: the failure at 230 and no output, the other input cancelled at 230. Before, 8 and 10
  /// came at 235, then the failure.
  @Test(arguments: [Operator.combineLatest, .zip], [false, true])
  func aFailureEndsTheResultWhenItHappensAndCancelsTheOther(_ op: Operator, swapped: Bool) async {
    let marbles = Marbles(tick: .seconds(1))
    let cancelledAt = LockedBox<Duration?>(nil)
    let clock = marbles.clock
    let start = clock.now
    let failing = Self.input(marbles, "---2-4#", id: 1)
    let other = Self.input(marbles, "-------67-|", id: 2).handleEventsFlow(onCancel: {
      cancelledAt.set(start.duration(to: clock.now))
    })
    let output = await marbles.record(
      swapped ? Self.combined(op, other, failing) : Self.combined(op, failing, other), ticks: 12)
    #expect(output == "------[1|]", "\(op), swapped: \(swapped)")
    #expect(cancelledAt.get() == .seconds(6), "\(op), swapped: \(swapped)")
    #expect(marbles.clock.pendingSleepers == 0)
  }

  /// Reading ahead keeps every element: zip still pairs the n-th with the n-th, and combineLatest
  /// still pairs the first elements first, then one output per element, when an input races ahead.
  @Test func readingAheadKeepsEveryElementInOrder() async {
    let marbles = Marbles(tick: .seconds(1))
    let fast = marbles.input("abc---|")
    let slow = marbles.input("---x-y-z|")
    let zipped = await marbles.record(Flow(Flow.zip(fast, slow)).map { $0.0 + $0.1 }, ticks: 10, symbol: { $0.first! })
    // fast's end is seen at 6, and ends the result once its last element, c, is used.
    #expect(zipped == "---a-b-[c|]")
    let latest = await marbles.record(
      Flow(Flow.combineLatest(fast, slow)).map { $0.0 + $0.1 }, ticks: 10, symbol: { _ in "o" })
    // (a,x), (b,x), (c,x) at 3, then (c,y) and (c,z).
    #expect(latest == "---[ooo]-o-o|")
  }
}

/// A value shared between a test and its closures.
final class LockedBox<Value: Sendable>: Sendable {
  private let state: LockedState<Value>
  init(_ value: Value) { state = LockedState(value) }
  func set(_ value: Value) { state.withLock { $0 = value } }
  func get() -> Value { state.withLock { $0 } }
}
