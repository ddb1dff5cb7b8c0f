@testable import AsyncFlow
import AsyncFlowTesting

struct TestError: Error, Hashable {
  var id = 0
}

/// A one-shot event: `wait()` returns once `fire()` has been called, before or after.
typealias Signal = CompletionSignal

/// A waiting `emit` as a plain number, for the tables of ``EmitterLogic``: resuming it does nothing.
struct NumberedWaiter: LogicWaiter, CustomStringConvertible, CustomDebugStringConvertible {
  let number: Int

  init(_ number: Int) { self.number = number }

  func resume() {}

  var description: String { "\(number)" }
  var debugDescription: String { description }
}

/// A thread-safe log of events, for asserting the order in which concurrent code ran.
final class EventLog<Event: Sendable>: Sendable {
  private let events = LockedState<[Event]>([])

  func append(_ event: Event) { events.withLock { $0.append(event) } }

  var all: [Event] { events.withLock { $0 } }
}

/// Collects every element of `sequence`, and the failure it ended with.
func collect<S: AsyncSequence>(_ sequence: S) async -> (elements: [S.Element], failure: S.Failure?) {
  var elements: [S.Element] = []
  var iterator = sequence.makeAsyncIterator()
  do throws(S.Failure) {
    while let element = try await iterator.next(isolation: #isolation) { elements.append(element) }
    return (elements, nil)
  } catch {
    return (elements, error)
  }
}

/// Runs `body` in a task that is cancelled before `body` starts: its result, or `nil` (and an
/// issue) if the test is cancelled first.
@discardableResult
func inCancelledTask<T: Sendable>(
  _ body: @escaping @Sendable () async -> T, fileID: String = #fileID, filePath: String = #filePath,
  line: Int = #line, column: Int = #column
) async -> T? {
  let task = Task {
    withUnsafeCurrentTask { $0?.cancel() }
    return await body()
  }
  return await bounded(task, "the cancelled task", fileID: fileID, filePath: filePath, line: line, column: column)
}

/// `bounded(_:)` for the run that `TaskSlots.run` returns, if it started one (`nil`: nothing to
/// wait for, as `await run?.value` did).
@discardableResult
func bounded<Success: Sendable>(
  run task: Task<Success, Never>?, _ what: String = "the run", fileID: String = #fileID,
  filePath: String = #filePath, line: Int = #line, column: Int = #column
) async -> Success? {
  guard let task else { return nil }
  return await AsyncFlowTesting.bounded(task, what, fileID: fileID, filePath: filePath, line: line, column: column)
}

/// A value whose `deinit` runs a closure: the user value (an element, a token, a subscription's
/// clean-up) whose release calls back into the operator that lets it go, which must not hold a
/// lock then: the re-entrant release tests' probe.
final class ReleaseHook: Sendable {
  let onDeinit: @Sendable () -> Void
  init(_ onDeinit: @escaping @Sendable () -> Void = {}) { self.onDeinit = onDeinit }
  deinit { onDeinit() }
}

/// Holds a task to cancel from a `deinit`, once the task exists.
final class TaskHandleBox: Sendable {
  private let task = LockedState<Task<Void, Never>?>(nil)
  func set(_ task: Task<Void, Never>) { self.task.withLock { $0 = task } }
  func cancel() { task.withLock { $0 }?.cancel() }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): the test targets' one seeded generator, so that a
/// failing interleaving or jitter replays by its seed on every platform (the standard library's
/// generator promises neither a sequence nor seeding). AsyncFlowTesting's explorer has its own.
struct SplitMix64: RandomNumberGenerator, Sendable {
  var state: UInt64

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
