import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// A `Flow` body's elements are released after the hand-off's lock: the consumer's used-up batch,
/// and the buffer a cancelled consumer leaves. The element's `deinit` here cancels a task of the
/// body that waits to emit, whose cancellation handler takes that lock.
///
/// The scenarios run on a `TestClock`, so that `runCurrent()` parks every task (the waiting
/// emitters among them) before the release: without it, nothing says the emitter waits yet.
@Suite("Flow releases elements outside its lock", .hangGuard)
struct EmitterReentrantReleaseTests {
  /// The body hands its emitter out, emits one element and waits, so that the test starts the
  /// emitting task that waits for room once the consumer holds what it must. Each element with a
  /// callback is emitted with room left, so that no waiting `emit` holds it as its argument.
  enum Scenario: String, CaseIterable, Codable, Sendable {
    case consumerRefill, consumerCancelledWithABufferedElement

    func run() async {
      let clock = TestClock()
      let emitterBox = LockedState<FlowEmitter<ReleaseHook>?>(nil)
      let waitingEmitter = LockedState<Task<Void, Never>?>(nil)
      let cancelWaitingEmitter: @Sendable () -> Void = { waitingEmitter.withLock { $0 }?.cancel() }
      let release = Signal()
      func flow(bufferSize: Int, first: @escaping @Sendable () -> ReleaseHook) -> Flow<ReleaseHook, Never> {
        Flow(bufferSize: bufferSize) { emitter in
          emitterBox.withLock { $0 = emitter }
          await emitter.emit(first())
          for await _ in PassthroughFlow<Int, Never>() {}  // until cancelled
        }
      }
      func emit(_ probe: @escaping @Sendable () -> ReleaseHook) async {
        let emitter = emitterBox.withLock { $0 }!
        _ = clock.task { await emitter.emit(probe()) }
        await clock.runCurrent()
      }
      func startWaitingEmitter() async {
        let emitter = emitterBox.withLock { $0 }!
        waitingEmitter.withLock { $0 = clock.task { await emitter.emit(ReleaseHook()) } }
        await clock.runCurrent()  // it waits for room
      }
      switch self {
      case .consumerRefill:
        // The first element stays in the consumer's batch until the next refill releases it.
        let flow = flow(bufferSize: 1) { ReleaseHook(cancelWaitingEmitter) }
        let consumer = clock.task {
          var iterator = flow.makeAsyncIterator()
          _ = await iterator.next()
          await release.wait()
          _ = await iterator.next()
        }
        await clock.runCurrent()
        await startWaitingEmitter()
        release.fire()
        await bounded(consumer, "consumer")

      case .consumerCancelledWithABufferedElement:
        // The buffer the consumer leaves holds an element that cancels the waiting emitter.
        let flow = flow(bufferSize: 2) { ReleaseHook() }
        let consumer = clock.task {
          var iterator: Flow<ReleaseHook, Never>.Iterator? = flow.makeAsyncIterator()
          _ = await iterator?.next()
          await release.wait()
          iterator = nil
        }
        await clock.runCurrent()
        await emit { ReleaseHook(cancelWaitingEmitter) }  // room left: it does not wait
        await startWaitingEmitter()
        release.fire()
        await bounded(consumer, "consumer")
      }
      await clock.runCurrent()
    }
  }

  @Test(arguments: Scenario.allCases)
  func anElementReleasedByTheFlowMayCallBackIntoIt(_ scenario: Scenario) async {
    await #expect(processExitsWith: .success) { [scenario] in
      Reentrancy.armAlarm()
      await scenario.run()
    }
  }
}
