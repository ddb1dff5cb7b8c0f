import AsyncFlowTesting
import Testing

@testable import AsyncFlow

#if canImport(Glibc)
  import Glibc
#elseif canImport(Darwin)
  import Darwin
#endif

/// A callback API as the tests drive it: the setup hands its callbacks over, the test sends
/// through them from outside, and every setup and cleanup is logged.
private final class FakeSource: Sendable {
  private let current = LockedState<FlowCallbacks<Int, TestError>?>(nil)
  let log = EventLog<String>()

  var callbacks: FlowCallbacks<Int, TestError>? { current.withLock { $0 } }
  var setups: Int { log.all.filter { $0 == "setup" }.count }
  var cleanups: Int { log.all.filter { $0 == "cleanup" }.count }

  /// A flow whose setup logs "setup", sends `initial`, and returns a cleanup that logs "cleanup"
  /// once `cleanupLatch` (if any) fires.
  func flow(
    bufferingPolicy: FlowBufferingPolicy = .unbounded, initial: [Int] = [], cleanupLatch: CompletionSignal? = nil
  ) -> Flow<Int, TestError> {
    Flow<Int, TestError>.callbacks(bufferingPolicy: bufferingPolicy) { callbacks in
      self.log.append("setup")
      self.current.withLock { $0 = callbacks }
      for element in initial { callbacks.send(element) }
      return {
        await cleanupLatch?.wait()
        self.log.append("cleanup")
      }
    }
  }
}

/// Iterates `flow` to its end, logging "got n", then "end" or "failed n" in `log` the moment
/// `next()` returns it.
private func drain(_ flow: Flow<Int, TestError>, into log: EventLog<String>) async {
  var iterator = flow.makeAsyncIterator()
  do throws(TestError) {
    while let element = try await iterator.next() { log.append("got \(element)") }
    log.append("end")
  } catch {
    log.append("failed \(error.id)")
  }
}

@MainActor
private final class MainActorSocket {
  var onMessage: ((Int) -> Void)?
  var onClose: (() -> Void)?
  private(set) var log: [String] = []

  func connect() { log.append("connect on main: \(#isolation === MainActor.shared)") }
  func disconnect() { log.append("disconnect on main: \(#isolation === MainActor.shared)") }
}

@Suite("Flow.callbacks", .hangGuard)
struct CallbacksTests {
  // MARK: Elements and the end

  @Test func deliversWhatTheCallbacksSendThenFinishesAfterTheCleanup() async {
    let clock = TestClock()
    let source = FakeSource()
    let consumer = clock.task { await drain(source.flow(initial: [1, 2]), into: source.log) }
    await clock.runCurrent()
    source.callbacks?.send(3)
    source.callbacks?.finish()
    await bounded(consumer, "consumer")
    // The cleanup starts at `finish`, while the consumer may still take 3: only its place before
    // the end is fixed.
    let log = source.log.all
    #expect(log.filter { $0 != "cleanup" } == ["setup", "got 1", "got 2", "got 3", "end"])
    #expect(log.firstIndex(of: "cleanup")! < log.firstIndex(of: "end")!)
  }

  @Test func failsAfterTheBufferedElementsAndTheCleanup() async {
    let clock = TestClock()
    let source = FakeSource()
    let latch = CompletionSignal()
    let consumer = clock.task { await drain(source.flow(cleanupLatch: latch), into: source.log) }
    await clock.runCurrent()
    source.callbacks?.send(1)
    source.callbacks?.fail(TestError(id: 7))
    await clock.runCurrent()
    // The consumer has the element; the failure waits for the cleanup, which waits for the latch.
    #expect(source.log.all == ["setup", "got 1"])
    latch.fire()
    await bounded(consumer, "consumer")
    #expect(source.log.all == ["setup", "got 1", "cleanup", "failed 7"])
  }

  @Test func whatComesAfterTheEndIsIgnored() async {
    let clock = TestClock()
    let source = FakeSource()
    let consumer = clock.task { await drain(source.flow(), into: source.log) }
    await clock.runCurrent()
    let callbacks = source.callbacks
    #expect(callbacks?.send(1) == true)
    callbacks?.finish()
    #expect(callbacks?.send(2) == false)
    callbacks?.fail(TestError(id: 1))
    callbacks?.finish()
    await bounded(consumer, "consumer")
    let log = source.log.all
    #expect(log.filter { $0 != "cleanup" } == ["setup", "got 1", "end"])
    #expect(log.filter { $0 == "cleanup" }.count == 1 && log.last == "end", "\(log)")
  }

