import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// A shared feed with many subscribers joining and leaving on real threads, as a service's: each
/// subscriber parks and is woken from the upstream's task again and again. Meant to be run under
/// ThreadSanitizer too (`swift test --sanitize=thread --filter ShareStressTests`): every hand-off
/// between the upstream's task and a subscriber must be ordered where the sanitizer can see it.
@Suite("shareFlow under many subscribers", .hangGuard)
struct ShareStressTests {
  /// 32 tasks subscribe and leave 40 times each, taking 1 to 8 elements a time, while 8 sinks
  /// come and go beside them: every subscription is served, and the upstream stops at the end.
  @Test func manySubscribersJoiningAndLeavingAreAllServed() async {
    let upstream = Flow<Int, Never>(bufferSize: 0) { emitter in
      var value = 0
      while !Task.isCancelled {
        value += 1
        await emitter.emit(value)
        // Now and then the upstream suspends, so that its subscribers park and are woken.
        if value % 4 == 0 { await Task.yield() }
      }
    }
    let shared = upstream.shareFlow(bufferingPolicy: .bufferingNewest(4))
    let sinkDeliveries = LockedState(0)
    let work = Task {
      await withTaskGroup(of: Int.self) { group in
        for subscriber in 0..<32 {
          group.addTask {
            var served = 0
            for round in 0..<40 where !Task.isCancelled {
              var iterator = shared.makeAsyncIterator()
              var previous = 0
              for _ in 0...((subscriber + round) % 8) {
                guard let value = await iterator.next() else { return -1 }
                precondition(value > previous, "subscriber \(subscriber) got \(value) after \(previous)")
                previous = value
              }
              served += 1
            }
            return served
          }
        }
        for _ in 0..<8 {
          group.addTask {
            for _ in 0..<20 {
              let delivered = Signal()
              let subscription = shared.sink { (_: Int) in
                sinkDeliveries.withLock { $0 += 1 }
                delivered.fire()
              }
              await delivered.wait()
              subscription.cancel()
            }
            return 0
          }
        }
        return await group.reduce(0, +)
      }
    }
    let served = await bounded(work, "the subscribers")
    #expect(served == 32 * 40)
    #expect(sinkDeliveries.withLock { $0 } >= 8 * 20)
    // The last subscriber's leaving stopped the upstream (a sink's cancellation leaves at once).
    #expect(await bounded("the subscribers' count") { await shared.subscribers(count: 0) } != nil)
  }
}
