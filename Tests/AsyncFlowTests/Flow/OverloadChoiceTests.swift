import AsyncFlow
import AsyncFlowTesting
import Testing

/// The overloads issue 39 added for the type checker (`FlowChainable`'s stages, `Flow`'s and
/// `sink`'s forms for plain closures, the flattening overloads keyed on the outer's failure) are
/// the ones a call picks, and they run as the forms beside them. The annotations are the
/// compile-time half: a call that picked another overload would not compile.
@Suite("Overload choice", .hangGuard)
struct OverloadChoiceTests {
  /// `Flow` only: a call that picked another overload is not a `Flow` and does not compile here.
  static func elements<T, F>(of flow: Flow<T, F>) async -> (elements: [T], failure: F?) {
    await collect(flow)
  }

  @Test func plainClosureStepsAfterAnOperatorAreFlowStages() async {
    let numbers = Flow.sequence([1, 1, 2, 3, 3])
    let mapped: Flow<Int, Never> = numbers.removeDuplicatesFlow().map { $0 * 10 }
    let filtered: Flow<Int, Never> = numbers.scanFlow(0) { $0 + $1 }.filter { $0 > 1 }
    let compacted: Flow<String, Never> = numbers.removeDuplicatesFlow().compactMap { $0 == 2 ? nil : "\($0)" }
    #expect(await collect(mapped).elements == [10, 20, 30])
    #expect(await collect(filtered).elements == [2, 4, 7, 10])
    #expect(await collect(compacted).elements == ["1", "3"])
  }

  /// A subject's stage subscribes when its iterator is made, as the standard library's did: what
  /// is sent afterwards arrives, what was sent before does not.
  @Test func aSubjectsPlainClosureStageSubscribesWhenIterated() async {
    let subject = PassthroughFlow<Int, Never>()
    let doubled: Flow<Int, Never> = subject.map { $0 * 2 }
    subject.send(1)  // no subscriber yet
    var iterator = doubled.makeAsyncIterator()
    subject.send(2)
    subject.send(3)
    subject.finish()
    var received: [Int] = []
    while let value = await iterator.next() { received.append(value) }
    #expect(received == [4, 6])
  }

  @Test func closuresThatThrowOrAwaitKeepTheirForms() async {
    // On a Flow: the throwing form, and the asynchronous one, are still Flow's own.
    let failing = Flow<Int, TestError>.fail(TestError(id: 3))
    let typed: Flow<Int, TestError> = failing.map { (value) throws(TestError) -> Int in value }
    #expect(await collect(typed).failure == TestError(id: 3))
    let texts = Flow.sequence(["1", "x"]).setFailureType(to: TestError.self)
    let parsed = texts.map { (text) throws(TestError) -> Int in
      guard let number = Int(text) else { throw TestError(id: 9) }
      return number
    }
    let parsedResult = await Self.elements(of: parsed)
    #expect(parsedResult.elements == [1])
    #expect(parsedResult.failure == TestError(id: 9))
    let awaited: Flow<Int, Never> = Flow.sequence([1, 2]).map { value in
      await Task.yield()
      return value + 1
    }
    #expect(await collect(awaited).elements == [2, 3])
    // After an operator, a closure that awaits goes to the standard library's form, as before.
    let afterOperator: AsyncMapSequence<AsyncRemoveDuplicatesFlowSequence<Flow<Int, Never>>, Int> =
      Flow.sequence([1, 1, 2]).removeDuplicatesFlow().map { value in
        await Task.yield()
        return value
      }
    #expect(await collect(afterOperator).elements == [1, 2])
  }

  /// After a switch whose failure comes from its inner, `Flow`'s stages are still chosen: Swift
  /// 6.3 does not match a closure against `throws(Failure)` while `Failure` is unknown, and with
  /// only that form the later stages fell back to the standard library's.
  @Test func stagesAfterASwitchWhoseFailureComesFromTheInnerStayFlowStages() async {
    let queries = Flow.sequence(["a", "bb"])
    let search = Flow<[Int], TestError>.fail(TestError(id: 4))
    let counts = queries.switchToLatestFlow { _ in search }.map { $0.count }.filter { $0 > 0 }
    #expect(await Self.elements(of: counts).failure == TestError(id: 4))
  }

  @Test func theFourFailureCombinationsAndAnyError() async {
    let never = Flow.sequence([1])
    let typed = Flow<Int, TestError>.fail(TestError(id: 1))
    let untyped = Flow.sequence([1]).setFailureType(to: (any Error).self)
    let _: AsyncSwitchToLatestFlowSequence<Flow<Int, TestError>, Flow<Int, TestError>, TestError> =
      typed.switchToLatestFlow { _ in typed }
    let _: AsyncSwitchToLatestFlowSequence<Flow<Int, TestError>, Flow<Int, Never>, TestError> =
      typed.switchToLatestFlow { Flow.just($0) }
    let _: AsyncSwitchToLatestFlowSequence<Flow<Int, Never>, Flow<Int, TestError>, TestError> =
      never.switchToLatestFlow { _ in typed }
    let _: AsyncSwitchToLatestFlowSequence<Flow<Int, Never>, Flow<Int, Never>, Never> =
      never.switchToLatestFlow { Flow.just($0) }
    // An outer that fails with `any Error` takes an inner of any failure type.
    let anyInner: AsyncMergeFlowSequence<Flow<Int, any Error>, Flow<Int, TestError>, any Error> =
      untyped.mergeFlow { _ in typed }
    #expect(await collect(anyInner).failure is TestError)
    let neverInner: AsyncConcatFlowSequence<Flow<Int, any Error>, Flow<Int, Never>, any Error> =
      untyped.concatFlow { Flow.just($0 + 1) }
    #expect(await collect(neverInner).elements == [2])
  }

  /// `sink`'s form for a closure that does not await, on a sequence that is not a hot source:
  /// its closures run on their own isolation, in order, and the completion comes last.
  @Test func aPlainClosureSinkRunsOnItsIsolation() async {
    let box = SinkTestActorBox()
    let done = Signal()
    let subscription = Flow.sequence(Array(1...100)).map { $0 }.sink { _ in
      done.fire()
    } receiveValue: { @SinkTestActor value in
      SinkTestActor.preconditionIsolated("a plain-closure @SinkTestActor sink ran off its actor")
      box.received.append(value)
    }
    await bounded(run: Task { await done.wait() }, "the sink's completion")
    #expect(await box.received == Array(1...100))
    withExtendedLifetime(subscription) {}
  }
}
