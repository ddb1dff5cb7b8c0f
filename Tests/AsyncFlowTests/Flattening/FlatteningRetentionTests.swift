import AsyncFlow
import AsyncFlowTesting
import Testing

/// Every flattening operator, as these tests drive it: inners are `Flow<ReleaseHook, Never>`.
enum FlatteningOperator: String, CaseIterable, Sendable, CustomStringConvertible {
  case mergeFlow, mergeFlowOneAtATime, concatFlow, exhaustFlow, switchToLatestFlow, switchToLatestFlowByKey

  var description: String { rawValue }

  /// Iterates `outer` flattened by this operator until `next()` returns `nil`, letting go of each
  /// element at once.
  func iterate<Outer: AsyncSequence & Sendable>(
    _ outer: Outer, _ transform: @escaping @Sendable (Outer.Element) -> Flow<ReleaseHook, Never>
  ) async where Outer.Element: Sendable, Outer.Failure == Never {
    switch self {
    case .mergeFlow: await drain(outer.mergeFlow(transform))
    case .mergeFlowOneAtATime: await drain(outer.mergeFlow(maxConcurrent: 1, transform))
    case .concatFlow: await drain(outer.concatFlow(transform))
    case .exhaustFlow: await drain(outer.exhaustFlow(transform))
    case .switchToLatestFlow: await drain(outer.switchToLatestFlow(transform))
    case .switchToLatestFlowByKey: await drain(outer.switchToLatestFlow(by: { _ in 0 }, transform))
    }
  }

  private func drain(_ sequence: some AsyncSequence<ReleaseHook, Never>) async {
    var iterator = sequence.makeAsyncIterator()
    while await iterator.next(isolation: nil) != nil {}
  }
}

/// A flattening operator lets go of a user value as soon as it is done with it, not when the next
/// value arrives or the inner ends: a value whose `deinit` does the clean-up the consumer waits
/// for (here, cancelling the consumer) must run while the inners are quiet. Before the fixes the
/// consumer's iterator kept the batch it had delivered while it waited for the next, and an
/// inner's task kept its outer element for as long as the inner ran: with quiet inners neither
/// `deinit` ran, and the consumer, cancelled by nobody, never returned (the `cancelFromARelease`
/// rows of `mergeFlow`, `mergeFlow(maxConcurrent: 1)` and `concatFlow` in the release table).
///
/// Each run is on a `TestClock`: once its schedule is idle the consumer must have returned, so a
/// consumer left waiting fails the test instead of hanging it.
@Suite("Flattening lets go of what it is done with", .hangGuard)
struct FlatteningRetentionTests {
  /// The consumer takes the inner's one element, lets go of it and asks for the next: the
  /// element's `deinit` (run inside that `next()`, by the consumer's own task) cancels the consumer,
  /// which then returns `nil`.
  @Test(arguments: FlatteningOperator.allCases)
  func aDeliveredElementIsReleasedBeforeTheConsumerWaitsForTheNext(_ operator: FlatteningOperator) async {
    let clock = TestClock()
    let start = Gate()
    let never = Gate()
    let consumerTask = TaskHandleBox()
    let released = LockedState(false)
    let returned = LockedState(false)
    let outer = Flow<Int, Never> { emitter in
      await emitter.emit(0)
      await never.wait()
    }
    let consumer = clock.task {
      await start.wait()
      await `operator`.iterate(outer) { _ in
        Flow<ReleaseHook, Never> { emitter in
          await emitter.emit(
            ReleaseHook {
              released.withLock { $0 = true }
              consumerTask.cancel()
            })
          await never.wait()
        }
      }
      returned.withLock { $0 = true }
    }
    consumerTask.set(consumer)
    await start.entered()
    start.release()
    await clock.runCurrent()

    #expect(released.withLock { $0 }, "\(`operator`): the delivered element is still held while the consumer waits")
    #expect(returned.withLock { $0 }, "\(`operator`): the consumer, cancelled by the element's release, never returned")
    consumer.cancel()
    _ = await clock.value(of: consumer)
  }

  /// The inner is made and runs (quietly): its outer element is no longer needed, and its `deinit`
  /// cancels the consumer, waiting in `next()`, which then returns `nil`. The outer's iterator
  /// keeps nothing it returned (a `Flow`'s keeps its batch), so only the operator could hold it.
  @Test(arguments: FlatteningOperator.allCases)
  func anOuterElementIsReleasedOnceItsInnerIsMade(_ operator: FlatteningOperator) async {
    let clock = TestClock()
    let start = Gate()
    let never = Gate()
    let consumerTask = TaskHandleBox()
    let released = LockedState(false)
    let returned = LockedState(false)
    let outer = FreshElements { index in
      guard index == 0 else {
        await never.wait()
        return nil
      }
      return ReleaseHook {
        released.withLock { $0 = true }
        consumerTask.cancel()
      }
    }
    let consumer = clock.task {
      await start.wait()
      await `operator`.iterate(outer) { _ in Flow<ReleaseHook, Never> { _ in await never.wait() } }
      returned.withLock { $0 = true }
    }
    consumerTask.set(consumer)
    await start.entered()
    start.release()
    await clock.runCurrent()

    #expect(released.withLock { $0 }, "\(`operator`): the outer element is still held while its inner runs")
    #expect(returned.withLock { $0 }, "\(`operator`): the consumer, cancelled by the element's release, never returned")
    consumer.cancel()
    _ = await clock.value(of: consumer)
  }
}
