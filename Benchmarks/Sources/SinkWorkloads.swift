import AsyncFlow
import Foundation

// MARK: W2: a hot source into sinks

/// `W2.passthrough` with sinks in place of subscriber tasks: each sink's `@Sendable` closure counts
/// what it receives, and the sink reports its completion; the run ends when every sink completed.
func w2Sink(_ n: Int, subscribers: Int) async -> (Int, String?) {
  let subject = PassthroughFlow<Int, Never>()
  let counts = (0..<subscribers).map { _ in SinkCount() }
  let completed = Countdown(subscribers)
  let subscriptions = counts.map { count in
    subject.sink { _ in
      completed.tick()
    } receiveValue: { _ in
      count.add()
    }
  }
  let sender = Task.detached {
    for value in 0..<n { subject.send(value) }
    subject.finish()
  }
  await completed.wait()
  await sender.value
  withExtendedLifetime(subscriptions) {}
  return (n, "delivered \(counts.reduce(0) { $0 + $1.value })")
}

/// One sink's count: a plain counter, as the subscriber tasks of `W2.passthrough` count in a local
/// variable. Sound without a lock: a sink's deliveries run one after another (a drain takes each
/// batch under the subject's lock, after the previous drain's last take). Padded so that the
/// counters of sinks draining on different cores do not share a cache line.
final class SinkCount: @unchecked Sendable {
  private var padding: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)
  private(set) var value = 0
  private var trailing: (Int, Int, Int, Int, Int, Int, Int, Int) = (0, 0, 0, 0, 0, 0, 0, 0)

  func add() { value += 1 }
}

/// Resumes one waiter once `tick()` has been called `count` times.
final class Countdown: @unchecked Sendable {
  private let lock = NSLock()
  private var remaining: Int
  private var waiter: UnsafeContinuation<Void, Never>?

  init(_ count: Int) { remaining = count }

  func tick() {
    let waiter = lock.withLock { () -> UnsafeContinuation<Void, Never>? in
      remaining -= 1
      guard remaining == 0 else { return nil }
      defer { self.waiter = nil }
      return self.waiter
    }
    waiter?.resume()
  }

  func wait() async {
    await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
      let done = lock.withLock { () -> Bool in
        if remaining > 0 { waiter = continuation }
        return remaining <= 0
      }
      if done { continuation.resume() }
    }
  }
}

// MARK: W5: idle sinks

/// Bytes per idle `sink` on a `PassthroughFlow`, its `FlowSubscription` kept in an array as an
/// app keeps it: measured as `W5.passthrough`, resident memory before and after `count` sinks.
/// Each closure captures one object, as a closure capturing its model does.
func w5Sink(_ count: Int) async -> Double {
  let subject = PassthroughFlow<Int, Never>()
  let received = SinkCount()
  let before = residentBytes()
  var subscriptions: [FlowSubscription] = []
  subscriptions.reserveCapacity(count)
  for _ in 0..<count {
    subscriptions.append(subject.sink { _ in received.add() })
  }
  // A sink on a subject is registered when `sink` returns; a sink that iterates in a task of its
  // own (any other sequence) registers when that task starts.
  while subject.subscriberCount < count { await Task.yield() }
  let after = residentBytes()
  subscriptions.removeAll()
  return (after - before) / Double(count)
}

/// Bytes per idle sink that holds a task parked in its subscriber's context: `sink` on a
/// `PassthroughFlow` reached through a generic `some AsyncSequence`, which iterates in a task of its
/// own. What a subject's sink would cost if its deliveries ran in the subscriber's context rather
/// than the sender's (Guides/Guarantees.md, "Context"): the task it would have to keep.
func w5SinkInTask(_ count: Int) async -> Double {
  let subject = PassthroughFlow<Int, Never>()
  let received = SinkCount()
  func subscribe(_ values: some AsyncSequence<Int, Never> & Sendable) -> FlowSubscription {
    values.sink { _ in received.add() }
  }
  let before = residentBytes()
  var subscriptions: [FlowSubscription] = []
  subscriptions.reserveCapacity(count)
  for _ in 0..<count { subscriptions.append(subscribe(subject)) }
  // Each task subscribes when it starts, then parks in the subscriber's `next()`.
  while subject.subscriberCount < count { await Task.yield() }
  let after = await settledResidentBytes()
  subscriptions.removeAll()
  return (after - before) / Double(count)
}
