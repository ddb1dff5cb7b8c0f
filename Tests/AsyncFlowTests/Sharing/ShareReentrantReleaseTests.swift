import AsyncFlow
import Testing

@testable import AsyncFlow

/// `shareFlow` releases what leaves its state (an evicted replay entry, the replay a stopped share
/// empties, a leaving subscriber's buffer) after its lock: the element's `deinit` may read the
/// share's `subscriberCount` or cancel a subscription.
@Suite("shareFlow releases elements outside its lock", .hangGuard)
struct ShareReentrantReleaseTests {
  /// The upstreams are `Flow(bufferSize: 0)` bodies: each `emit` returns once the share has taken
  /// the element and asked for the next, so when the body goes on, the share holds the element and
  /// nothing else does.
  enum Scenario: String, CaseIterable, Codable, Sendable {
    case replayEviction, lastSubscriberLeavingEmptiesTheReplay, subscriberLeavingWithBufferedElements
    case upstreamEnd

    func run() async {
      let shareBox = LockedState<AsyncShareFlowSequence<ReleaseHook, Never>?>(nil)
      let released = Signal()
      // Held by this box only, until the body emits it.
      let probe = LockedState<ReleaseHook?>(
        ReleaseHook {
          _ = shareBox.withLock { $0 }?.subscriberCount
          released.fire()
        })
      let emitted = Signal()
      let tookFirst = Signal()
      let upstream = Flow<ReleaseHook, Never>(bufferSize: 0) { emitter in
        await emitter.emit(ReleaseHook())
        await tookFirst.wait()
        await emitter.emit(probe.withLock { $0.take()! })
        await emitter.emit(ReleaseHook())
        emitted.fire()
        for await _ in PassthroughFlow<Int, Never>() {}  // until cancelled
      }
      if self != .subscriberLeavingWithBufferedElements { tookFirst.fire() }
      switch self {
      case .replayEviction:
        // `bufferingNewest(0)`: the sink keeps nothing, so the replay holds the only reference.
        let share = upstream.shareFlow(replay: 1, bufferingPolicy: .bufferingNewest(0))
        shareBox.withLock { $0 = share }
        let subscription = share.sink { _ in }
        await released.wait()
        withExtendedLifetime(subscription) {}

      case .lastSubscriberLeavingEmptiesTheReplay:
        let share = upstream.shareFlow(replay: 3, bufferingPolicy: .bufferingNewest(0))
        shareBox.withLock { $0 = share }
        let subscription = share.sink { _ in }
        await emitted.wait()
        subscription.cancel()  // the last subscriber: the replay is emptied
        await released.wait()
        #expect(share.subscriberCount == 0)

      case .subscriberLeavingWithBufferedElements:
        let share = upstream.shareFlow()
        shareBox.withLock { $0 = share }
        var iterator: AsyncShareFlowSequence<ReleaseHook, Never>.Iterator? = share.makeAsyncIterator()
        _ = await iterator?.next()
        tookFirst.fire()  // the probe comes in a later batch
        await emitted.wait()  // the iterator's buffer holds the probe
        iterator = nil
        await released.wait()
        #expect(share.subscriberCount == 0)

      case .upstreamEnd:
        // The end itself releases nothing; the subscribers that take it then must not either.
        let share = Flow<ReleaseHook, Never> { emitter in
          await emitter.emit(probe.withLock { $0.take()! })
        }.shareFlow(replay: 1)
        shareBox.withLock { $0 = share }
        let ended = Signal()
        let subscription = share.sink { _ in ended.fire() } receiveValue: { _ in }
        await ended.wait()
        withExtendedLifetime(subscription) {}
        #expect(share.subscriberCount == 0)
      }
    }
  }

  @Test(arguments: Scenario.allCases)
  func anElementReleasedByTheShareMayCallBackIntoIt(_ scenario: Scenario) async {
    await #expect(processExitsWith: .success) { [scenario] in
      Reentrancy.armAlarm()
      await scenario.run()
    }
  }
}
