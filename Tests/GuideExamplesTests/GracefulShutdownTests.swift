import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The guide's service: a shutdown refuses new requests, cancels the ones in flight, and returns
/// only once their backend calls have ended; the live feed's subscribers finish. On real threads:
/// the service's tasks are its own.
@Suite("Graceful shutdown example", .hangGuard)
struct GracefulShutdownTests {
  /// The backend: each call parks until released or cancelled, then logs that it ended.
  final class Backend: Sendable {
    let gate = Gate()
    let ended = LockedState<[String]>([])

    func fetch(_ user: String) async -> String {
      await gate.wait()  // returns once released, or at once when cancelled
      let event = "\(user) ended, cancelled: \(Task.isCancelled)"
      ended.withLock { $0.append(event) }
      return "profile of \(user)"
    }
  }

  @Test func aShutdownCancelsTheRequestsInFlightAndReturnsOnceTheirCallsHaveEnded() async {
    let backend = Backend()
    let service = ProfileService(fetch: backend.fetch)
    let lookup = Task { await service.profile("ana") }
    let joined = Task { await service.profile("ana") }
    let refresh = Task { await service.refresh("bo") }
    await backend.gate.entered(count: 2)  // one lookup for both callers, one refresh
    let report = await service.shutdown()
    #expect(report.isComplete)
    #expect(Set(backend.ended.withLock { $0 }) == ["ana ended, cancelled: true", "bo ended, cancelled: true"])
    #expect(await lookup.value == nil)
    #expect(await joined.value == nil)
    #expect(await refresh.value == nil)
    // Refused: no backend call.
    #expect(await service.profile("cy") == nil)
    #expect(await service.refresh("cy") == nil)
    #expect(backend.ended.withLock { $0 }.count == 2)
  }

  /// A `sink` on the feed subscribes at once (it starts the share's upstream before it returns);
  /// the shutdown ends it, and returns once its closure got the end.
  @Test func theFeedsSubscribersGetTheChangesThenTheEndBeforeTheShutdownReturns() async {
    let backend = Backend()
    let service = ProfileService(fetch: backend.fetch)
    let received = LockedState<[String]>([])
    let delivered = CompletionSignal()
    let subscription = service.feed.sink(receiveCompletion: { _ in received.withLock { $0.append("end") } }) {
      profile in
      received.withLock { $0.append(profile) }
      delivered.fire()
    }
    let refresh = Task { await service.refresh("ana") }
    await backend.gate.entered()
    backend.gate.release()
    #expect(await refresh.value == "profile of ana")
    await delivered.wait()
    #expect(await service.shutdown().isComplete)
    #expect(received.withLock { $0 } == ["profile of ana", "end"])
    subscription.cancel()
  }
}