  @Test func isColdTheSetupRunsOncePerIterationAtItsFirstNext() async {
    let clock = TestClock()
    let source = FakeSource()
    let flow = source.flow(initial: [1])
    let result = clock.task { () -> [Int] in
      var iterator = flow.makeAsyncIterator()
      let before = source.setups
      let first = try? await iterator.next()
      source.callbacks?.finish()
      _ = try? await iterator.next()
      let again = await collect(flow.prefix(1)).elements  // releases its iterator after one element
      return [before, first ?? -1, again.first ?? -1, source.setups]
    }
    guard let value = await bounded(result, "result") else { return }
    #expect(value == [0, 1, 1, 2], "\(value)")
    await clock.runCurrent()
    #expect(source.cleanups == 2)
  }

  // MARK: Buffering

  @Test func theDefaultKeepsTheOldest64AndSendReportsTheDrop() async {
    let clock = TestClock()
    let accepted = LockedState<[Bool]>([])
    let flow = Flow<Int, Never>.callbacks { callbacks in
      let results = (0..<70).map { callbacks.send($0) }
      accepted.withLock { $0 = results }
      callbacks.finish()
      return {}
    }
    let received = await bounded(clock.task { await collect(flow).elements }, "the collected flow")
    #expect(received == Array(0..<64))
    #expect(accepted.withLock { $0 } == Array(repeating: true, count: 64) + Array(repeating: false, count: 6))
  }

  @Test func bufferingNewestKeepsTheLatestAndAcceptsEveryElement() async {
    let clock = TestClock()
    let accepted = LockedState<[Bool]>([])
    let flow = Flow<Int, Never>.callbacks(bufferingPolicy: .bufferingNewest(2)) { callbacks in
      let results = [1, 2, 3].map { callbacks.send($0) }
      accepted.withLock { $0 = results }
      callbacks.finish()
      return {}
    }
    #expect(await bounded(clock.task { await collect(flow).elements }, "the collected flow") == [2, 3])
    #expect(accepted.withLock { $0 } == [true, true, true])
  }

  @Test func theBoundCountsWhatTheConsumerHasNotReceived() async {
    let clock = TestClock()
    let source = FakeSource()
    let received = clock.task { () -> [Int] in
      var iterator = source.flow(bufferingPolicy: .bufferingOldest(2)).makeAsyncIterator()
      var received: [Int] = []
      // Suspends: the setup runs, and the test sends.
      if let first = try? await iterator.next() { received.append(first) }
      while let element = try? await iterator.next() { received.append(element) }
      return received
    }
    await clock.runCurrent()
    let callbacks = source.callbacks
    // The three sends are one job on the clock's serial executor, so the consumer they wake runs
    // only after the third: sent from the test's own thread, the woken consumer could take 1
    // between two sends (it runs on the executor at once), and 3 then fitted.
    let accepted = await clock.task {
      [
        callbacks?.send(1),  // wakes the waiting consumer, which has not received it yet
        callbacks?.send(2),
        callbacks?.send(3),  // so 1 counts: the buffer is full
      ]
    }.value
    #expect(accepted == [true, true, false])
    await clock.runCurrent()
    #expect(callbacks?.send(4) == true)  // the consumer took 1 and 2, and waits again
    callbacks?.finish()
    #expect(await bounded(received, "received") == [1, 2, 4])
  }

  @Test func sendFromManyTasksAtOnceLosesNothingUnbounded() async {
    let source = FakeSource()
    let flow = source.flow()
    let consumer = Task { await collect(flow).elements }
    // Bounded wait for the setup: a clock-free yield loop.
    var spins = 0
    while source.callbacks == nil, spins < 1_000_000 {
      await Task.yield()
      spins += 1
    }
    guard let callbacks = source.callbacks else {
      Issue.record("the setup never ran")
      consumer.cancel()
      return
    }
    await withTaskGroup(of: Void.self) { group in
      for sender in 0..<8 {
        group.addTask { for k in 0..<1_000 { callbacks.send(sender * 1_000 + k) } }
      }
    }
    callbacks.finish()
    guard let received = await bounded(consumer, "consumer") else { return }
    #expect(received.count == 8_000)
    for sender in 0..<8 {
      let mine = received.filter { $0 / 1_000 == sender }
      #expect(mine == mine.sorted(), "sender \(sender)'s order")
    }
  }

