import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// `grouped(by:)`: each key's elements in a group of their own, with bounded buffering, a group's
/// end, and cancellation. The consumers run on the test clock's executor (`clock.task`), so that
/// `runCurrent()` is a barrier.
@Suite("grouped(by:)", .hangGuard)
struct GroupedTests {
  /// Every group's elements, by key, through one pipeline per group (`mergeFlow`).
  @Test func routesEachKeysElementsToItsGroupInOrder() async {
    let source = Flow.sequence(["a1", "b1", "a2", "c1", "b2", "a3"])
    let routed = source.grouped(by: { $0.first! }).mergeFlow { group in group.map { "\(group.key):\($0)" } }
    let elements = await collect(routed).elements
    let byKey = Dictionary(grouping: elements, by: { $0.first! })
    #expect(byKey["a"] == ["a:a1", "a:a2", "a:a3"])
    #expect(byKey["b"] == ["b:b1", "b:b2"])
    #expect(byKey["c"] == ["c:c1"])
  }

  /// The outer consumer gets each key's group once, at its first element, in the order of the keys.
  @Test func handsOutOneGroupPerKeyAtItsFirstElement() async {
    let clock = TestClock()
    let source = Flow.sequence([1, 2, 3, 4, 5, 6])
    let keys = clock.task {
      var keys: [Int] = []
      var groups: [FlowGroup<Int, Int, Never>] = []  // kept, so that no group leaves
      for await group in source.grouped(by: { $0 % 3 }) {
        keys.append(group.key)
        groups.append(group)
      }
      return keys
    }
    #expect(await clock.value(of: keys) == [1, 2, 0])
  }

  /// A group ends after its buffered elements when the base finishes; with the base's failure if it
  /// failed, as the outer consumer does.
  @Test func aGroupEndsAfterItsBufferedElementsWithTheBasesFailure() async {
    let clock = TestClock()
    let source = Flow<Int, TestError> { emitter throws(TestError) in
      await emitter.emit(1)
      await emitter.emit(3)
      throw TestError(id: 9)
    }
    let result = clock.task { () -> ([Int], TestError?, TestError?) in
      var iterator = source.grouped(by: { $0 % 2 }).makeAsyncIterator()
      guard let group = try? await iterator.next() else { return ([], nil, nil) }
      var outerFailure: TestError?
      do throws(TestError) { _ = try await iterator.next() } catch { outerFailure = error }
      let (elements, groupFailure) = await collect(group)
      return (elements, groupFailure, outerFailure)
    }
    guard let (elements, groupFailure, outerFailure) = await clock.value(of: result) else { return }
    #expect(elements == [1, 3])
    #expect(groupFailure == TestError(id: 9))
    #expect(outerFailure == TestError(id: 9))
  }

  /// A group holds up to `bufferingLimit` elements its consumer has not taken; then the pull waits
  /// for that consumer (nothing is dropped), and each element it takes lets one more in.
  @Test func aFullGroupMakesThePullWaitForItsConsumer() async {
    let clock = TestClock()
    let pulled = LockedState(0)
    let source = CountedPulls(count: 10, pulled: pulled)
    let gate = Gate()
    let consumer = clock.task { () -> [Int] in
      var iterator = source.grouped(by: { _ in "one" }, bufferingLimit: 3).makeAsyncIterator()
      guard let group = await iterator.next() else { return [] }
      var elements = group.makeAsyncIterator()
      await gate.wait()
      var taken: [Int] = []
      while let element = await elements.next() { taken.append(element) }
      return taken
    }
    await gate.entered()
    await clock.runCurrent()
    #expect(pulled.withLock { $0 } == 3)  // the group's buffer is full: no 4th pull
    gate.release()
    #expect(await clock.value(of: consumer) == Array(1...10))
  }

