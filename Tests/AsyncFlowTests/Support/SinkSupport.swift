import AsyncFlowTesting
import Synchronization

@testable import AsyncFlow

/// A task executor that counts the jobs enqueued on it and the jobs it has run: with it as
/// `FlowScheduling`'s executor, every task the library starts shows up here, so a test can see
/// that an idle sink starts none. Each job runs on a task of the global executor.
final class CountingExecutor: TaskExecutor, Sendable {
  private struct State {
    var enqueued = 0
    var finished = 0
    var watchers = CountWatchers()
  }

  private let state = LockedState(State())

  func enqueue(_ job: consuming ExecutorJob) {
    let job = UnownedJob(job)
    state.withLock { $0.enqueued += 1 }
    Task.detached {
      job.runSynchronously(on: self.asUnownedTaskExecutor())
      let waking = self.state.withLock { state in
        state.finished += 1
        return state.watchers.reached(state.finished)
      }
      for waiter in waking { waiter.resume() }
    }
  }

  var enqueued: Int { state.withLock { $0.enqueued } }

  /// Suspends until `count` jobs have run here.
  func finished(count: Int) async {
    await state.waitUntil(count: count, of: { $0.finished }, watchers: \.watchers)
  }

  /// Runs `body` with this executor as the one AsyncFlow starts its tasks on.
  func scheduling<T>(_ body: () throws -> T) rethrows -> T {
    try FlowScheduling.$executor.withValue(self, operation: body)
  }
}

/// What a sink received, in order: values, then its completion.
final class SinkLog: Sendable {
  enum Event: Equatable, Sendable {
    case value(Int)
    case finished
    case failed(Int)
  }

  private let state = LockedState<(events: [Event], watchers: CountWatchers)>(([], CountWatchers()))

  func append(_ event: Event) {
    let waking = state.withLock { state in
      state.events.append(event)
      return state.watchers.reached(state.events.count)
    }
    for waiter in waking { waiter.resume() }
  }

  func completion(_ completion: FlowCompletion<TestError>) {
    switch completion {
    case .finished: append(.finished)
    case .failure(let error): append(.failed(error.id))
    }
  }

  var events: [Event] { state.withLock { $0.events } }

  var values: [Int] {
    events.compactMap { if case .value(let value) = $0 { value } else { nil } }
  }

  /// Suspends until `count` events were logged.
  func logged(count: Int) async {
    await state.waitUntil(count: count, of: { $0.events.count }, watchers: \.watchers)
  }
}

final class Counter: Sendable {
  private let count = Atomic(0)

  func add() { count.wrappingAdd(1, ordering: .relaxed) }

  var value: Int { count.load(ordering: .relaxed) }
}

/// What a `@MainActor` sink received, and its subscription, for a closure that cancels it.
@MainActor final class SinkBox {
  var subscription: FlowSubscription?
  var received: [Int] = []
}

/// A global actor other than the main actor, for a sink's closure isolated to neither the main
/// actor nor nothing.
@globalActor actor SinkTestActor {
  static let shared = SinkTestActor()
}

/// What a `@SinkTestActor` sink received.
@SinkTestActor final class SinkTestActorBox {
  var received: [Int] = []
}

/// Subscribes the sink that `subscribe` makes (on the caller's isolation; its completion fires the
/// signal it is given), sends 1...500 from a detached task, finishes the subject, and returns once
/// the sink has completed (or, with an issue, once the test is cancelled): an isolated sink's
/// values all arrive, in order, though sent from elsewhere. The subscription is kept until then.
func sendOneToFiveHundred(
  isolation: isolated (any Actor)? = #isolation,
  toTheSink subscribe: (PassthroughFlow<Int, Never>, Signal) -> FlowSubscription
) async {
  let subject = PassthroughFlow<Int, Never>()
  let completed = Signal()
  let subscription = subscribe(subject, completed)
  let sender = Task.detached {
    for value in 1...500 { subject.send(value) }
    subject.finish()
  }
  await bounded(sender, "the sender")
  await bounded("the sink completed") { await completed.wait() }
  withExtendedLifetime(subscription) {}
}
