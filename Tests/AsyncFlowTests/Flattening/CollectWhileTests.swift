@testable import AsyncFlow
import AsyncFlowTesting
import Testing

/// `collectWhile` and `firstFlow(where:)` return only once every task the iteration started has
/// ended. Each inner logs when its body begins and when it ends; the end comes a few yields after
/// the cancellation, so that a stop that only cancels (a `break` out of `for await`) returns before
/// it. The log is read in the consumer's task the moment the terminal returns.
@Suite("collectWhile and firstFlow wait for the iteration's work", .hangGuard)
struct CollectWhileTests {
  enum Operator: String, CaseIterable, Sendable {
    case mergeFlow, switchToLatestFlow
  }

  /// An inner that delivers its id, then stays until cancelled, and logs its end only after a
  /// few more suspensions.
  static func inner(_ id: Int, _ log: EventLog<String>) -> Flow<Int, Never> {
    Flow { emitter in
      log.append("began \(id)")
      await emitter.emit(id)
      await Gate().wait()  // parked until cancelled
      for _ in 0..<20 { await Task.yield() }
      log.append("ended \(id)")
    }
  }

  static func pipeline(_ op: Operator, _ log: EventLog<String>) -> any AsyncSequence<Int, Never> & Sendable {
    let ids = Flow.sequence([1, 2, 3])
    switch op {
    case .mergeFlow: return ids.mergeFlow { inner($0, log) }
    case .switchToLatestFlow: return ids.switchToLatestFlow { inner($0, log) }
    }
  }

  /// Every inner that began has ended, in the log as it was when the terminal returned.
  static func everyBegunInnerEnded(_ snapshot: [String]) -> Bool {
    let begun = snapshot.filter { $0.hasPrefix("began") }.map { $0.dropFirst(6) }
    let ended = snapshot.filter { $0.hasPrefix("ended") }.map { $0.dropFirst(6) }
    return !begun.isEmpty && Set(begun) == Set(ended)
  }

  @Test(arguments: Operator.allCases)
  func collectWhileReturnsAfterEveryInnerEndedOnTheTestClock(_ op: Operator) async {
    let clock = TestClock()
    let log = EventLog<String>()
    let run = clock.task { () -> (received: [Int], snapshot: [String]) in
      var received: [Int] = []
      await Self.pipeline(op, log).collectWhile { element in
        received.append(element)
        return false
      }
      return (received, log.all)
    }
    await clock.run()
    guard let (received, snapshot) = await bounded(run, "run") else { return }
    #expect(received.count == 1)
    #expect(Self.everyBegunInnerEnded(snapshot), "\(snapshot)")
    #expect(log.all == snapshot)  // nothing ran after it returned
  }

  @Test(arguments: Operator.allCases)
  func firstFlowReturnsAfterEveryInnerEndedOnTheTestClock(_ op: Operator) async {
    let clock = TestClock()
    let log = EventLog<String>()
    let run = clock.task { () -> (first: Int?, snapshot: [String]) in
      let first = await Self.pipeline(op, log).firstFlow { _ in true }
      return (first, log.all)
    }
    await clock.run()
    guard let (first, snapshot) = await bounded(run, "run") else { return }
    #expect(first != nil)
    #expect(Self.everyBegunInnerEnded(snapshot), "\(snapshot)")
    #expect(log.all == snapshot)
  }

  /// On real threads, many times: the inners run on the global executor, in parallel with the
  /// consumer.
  @Test(arguments: Operator.allCases)
  func firstFlowReturnsAfterEveryInnerEndedOnRealThreads(_ op: Operator) async {
    for _ in 0..<200 {
      let log = EventLog<String>()
      let run = Task { () -> [String] in
        _ = await Self.pipeline(op, log).firstFlow { _ in true }
        return log.all
      }
      guard let snapshot = await bounded(run, "run") else { return }
      #expect(Self.everyBegunInnerEnded(snapshot), "\(snapshot)")
      for _ in 0..<50 { await Task.yield() }
      #expect(log.all == snapshot)  // nothing ran after it returned
      if !Self.everyBegunInnerEnded(snapshot) { return }
    }
  }

  /// A cancelled calling task ends the iteration the same way, and returns without throwing.
  @Test func aCancelledCallerReturnsAfterEveryInnerEnded() async {
    let log = EventLog<String>()
    let snapshot = await inCancelledTask { () -> [String] in
      await Self.pipeline(.mergeFlow, log).collectWhile { _ in true }
      return log.all
    }
    #expect(snapshot.map { Self.everyBegunInnerEnded($0) || $0.isEmpty } == true)
  }

  /// A failure is thrown with its type, after the work has ended; the body sees every element
  /// before it.
  @Test func aFailureIsThrownWithItsType() async {
    let clock = TestClock()
    let run = clock.task { () -> ([Int], TestError?) in
      var seen: [Int] = []
      do throws(TestError) {
        try await Flow<Int, TestError> { emitter throws(TestError) in
          await emitter.emit(1)
          throw TestError(id: 3)
        }.collectWhile { seen.append($0); return true }
        return (seen, nil)
      } catch {
        return (seen, error)
      }
    }
    await clock.run()
    guard let (seen, failure) = await bounded(run, "run") else { return }
    #expect(seen == [1])
    #expect(failure == TestError(id: 3))
  }

  /// The body runs in the caller's isolation: a main-actor caller's body touches main-actor state.
  @Test @MainActor func theBodyRunsInTheCallersIsolation() async {
    var seen: [Int] = []
    await Flow.sequence([1, 2, 3, 4]).collectWhile { element in
      MainActor.assertIsolated()
      seen.append(element)
      return element < 2
    }
    #expect(seen == [1, 2])
  }
}
