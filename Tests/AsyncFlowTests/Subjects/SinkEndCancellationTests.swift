import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// A subject's (or a share's) `sink` cancelled while its completion closure runs: the closure sees
/// the cancellation, as a `receiveValue` call in progress does, and as a generic `sink`'s task
/// does. The subscriber is out of the source's table by then (it took the end), so the source
/// keeps its drain's task until the end is delivered.
@Suite("A sink cancelled while its completion runs", .hangGuard)
struct SinkEndCancellationTests {
  enum Source: String, CaseIterable, Sendable { case passthrough, share }

  @Test(arguments: Source.allCases, [true, false])
  func theCompletionInProgressSeesTheCancellation(_ source: Source, onClock: Bool) async {
    let clock = TestClock()
    let subject = PassthroughFlow<Int, Never>()
    let shared = subject.shareFlow()
    let delivering = Gate()
    let log = EventLog<String>()
    let done = Signal()
    let subscribe: @Sendable () -> FlowSubscription = {
      let completion: @Sendable (FlowCompletion<Never>) async -> Void = { _ in
        await delivering.wait()  // leaves when its task is cancelled
        log.append("completion cancelled: \(Task.isCancelled)")
        done.fire()
      }
      let value: @Sendable (Int) async -> Void = { log.append("got \($0)") }
      switch source {
      case .passthrough: return subject.sink(receiveCompletion: completion, receiveValue: value)
      case .share: return shared.sink(receiveCompletion: completion, receiveValue: value)
      }
    }
    let subscription = onClock ? await clock.task(subscribe).value : subscribe()
    subject.send(1)
    subject.finish()
    await delivering.entered()
    subscription.cancel()
    await bounded("the completion") { await done.wait() }
    #expect(log.all == ["got 1", "completion cancelled: true"])
    #expect(subject.subscriberCount == 0)
  }
}
