import AsyncFlow
import Testing

@Suite("LoadState, asLoadState, prependState", .hangGuard)
struct LoadStateTests {
  @Test func accessors() {
    let loaded = LoadState<Int, TestError>.loaded(3)
    #expect(loaded.value == 3 && loaded.failure == nil && !loaded.isLoading)
    let failed = LoadState<Int, TestError>.failed(TestError(id: 1))
    #expect(failed.value == nil && failed.failure == TestError(id: 1))
    #expect(LoadState<Int, TestError>.loading.isLoading)
    #expect(LoadState<Int, TestError>.idle != .loading)
    #expect(Set([LoadState<Int, TestError>.loaded(1), .loaded(1)]).count == 1)
  }

  @Test func initFromAResultIsLoadedOrFailed() async {
    #expect(LoadState(Result<Int, TestError>.success(3)) == .loaded(3))
    #expect(LoadState(Result<Int, TestError>.failure(TestError(id: 2))) == .failed(TestError(id: 2)))
    // A task's result, as an app shows it.
    let result = await Task { () async throws -> Int in throw TestError(id: 5) }.result
    #expect(LoadState(result).failure as? TestError == TestError(id: 5))
  }

  @Test func asLoadStateOnSuccess() async {
    let result = await collect(Flow.sequence([1, 2]).asLoadState())
    #expect(result.elements == [.loading, .loaded(1), .loaded(2)])
  }

  @Test func asLoadStateOnFailureEndsWithFailedAndCannotFail() async {
    let flow = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      throw TestError(id: 4)
    }
    let states: AsyncLoadStateSequence<Flow<Int, TestError>> = flow.asLoadState()
    let result = await collect(states)
    #expect(result.elements == [.loading, .loaded(1), .failed(TestError(id: 4))])
    let _: Never? = result.failure  // the type says it cannot fail
  }

  @Test func asLoadStateWritesNothingForACancelledLoad() async {
    let flow = Flow<Int, TestError>.fail(TestError())
    #expect(await inCancelledTask { await collect(flow.asLoadState()).elements }?.isEmpty == true)
  }

  @Test func prependStatePutsTheElementFirst() async {
    #expect(await collect(Flow.sequence([2, 3]).prependState(1)).elements == [1, 2, 3])
  }

  @Test func prependStateOnLoadStatesPrependsLoading() async {
    let states = Flow<LoadState<Int, TestError>, Never>.just(.loaded(5)).prependState()
    #expect(await collect(states).elements == [.loading, .loaded(5)])
  }
}