  /// A group whose consumer is cancelled gets `nil`; its key's next element starts a new group.
  @Test func aCancelledGroupLeavesAndItsKeyStartsANewGroup() async {
    let clock = TestClock()
    let subject = PassthroughFlow<String, Never>()
    let keys = EventLog<String>()
    let groups = subject.grouped(by: { String($0.first!) })
    let firstGroup = LockedState<FlowGroup<String, String, Never>?>(nil)
    let outer = clock.task {
      for await group in groups {
        keys.append(group.key)
        firstGroup.withLock { if $0 == nil { $0 = group } }
      }
    }
    await clock.runCurrent()
    subject.send("a1")
    await clock.runCurrent()
    let group = firstGroup.withLock { $0! }
    let groupConsumer = clock.task { await collect(group).elements }
    await clock.runCurrent()
    groupConsumer.cancel()
    #expect(await clock.value(of: groupConsumer) == ["a1"])
    firstGroup.withLock { $0 = nil }
    subject.send("a2")  // the key's group left: a new group
    await clock.runCurrent()
    #expect(keys.all == ["a", "a"])
    outer.cancel()
    await bounded(outer, "outer")
  }

  /// A group released without being iterated does not stop the others: it leaves, and its key's
  /// next element starts a new group.
  @Test func aReleasedGroupLeaves() async {
    let clock = TestClock()
    let source = Flow.sequence(Array(repeating: "x", count: 5) + ["y"])
    let keys = clock.task { () -> [String] in
      var keys: [String] = []
      for await group in source.grouped(by: { $0 }, bufferingLimit: 1) { keys.append(group.key) }  // released at once
      return keys
    }
    guard let found = await clock.value(of: keys) else { return }
    #expect(found.filter { $0 == "y" } == ["y"])
    #expect(found.count >= 2)
  }

  /// The outer consumer cancelled before the base ended: its `nil` comes once the base's body has
  /// ended, and every group ends at once with `nil`.
  @Test func cancellingTheOuterConsumerEndsTheTaskAndEveryGroup() async {
    let clock = TestClock()
    let log = EventLog<String>()
    let never = Gate()
    let source = Flow<Int, Never> { emitter in
      await emitter.emit(1)
      await emitter.emit(2)
      await never.wait()  // leaves when the body is cancelled
      log.append("body ended")
    }
    let group = LockedState<FlowGroup<Int, Int, Never>?>(nil)
    let outer = clock.task {
      var iterator = source.grouped(by: { $0 }).makeAsyncIterator()
      let first = await iterator.next()
      group.withLock { $0 = first }
      let next = await iterator.next()  // the group of 2, then it parks
      _ = await iterator.next()
      log.append("outer ended after \(next.map { "\($0.key)" } ?? "nil")")
    }
    await never.entered()
    // The body parked after its two elements; the outer takes the first group in its own turn.
    await clock.runCurrent()
    let groupConsumer = clock.task { () -> [Int] in
      guard let first = group.withLock({ $0 }) else {
        Issue.record("the outer had not taken the first group once the clock settled")
        return []
      }
      return await collect(first).elements
    }
    await clock.runCurrent()
    outer.cancel()
    await bounded(outer, "outer")
    #expect(log.all == ["body ended", "outer ended after 2"])
    #expect(await clock.value(of: groupConsumer) == [1])
  }

  /// The outer consumer that stops iterating (releases its iterator) before the end cancels the
  /// task: the base's body ends.
  @Test func releasingTheOuterIteratorEndsTheTask() async {
    let clock = TestClock()
    let ended = Signal()
    let never = Gate()
    let source = Flow<Int, Never> { emitter in
      await emitter.emit(1)
      await never.wait()
      ended.fire()
    }
    let outer = clock.task {
      for await _ in source.grouped(by: { $0 }) { break }
    }
    await clock.value(of: outer)
    await ended.wait()
  }

  /// A group is iterated once.
  @Test func aSecondIteratorOfAGroupStops() async {
    await #expect(processExitsWith: .failure) {
      let source = Flow.sequence([1])
      for await group in source.grouped(by: { $0 }) {
        _ = group.makeAsyncIterator()
        _ = group.makeAsyncIterator()
      }
    }
  }
}

/// `1...count`, counting every pull: a base that never runs ahead of the operator's pulls.
private struct CountedPulls: AsyncSequence, Sendable {
  let count: Int
  let pulled: LockedState<Int>

  struct AsyncIterator: AsyncIteratorProtocol {
    let count: Int
    let pulled: LockedState<Int>

    mutating func next(isolation actor: isolated (any Actor)?) async -> Int? {
      let value = pulled.withLock { pulled in
        pulled += 1
        return pulled
      }
      return value <= count ? value : nil
    }

    mutating func next() async -> Int? { await next(isolation: nil) }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(count: count, pulled: pulled) }
}
