import AsyncFlow
import GuideExamples
import Testing

@Suite("Known toolchain issues: the working forms run", .hangGuard)
struct ToolchainWorkaroundsTests {
  /// 1, 2, 3, then the end, in a flow that could fail with `FeedError`.
  let quotes = Flow<Int, FeedError> { emitter throws(FeedError) in
    for quote in 1...3 { await emitter.emit(quote) }
  }

  @Test func theTypedLoopKeepsTheFailuresType() async {
    #expect(await total(of: quotes) == .success(6))
    let failing = Flow<Int, FeedError> { emitter throws(FeedError) in
      await emitter.emit(1)
      throw .disconnected
    }
    #expect(await total(of: failing) == .failure(.disconnected))
  }

  @Test func thePlainTryInAnUntypedThrowingFunction() async throws {
    #expect(try await sum(of: quotes) == 6)
    await #expect(throws: FeedError.disconnected) { try await sum(of: Flow.fail(.disconnected)) }
  }
}
