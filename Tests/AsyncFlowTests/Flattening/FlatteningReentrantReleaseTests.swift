import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// Holds an iterator whose release (the last reference) ends its iteration, from a `deinit`. Only
/// touched while nothing else uses the iterator: never while the consumer is inside `next()`.
final class IteratorBox<Iterator>: @unchecked Sendable {
  var iterator: Iterator?
}

/// An outer sequence whose iterator keeps nothing it returned (a `Flow`'s iterator holds the
/// batch it delivers from, which would outlive the operator's hold of an element): element `i`
/// is made by `make(i)` when asked for; `nil` ends it.
struct FreshElements: AsyncSequence, Sendable {
  let make: @Sendable (Int) async -> ReleaseHook?

  struct AsyncIterator: AsyncIteratorProtocol {
    let make: @Sendable (Int) async -> ReleaseHook?
    var index = 0

    mutating func next() async -> ReleaseHook? {
      defer { index += 1 }
      return await make(index)
    }

    mutating func next(isolation actor: isolated (any Actor)?) async -> ReleaseHook? {
      defer { index += 1 }
      return await make(index)
    }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(make: make) }
}

/// No user value is released while a flattening operator holds its lock (issue 24, item 1): a
/// value whose `deinit` calls back into the same operator (cancels its consumer, releases its
/// iterator) deadlocked on the operator's lock. Before the fix each of these never returned; a
/// deadlocked thread cannot be bounded in-process (it is lost to the pool for good), so each runs
/// in a child process that `alarm` ends after 20 s: a deadlock fails the test instead of hanging
/// the suite.
@Suite("Flattening re-entrant release", .hangGuard)
struct FlatteningReentrantReleaseTests {
  /// The elements of a superseded inner are discarded when it is dropped: the last one's `deinit`
  /// releases the iterator, which cancels the operator.
  @Test func elementOfASupersededInnerReleasesTheIterator() async {
    await #expect(processExitsWith: .success) {
      alarm(20)
      let supersede = Gate()
      let never = Gate()
      let offered = Signal()
      let released = Signal()
      typealias Switched = AsyncSwitchToLatestFlowSequence<Flow<Int, Never>, Flow<ReleaseHook, Never>, Never>
      let box = IteratorBox<Switched.Iterator>()
      let outer = Flow<Int, Never>(bufferSize: 0) { emitter in
        await emitter.emit(0)
        await supersede.wait()
        await emitter.emit(1)
        await never.wait()
      }
      let switched = outer.switchToLatestFlow { value in
        Flow<ReleaseHook, Never>(bufferSize: 0) { emitter in
          guard value == 0 else { return await never.wait() }
          await emitter.emit(ReleaseHook())
          await emitter.emit(
            ReleaseHook {
              box.iterator = nil  // the last reference: the operator is cancelled
              released.fire()
            })
          offered.fire()  // `emit` returned: the inner's task asks again, so it handed the hook over
          await never.wait()
        }
      }
      box.iterator = switched.makeAsyncIterator()
      _ = await box.iterator!.next()
      await offered.wait()
      await supersede.entered()
      supersede.release()  // 1 supersedes 0: its pending hook is discarded
      await released.wait()
    }
  }

  /// `switchToLatestFlow` hands an inner whose task has not begun the newer outer element: the
  /// replaced one's `deinit` cancels the consumer, which is waiting in `next()`.
  @Test func replacedOuterElementCancelsTheConsumer() async {
    await #expect(processExitsWith: .success) {
      alarm(20)
      let clock = TestClock()
      let consumerTask = TaskHandleBox()
      let ran = LockedState(false)
      let start = Gate()
      let never = Gate()
      // The second is asked for right after the first, without a suspension: it replaces the
      // first before the inner's task (queued behind the outer's on the clock's serial executor)
      // begins.
      let outer = FreshElements { index in
        switch index {
        case 0:
          await start.wait()
          return ReleaseHook {
            ran.withLock { $0 = true }
            consumerTask.cancel()
          }
        case 1: return ReleaseHook()
        default:
          await never.wait()
          return nil
        }
      }
      let switched = outer.switchToLatestFlow { _ in Flow<Int, Never> { _ in await never.wait() } }
      let consumer = clock.task {
        var iterator = switched.makeAsyncIterator()
        _ = await iterator.next(isolation: nil)
      }
      consumerTask.set(consumer)
      await start.entered()
      start.release()
      await bounded(consumer, "consumer")
      precondition(ran.withLock { $0 }, "the replaced element was not released while the consumer waited")
    }
  }

  /// An outer element held for a slot of `mergeFlow` is discarded when an inner's failure ends
  /// the operator: its `deinit` cancels the consumer, which is waiting in `next()`.
  @Test func heldOuterElementCancelsTheConsumerWhenTheOperatorEnds() async {
    await #expect(processExitsWith: .success) {
      alarm(20)
      let clock = TestClock()
      let consumerTask = TaskHandleBox()
      let ran = LockedState(false)
      let fail = Gate()
      let never = Gate()
      let outer = FreshElements { index in
        switch index {
        case 0: return ReleaseHook()
        case 1:
          return ReleaseHook {  // held: the one slot is busy
            ran.withLock { $0 = true }
            consumerTask.cancel()
          }
        default:
          await never.wait()
          return nil
        }
      }
      let merged = outer.mergeFlow(maxConcurrent: 1) { _ in
        Flow<Int, TestError> { _ throws(TestError) in
          await fail.wait()
          throw TestError()
        }
      }
      let consumer = clock.task {
        var iterator = merged.makeAsyncIterator()
        _ = try? await iterator.next(isolation: nil)
      }
      consumerTask.set(consumer)
      await fail.entered()
      await clock.runCurrent()  // the second element is held, the consumer waits
      fail.release()
      await bounded(consumer, "consumer")
      precondition(ran.withLock { $0 }, "the held element was not released while the consumer waited")
    }
  }
}
