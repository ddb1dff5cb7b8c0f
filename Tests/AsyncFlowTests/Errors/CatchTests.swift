import AsyncFlow
import Testing

/// Three requests; the second one fails.
private let requests = Flow<Flow<String, TestError>, Never>.sequence([
  Flow.sequence(["a1", "a2"]).setFailureType(to: TestError.self),
  Flow<String, TestError> { emitter throws(TestError) in
    await emitter.emit("b1")
    throw TestError(id: 2)
  },
  Flow.just("c1").setFailureType(to: TestError.self),
])

/// Flattens inner sequences one after another (enough to show where a failure ends a stream).
private func flatten<Outer: AsyncSequence & Sendable>(_ outer: Outer) -> Flow<String, Outer.Element.Failure>
where Outer.Element: AsyncSequence, Outer.Element.Element == String, Outer.Failure == Never {
  Flow { emitter throws(Outer.Element.Failure) in
    for await inner in outer {
      var iterator = inner.makeAsyncIterator()
      while let value = try await iterator.next(isolation: #isolation) { await emitter.emit(value) }
    }
  }
}

@Suite("catch, catchInner, replaceError, mapError", .hangGuard)
struct CatchTests {
  @Test func catchKeepsEarlierElementsThenEndsWithTheFallback() async {
    let result = await collect(
      Flow<Int, TestError> { emitter throws(TestError) in
        await emitter.emit(1)
        await emitter.emit(2)
        throw TestError(id: 9)
      }.catch { error in Flow.sequence([-error.id, -1]) }
    )
    #expect(result.elements == [1, 2, -9, -1])
  }

  @Test func catchAtTheEndEndsTheWholeStream() async {
    let result = await collect(flatten(requests).catch { _ in Flow.just("fallback") })
    #expect(result.elements == ["a1", "a2", "b1", "fallback"])  // "c1" never arrives
  }

  @Test func catchInnerEndsOnlyTheFailingInnerSequence() async {
    let result = await collect(flatten(requests.catchInner { _ in Flow.just("fallback") }))
    #expect(result.elements == ["a1", "a2", "b1", "fallback", "c1"])
    #expect(result.failure == nil)
  }

  @Test func catchFallbackMayFailWithItsOwnType() async {
    struct Other: Error, Equatable {}
    let result = await collect(Flow<Int, TestError>.fail(TestError()).catch { _ in Flow<Int, Other>.fail(Other()) })
    #expect(result.failure == Other())
  }

  @Test func catchDoesNotRunTheHandlerForACancelledConsumer() async {
    let sequence = Flow<Int, TestError>.fail(TestError()).catch { _ in Flow.just(1) }
    #expect(await inCancelledTask { await collect(sequence).elements }?.isEmpty == true)
  }

  @Test func replaceErrorEndsWithTheReplacement() async {
    let sequence = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      throw TestError()
    }.replaceError(with: 0)
    let result = await collect(sequence)
    #expect(result.elements == [1, 0])
  }

  @Test func mapErrorTransformsTheFailure() async {
    struct Wrapped: Error, Equatable { var inner: TestError }
    let result = await collect(Flow<Int, TestError>.fail(TestError(id: 3)).mapError { Wrapped(inner: $0) })
    #expect(result.failure == Wrapped(inner: TestError(id: 3)))
  }

  @Test func everyOperatorReturnsNilForACancelledConsumer() async {
    let base = Flow.sequence(1...3).setFailureType(to: TestError.self)
    #expect(await inCancelledTask { await collect(base.catch { _ in Flow.just(0) }).elements }?.isEmpty == true)
    #expect(await inCancelledTask { await collect(base.replaceError(with: 0)).elements }?.isEmpty == true)
    #expect(await inCancelledTask { await collect(base.mapError { $0 }).elements }?.isEmpty == true)
    #expect(await inCancelledTask { await collect(base.prependState(0)).elements }?.isEmpty == true)
    #expect(await inCancelledTask { await collect(base.asLoadState()).elements.count } == 0)
    #expect(await inCancelledTask { await collect(requests.catchInner { _ in Flow.just("") }).elements.count } == 0)
  }
}
