import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

private typealias Input = CombiningScript<String, TestError>

@Suite("Combining", .hangGuard)
struct CombiningTests {
  // MARK: Call forms and types

  @Test func callSitesNeedNoGenericArguments() async throws {
    let a = Flow.sequence([1, 2])
    let b = Flow.sequence([10, 20])
    let c = Flow.sequence([100, 200])
    let email = Flow.just("a@b.c")
    let password = Flow.just("secret12")
    let merged: AsyncMergeInputsSequence<Int, Never> = Flow.merge(a, b)
    let form: AsyncCombineLatestFlowSequence<(String, String), Never> = Flow.combineLatest(email, password)
    let zipped: AsyncZipFlowSequence<(Int, Int, Int), Never> = Flow.zip(a, b, c)
    let latest: AsyncWithLatestFromFlowSequence<(Int, String), Never> = a.withLatestFromFlow(email)
    #expect(await collect(merged).elements.sorted() == [1, 2, 10, 20])
    #expect(await collect(form).elements.map { "\($0.0) \($0.1)" } == ["a@b.c secret12"])
    #expect(await collect(zipped).elements.map { [$0.0, $0.1, $0.2] } == [[1, 10, 100], [2, 20, 200]])
    _ = latest
  }

  @Test func everyArityCompilesAndCombines() async throws {
    let one = Flow.sequence([1])
    let text = Flow.just("x")
    #expect(await collect(Flow.merge(one, one, one)).elements == [1, 1, 1])
    #expect(await collect(Flow.merge(one, one, one, one)).elements == [1, 1, 1, 1])
    #expect(await collect(Flow.merge([one, one])).elements == [1, 1])
    #expect(await collect(Flow.merge([one, one, one, one, one, one])).elements == [1, 1, 1, 1, 1, 1])
    #expect(await collect(Flow.merge([Flow<Int, Never>]())).elements == [])
    let c3 = await collect(Flow.combineLatest(one, text, one)).elements
    #expect(c3.map { "\($0.0)\($0.1)\($0.2)" } == ["1x1"])
    let c4 = await collect(Flow.combineLatest(one, text, one, text)).elements
    #expect(c4.map { "\($0.0)\($0.1)\($0.2)\($0.3)" } == ["1x1x"])
    #expect(await collect(Flow.combineLatest([one, one])).elements == [[1, 1]])
    #expect(await collect(Flow.combineLatest([Flow<Int, Never>]())).elements == [])
    let z2 = await collect(Flow.zip(one, text)).elements
    #expect(z2.map { "\($0.0)\($0.1)" } == ["1x"])
    let z4 = await collect(Flow.zip(one, text, one, text)).elements
    #expect(z4.map { "\($0.0)\($0.1)\($0.2)\($0.3)" } == ["1x1x"])
    #expect(await collect(Flow.zip([one, one, one])).elements == [[1, 1, 1]])
    #expect(await collect(Flow.zip([Flow<Int, Never>]())).elements == [])
  }

  @Test func iteratorsHaveTypedThrows() async throws {
    let failing = Flow<Int, TestError>.fail(TestError(id: 7))
    var iterator = Flow.zip(failing, Flow.sequence([1]).setFailureType(to: TestError.self)).makeAsyncIterator()
    do throws(TestError) {
      _ = try await iterator.next()
      Issue.record("expected a failure")
    } catch {
      #expect(error == TestError(id: 7))  // `error` is a TestError: no cast
    }
  }

  // MARK: merge

  @Test func mergeDeliversEveryElementInArrivalOrderAndFinishesWhenAllFinish() async throws {
    let a = Input()
    let b = Input()
    var iterator = Flow.merge(a, b).makeAsyncIterator()
    a.send("a1")
    #expect(try await iterator.next() == "a1")
    b.send("b1")
    #expect(try await iterator.next() == "b1")
    a.send("a2")
    #expect(try await iterator.next() == "a2")
    a.finish()
    await a.released.wait()
    b.send("b2")
    #expect(try await iterator.next() == "b2")
    b.finish()
    #expect(try await iterator.next() == nil)
    #expect(try await iterator.next() == nil)
  }

  @Test func mergeFirstFailureFailsTheWholeAndCancelsTheOthers() async throws {
    let a = Input()
    let b = Input()
    var iterator = Flow.merge(a, b).makeAsyncIterator()
    a.send("a1")
    #expect(try await iterator.next() == "a1")
    a.fail(TestError(id: 1))
    await #expect(throws: TestError(id: 1)) { try await iterator.next() }
    // The other input was cancelled and its iteration had ended before the failure was thrown.
    #expect(b.sawCancellation.isFired)
    #expect(b.released.isFired)
    #expect(try await iterator.next() == nil)
  }

