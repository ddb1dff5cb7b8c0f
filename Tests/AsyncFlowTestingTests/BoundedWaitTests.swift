import AsyncFlow
import AsyncFlowTesting
import Testing

// Five minutes: under ThreadSanitizer on two cores its 10,000-round test takes most of one when idle.
@Suite("bounded(_:): a wait that the test's time limit can end", .hangGuard)
struct BoundedWaitTests {
  private struct Offline: Error, Equatable {}

  /// Work that ignores cancellation and never ends on its own (until `release()`): what
  /// `await task.value` hangs on for good.
  private final class Stuck: Sendable {
    private let parked = LockedState<UnsafeContinuation<Void, Never>?>(nil)
    let task: Task<Int, Never>

    init() {
      let parked = self.parked
      task = Task {
        await withUnsafeContinuation { continuation in parked.withLock { $0 = continuation } }
        return 7
      }
    }

    func release() async {
      while true {
        if let continuation = parked.withLock({ $0.take() }) { return continuation.resume() }
        await Task.yield()
      }
    }
  }

  @Test func returnsTheValueOfATaskThatEnds() async {
    let work = Task { 41 + 1 }
    #expect(await bounded(work, "the sum") == 42)
  }

  /// What the task did is ordered before what the test does once the wait returns, for
  /// ThreadSanitizer too. The task's value used to come through the continuation that its end
  /// resumed; a continuation resumed before its task suspends (the runtime's fast path) carries no
  /// order that ThreadSanitizer sees, so in a few runs in ten of
  /// `swift test --sanitize=thread --filter BoundedWaitTests` it reported the plain write below
  /// as racing with the read after the wait (or the resume racing with the test's next wait). A
  /// wait per round on purpose: each round is one more chance for the resume to beat the suspension.
  @Test func whatTheTaskDidIsOrderedBeforeTheWaitReturns() async {
    final class Box: @unchecked Sendable { var value = -1 }  // unsynchronised on purpose
    var seen = 0
    for round in 0..<10_000 where !Task.isCancelled {
      let box = Box()
      let gate = Gate()
      let writer = Task {
        await gate.wait()
        box.value = round
      }
      await gate.entered()
      gate.release()  // the writer ends on another thread while the wait below begins
      // Given up (the time limit, on a loaded machine): one issue, not one per round left.
      guard await bounded(writer, "the writer") != nil else { return }
      if box.value == round { seen += 1 }
    }
    #expect(seen == 10_000)
  }

  @Test func rethrowsTheErrorOfAThrowingTask() async {
    let work = Task<Int, any Error> { throw Offline() }
    await #expect(throws: Offline.self) { try await bounded(work) }
  }

  @Test func theClosureFormReturnsWhatTheWaitReturnsAndRethrows() async throws {
    let flow = Flow.sequence([1, 2, 3]).prefix(2)
    let received = await bounded("the loop over the flow") {
      var received: [Int] = []
      for await value in flow { received.append(value) }
      return received
    }
    #expect(received == [1, 2])
    await #expect(throws: Offline.self) {
      try await bounded("a failing wait") { () async throws(Offline) -> Int in throw Offline() }
    }
  }

  /// The proof that the bound works: the awaited task never ends and ignores cancellation, and the
  /// waiting test is cancelled while it waits, as `.timeLimit` cancels a test that overruns. The
  /// wait returns `nil` with an issue naming what it awaited, instead of hanging the run.
  @Test func aTaskThatNeverEndsFailsTheWaitOnceTheTestIsCancelled() async {
    let stuck = Stuck()
    let started = Gate()
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        await withKnownIssue {
          async let parked: Void = started.wait()  // tells the test the wait is about to start
          #expect(await bounded(stuck.task, "the stuck work") == nil)
          await parked
        } matching: { issue in
          issue.comments.contains {
            $0.rawValue.contains("the stuck work did not end before the waiting test was cancelled")
          }
        }
      }
      await started.entered()
      group.cancelAll()  // what the time limit does
    }
    #expect(!stuck.task.isCancelled)  // left running, as documented
    await stuck.release()
    #expect(await bounded(stuck.task, "the released work") == 7)
  }

  @Test func aTestAlreadyCancelledGivesUpAtOnce() async {
    let stuck = Stuck()
    await withTaskGroup(of: Void.self) { group in
      group.cancelAll()
      group.addTask {
        await withKnownIssue {
          #expect(await bounded(stuck.task, "the stuck work") == nil)
        }
      }
    }
    await stuck.release()
    #expect(await bounded(stuck.task) == 7)
  }

  /// Giving up cancels the closure's wait, so a barrier it was parked in lets it go.
  @Test func theClosureFormCancelsTheWaitWhenItGivesUp() async {
    let gate = Gate()
    await withTaskGroup(of: Void.self) { group in
      group.addTask {
        await withKnownIssue {
          #expect(await bounded("the gate's release") { await gate.wait() } == nil)
        } matching: { issue in
          issue.comments.contains { $0.rawValue.contains("the gate's release did not end") }
        }
      }
      await gate.entered()
      group.cancelAll()
    }
    #expect(gate.parkedCount == 0)
  }
}