  // MARK: The cleanup, exactly once

  @Test func aCancelledConsumerGetsNilOnlyAfterTheCleanupRan() async {
    let clock = TestClock()
    let source = FakeSource()
    let latch = CompletionSignal()
    let consumer = clock.task { await drain(source.flow(initial: [1], cleanupLatch: latch), into: source.log) }
    await clock.runCurrent()
    source.callbacks?.send(2)
    await clock.runCurrent()
    consumer.cancel()
    await clock.runCurrent()
    #expect(source.log.all == ["setup", "got 1", "got 2"])  // waiting for the cleanup
    latch.fire()
    await bounded(consumer, "consumer")
    #expect(source.log.all == ["setup", "got 1", "got 2", "cleanup", "end"])
    #expect(source.callbacks?.send(3) == false)
  }

  @Test func aConsumerCancelledBetweenElementsGetsNothingBufferedAndNilAfterTheCleanup() async {
    let clock = TestClock()
    let source = FakeSource()
    let parked = Gate()
    let consumer = clock.task { () -> [String] in
      var iterator = source.flow(initial: [1, 2, 3]).makeAsyncIterator()
      var steps = ["\(String(describing: try? await iterator.next()))"]
      await parked.wait()  // leaves when cancelled
      steps.append("\(String(describing: try? await iterator.next()))")
      steps.append("cleanups \(source.cleanups)")
      return steps
    }
    await parked.entered()
    consumer.cancel()
    guard let steps = await bounded(consumer, "consumer") else { return }
    #expect(steps == ["Optional(1)", "nil", "cleanups 1"], "\(steps)")
  }

  @Test func aDroppedIteratorRunsTheCleanupInATaskOfItsOwnSoonAfter() async {
    let clock = TestClock()
    let source = FakeSource()
    let consumer = clock.task {
      var iterator = source.flow(initial: [1, 2]).makeAsyncIterator()
      _ = try? await iterator.next()
      // The iterator is released here, without cancellation.
    }
    await bounded(consumer, "consumer")
    await clock.runCurrent()
    #expect(source.log.all == ["setup", "cleanup"])
    #expect(source.callbacks?.send(3) == false)
  }

  @Test func aConsumerThatBreaksOutOfItsLoopRunsTheCleanup() async {
    let clock = TestClock()
    let source = FakeSource()
    let consumer = clock.task {
      do {
        for try await element in source.flow(initial: [1, 2, 3]) where element == 2 { break }
      } catch {
        Issue.record("unexpected failure \(error)")
      }
    }
    await bounded(consumer, "consumer")
    await clock.runCurrent()
    #expect(source.log.all == ["setup", "cleanup"])
  }

  @Test func theCleanupRunsOnceWhateverEndsTheIterationAndWhateverFollows() async {
    let clock = TestClock()
    let source = FakeSource()
    // Finished, then the consumer is cancelled before it drained, then the iterator is dropped.
    let consumer = clock.task {
      var iterator = source.flow(initial: [1, 2]).makeAsyncIterator()
      _ = try? await iterator.next()
      source.callbacks?.finish()
      source.callbacks?.fail(TestError())
      withUnsafeCurrentTask { $0?.cancel() }
      _ = try? await iterator.next()
      _ = try? await iterator.next()
    }
    await bounded(consumer, "consumer")
    await clock.runCurrent()
    #expect(source.cleanups == 1)
  }

  @Test func aConsumerCancelledBeforeItsFirstNextRunsNoSetup() async {
    let clock = TestClock()
    let source = FakeSource()
    let result = clock.task { () -> Int? in
      withUnsafeCurrentTask { $0?.cancel() }
      var iterator = source.flow(initial: [1]).makeAsyncIterator()
      return try? await iterator.next()
    }
    #expect(await bounded(result, "result") == .some(nil))
    await clock.runCurrent()
    #expect(source.log.all == [])
  }

  @Test func aConsumerCancelledDuringAnAsyncSetupCancelsItThenCleansUp() async {
    let clock = TestClock()
    let log = EventLog<String>()
    let connecting = Gate()
    let flow = Flow<Int, Never>.callbacks { callbacks in
      await connecting.wait()  // leaves when the setup's task is cancelled
      log.append("setup saw cancellation: \(Task.isCancelled)")
      return { log.append("cleanup") }
    }
    let consumer = clock.task { () -> Int? in
      var iterator = flow.makeAsyncIterator()
      let element = await iterator.next()
      log.append("next returned")
      return element
    }
    await connecting.entered()
    consumer.cancel()
    #expect(await bounded(consumer, "consumer") == .some(nil))
    #expect(log.all == ["setup saw cancellation: true", "cleanup", "next returned"])
  }