  // MARK: combineLatest

  @Test func combineLatestWaitsForEveryInputThenFollowsEachElement() async throws {
    let a = Input()
    let b = Input()
    var iterator = Flow.combineLatest(a, b).makeAsyncIterator()
    a.send("a1")
    a.send("a2")
    b.send("b1")
    // One element ahead at most: a2 was not pulled before the first tuple, which pairs the firsts.
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "a1b1")
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "a2b1")
    b.send("b2")
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "a2b2")
    a.finish()
    await a.released.wait()
    // An input that finishes after producing keeps its latest.
    b.send("b3")
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "a2b3")
    b.finish()
    #expect(try await iterator.next() == nil)
    #expect(try await iterator.next() == nil)
  }

  @Test func combineLatestFinishesAtOnceWhenAnInputFinishesWithoutProducing() async throws {
    let a = Input()
    let b = Input()
    var iterator = Flow.combineLatest(a, b).makeAsyncIterator()
    a.send("a1")
    b.finish()
    #expect(try await iterator.next() == nil)
    #expect(a.released.isFired)
  }

  @Test func combineLatestFirstFailureFailsTheWhole() async throws {
    let a = Input()
    let b = Input()
    var iterator = Flow.combineLatest(a, b).makeAsyncIterator()
    a.send("a1")
    b.send("b1")
    #expect(try await iterator.next() != nil)
    b.fail(TestError(id: 2))
    await #expect(throws: TestError(id: 2)) { try await iterator.next() }
    #expect(a.released.isFired)
    #expect(try await iterator.next() == nil)
  }

  // MARK: zip

  @Test func zipPairsTheNthElements() async throws {
    let a = Input()
    let b = Input()
    var iterator = Flow.zip(a, b).makeAsyncIterator()
    for element in ["a1", "a2", "a3"] { a.send(element) }
    b.send("b1")
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "a1b1")
    b.send("b2")
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "a2b2")
    // a3 is pulled (one ahead) but b ends: no third pair, and a is cancelled.
    b.finish()
    #expect(try await iterator.next() == nil)
    #expect(a.released.isFired)
  }

  @Test func zipFinishingCancelsAnInputThatIgnoresCancellationAndDeliversNothingMore() async throws {
    let a = Input(ignoresCancellation: true)
    let b = Input()
    let consumer = Task {
      var iterator = Flow.zip(a, b).makeAsyncIterator()
      return try await iterator.next().map { "\($0.0)\($0.1)" }
    }
    await a.pulled(count: 1)
    b.finish()
    await a.sawCancellation.wait()
    // The cancelled input goes on, produces and then ends: the result delivers nothing of it, and
    // ends once the input's work has ended (as every operator waits for the work it started).
    a.send("a1")
    a.finish()
    #expect(try await bounded(consumer, "consumer") == .some(nil))
    #expect(a.released.isFired)
  }

  @Test func zipFailureFailsTheWhole() async throws {
    let a = Input()
    let b = Input()
    var iterator = Flow.zip(a, b).makeAsyncIterator()
    a.send("a1")
    b.fail(TestError(id: 3))
    await #expect(throws: TestError(id: 3)) { try await iterator.next() }
    #expect(a.released.isFired)
  }

  // MARK: withLatestFromFlow

  @Test func withLatestFromPairsEachElementWithTheOthersLatest() async throws {
    let base = Input()
    let other = Input()
    var iterator = base.withLatestFromFlow(other).makeAsyncIterator()
    let first = Task {
      base.send("s1")
      await base.pulled(count: 2)  // s1 was dropped: nothing to pair it with yet, so base is pulled again
      other.send("o1")
      await other.pulled(count: 2)  // o1 is the latest, and other is pulled on at once
      other.send("o2")
      await other.pulled(count: 3)
      base.send("s2")
    }
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "s2o2")
    await bounded(first, "first")
    base.send("s3")
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "s3o2")
  }

  @Test func withLatestFromOtherFinishingDoesNotFinishButFailingFails() async throws {
    let base = Input()
    let other = Input()
    var iterator = base.withLatestFromFlow(other).makeAsyncIterator()
    let script = Task {
      other.send("o1")
      await other.pulled(count: 2)
      other.finish()
      await other.released.wait()
      base.send("s1")
    }
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "s1o1")
    await bounded(script, "script")
    base.send("s2")
    #expect(try await iterator.next().map { "\($0.0)\($0.1)" } == "s2o1")
    base.finish()
    #expect(try await iterator.next() == nil)

    let base2 = Input()
    let other2 = Input()
    var failing = base2.withLatestFromFlow(other2).makeAsyncIterator()
    other2.fail(TestError(id: 4))
    await #expect(throws: TestError(id: 4)) { try await failing.next() }
    #expect(base2.released.isFired)
  }

  // MARK: Cancellation

  enum Operator: String, CaseIterable, Sendable {
    case merge, combineLatest, zip, withLatestFrom
  }

  /// One iteration of `op` over `a` and `b`, as strings.
  private static func outputs(_ op: Operator, _ a: Input, _ b: Input) -> Flow<String, TestError> {
    switch op {
    case .merge: Flow(Flow.merge(a, b))
    case .combineLatest: Flow(Flow.combineLatest(a, b)).map { "\($0.0)\($0.1)" }
    case .zip: Flow(Flow.zip(a, b)).map { "\($0.0)\($0.1)" }
    case .withLatestFrom: Flow(a.withLatestFromFlow(b)).map { "\($0.0)\($0.1)" }
    }
  }

  @Test(arguments: Operator.allCases)
  func cancellingTheConsumerCancelsEveryInputBeforeNextReturns(_ op: Operator) async throws {
    let a = Input()
    let b = Input()
    let started = Signal()
    let consumer = Task {
      var iterator = Self.outputs(op, a, b).makeAsyncIterator()
      started.fire()
      let result = try await iterator.next()
      // Every input's iteration has ended by the time the cancelled consumer sees the end.
      return (result, a.released.isFired && b.released.isFired, try await iterator.next())
    }
    await started.wait()
    await a.pulled(count: 1)
    await b.pulled(count: 1)
    consumer.cancel()
    guard case let (result, inputsEnded, after)? = try await bounded(consumer, "consumer") else { return }
    #expect(result == nil)
    #expect(inputsEnded)
    #expect(after == nil)
  }

  @Test(arguments: Operator.allCases)
  func anInputIgnoringCancellationCannotKeepTheResultDelivering(_ op: Operator) async throws {
    let a = Input(ignoresCancellation: true)
    let b = Input(ignoresCancellation: true)
    let consumer = Task {
      var iterator = Self.outputs(op, a, b).makeAsyncIterator()
      return try await iterator.next()
    }
    await a.pulled(count: 1)
    await b.pulled(count: 1)
    consumer.cancel()
    await a.sawCancellation.wait()
    await b.sawCancellation.wait()
    // Both go on, produce and end: nothing reaches the cancelled consumer, which returns once
    // their work has ended.
    a.send("a1")
    b.send("b1")
    a.finish()
    b.finish()
    #expect(try await bounded(consumer, "consumer") == .some(nil))
    #expect(a.released.isFired && b.released.isFired)
  }

  @Test(arguments: Operator.allCases)
  func droppingTheIteratorCancelsEveryInput(_ op: Operator) async throws {
    let a = Input()
    let b = Input()
    do {
      var iterator = Self.outputs(op, a, b).makeAsyncIterator()
      let script = Task {
        // withLatestFrom drops a's elements until b has one.
        b.send("b1")
        if op == .withLatestFrom { await b.pulled(count: 2) }
        a.send("a1")
      }
      #expect(try await iterator.next() != nil)
      await bounded(script, "script")
    }
    await a.released.wait()
    await b.released.wait()
  }

  @Test func aCancelledConsumerTakesNothingMoreFromAMergeBatch() async throws {
    // A synchronous input offers its elements far faster than the consumer wakes up, so the first
    // batch the consumer takes holds several; once cancelled, it must not hand out the rest.
    var delivered: [Int] = []
    for _ in 0..<20 {
      let consumer = Task {
        var iterator = Flow.merge(Flow.sequence(0..<100), Flow<Int, Never>.empty).makeAsyncIterator()
        var seen: [Int] = []
        while let element = await iterator.next() {
          seen.append(element)
          if seen.count == 1 { withUnsafeCurrentTask { $0?.cancel() } }
        }
        return seen
      }
      delivered += await bounded(consumer, "consumer") ?? []
    }
    #expect(delivered == Array(repeating: 0, count: 20))
  }
}