  @Test func anIteratorDroppedDuringTheSetupCleansUpOnceTheSetupReturns() async {
    let clock = TestClock()
    let log = EventLog<String>()
    let connecting = Gate()
    let flow = Flow<Int, Never>.callbacks { callbacks in
      await connecting.wait()
      log.append("setup returns")
      return { log.append("cleanup") }
    }
    // The consumer waits for its first element inside a child task it cancels: the iterator is
    // released when the child returns.
    let consumer = clock.task {
      await withTaskGroup(of: Void.self) { group in
        group.addTask {
          var iterator = flow.makeAsyncIterator()
          _ = await iterator.next()
        }
        await connecting.entered()
        group.cancelAll()
      }
    }
    await bounded(consumer, "consumer")
    await clock.runCurrent()
    #expect(log.all == ["setup returns", "cleanup"])
  }

  // MARK: Isolation

  @MainActor
  @Test func aMainActorSocketIsSetUpAndTornDownOnTheMainActor() async {
    let clock = TestClock()
    let socket = MainActorSocket()
    // Written on the main actor: the setup runs there without a mark; the cleanup is marked.
    let quotes = Flow<Int, TestError>.callbacks { callbacks in
      socket.onMessage = { callbacks.send($0) }
      socket.onClose = { callbacks.finish() }
      socket.connect()
      return { @MainActor in socket.disconnect() }
    }
    let received = clock.task { await collect(quotes).elements }
    await clock.runCurrent()
    socket.onMessage?(1)
    socket.onMessage?(2)
    socket.onClose?()
    #expect(await bounded(received, "received") == [1, 2])
    #expect(socket.log == ["connect on main: true", "disconnect on main: true"])
  }

  @Test func aSetupMarkedMainActorRunsThereFromAnyContext() async {
    let clock = TestClock()
    let log = EventLog<String>()
    let flow = Flow<Int, Never>.callbacks { @MainActor callbacks in
      log.append("setup on main: \(#isolation === MainActor.shared)")
      callbacks.finish()
      return { @MainActor in log.append("cleanup on main: \(#isolation === MainActor.shared)") }
    }
    await bounded(clock.task { await collect(flow) }, "the collected flow")
    #expect(log.all == ["setup on main: true", "cleanup on main: true"])
  }

  // MARK: Re-entrant release

  /// Elements the flow lets go of (one dropped by `bufferingNewest`, the buffer discarded by a
  /// cancellation) call `send` from their `deinit`: released under the lock, that would deadlock
  /// on it. An exit test, because a thread stuck on a lock cannot be freed in-process: `alarm`
  /// kills the child after 10 s, and the test fails instead of hanging.
  @Test func anElementWhoseDeinitSendsAgainDoesNotDeadlock() async {
    await #expect(processExitsWith: .success) {
      alarm(10)
      // Dropped by the policy while a `send` holds the lock. The setup and the consumer share the
      // main actor, so the consumer takes nothing before the setup returns: the first element is
      // always the one dropped, however the threads are scheduled.
      let newest = Flow<ReleaseHook, Never>.callbacks(bufferingPolicy: .bufferingNewest(1)) { @MainActor callbacks in
        callbacks.send(ReleaseHook { callbacks.send(ReleaseHook()) })
        callbacks.send(ReleaseHook())  // drops the first: its deinit sends again
        callbacks.finish()
        return {}
      }
      let count = await Task { @MainActor in
        var count = 0
        for await _ in newest { count += 1 }
        return count
      }.value
      precondition(count == 1, "got \(count)")
      // Discarded by a cancellation, and ignored after the end.
      let discarded = Flow<ReleaseHook, Never>.callbacks(bufferingPolicy: .unbounded) { callbacks in
        for _ in 0..<3 { callbacks.send(ReleaseHook { callbacks.send(ReleaseHook()) }) }
        return {}
      }
      let consumer = Task {
        var iterator = discarded.makeAsyncIterator()
        _ = await iterator.next()
        withUnsafeCurrentTask { $0?.cancel() }
        return await iterator.next() == nil
      }
      guard let endedAtOnce = await bounded(consumer, "consumer") else { return }
      precondition(endedAtOnce)
    }
  }
}
