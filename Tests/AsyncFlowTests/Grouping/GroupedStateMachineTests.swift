import Testing

@testable import AsyncFlow

/// `GroupedStateMachine` as a table of events, with integers for its waiters and its task.
@Suite("grouped(by:)'s state machine")
struct GroupedStateMachineTests {
  typealias Machine = GroupedStateMachine<String, Int, TestError, Int, Int, Int, Int>

  private func running(limit: Int) -> Machine {
    var machine = Machine(limit: limit)
    guard case .startPump = machine.outerNext() else {
      Issue.record("the first next() starts the pump")
      return machine
    }
    let answer = machine.pumpStarted(100)
    #expect(answer)
    return machine
  }

  @Test func aNewKeyGoesToTheWaitingOuterAndAFullGroupStopsThePull() {
    var machine = running(limit: 2)
    let answer = machine.outerSuspends(1)
    #expect(answer)
    guard case .next(nil, let outer?, wait: false) = machine.pumped(10, key: "a") else {
      Issue.record("the new group goes to the waiting outer consumer")
      return
    }
    #expect(outer.0 == 1 && outer.1 == 0 && outer.2 == "a")
    guard case .next(nil, nil, wait: true) = machine.pumped(11, key: "a") else {
      Issue.record("the group's buffer is full at 2: the pull waits")
      return
    }
    let answer2 = machine.pumpWaits(7)
    #expect(answer2)
    guard case .deliver(10, resumePump: 7?) = machine.groupNext(0) else {
      Issue.record("taking one makes room: the pump is resumed")
      return
    }
    guard case .deliver(11, resumePump: nil) = machine.groupNext(0) else {
      Issue.record("the second buffered element")
      return
    }
    let answer3 = machine.groupSuspends(0, 3)
    #expect(answer3)
    guard case .next((3, 12)?, nil, wait: false) = machine.pumped(12, key: "a") else {
      Issue.record("an element for a waiting group goes to it, not to the buffer")
      return
    }
  }

  @Test func theOuterQueueOfNewGroupsIsBoundedToo() {
    var machine = running(limit: 2)
    guard case .next(nil, nil, wait: false) = machine.pumped(1, key: "a") else { return }
    guard case .next(nil, nil, wait: true) = machine.pumped(2, key: "b") else {
      Issue.record("two new groups not taken: the pull waits")
      return
    }
    let answer = machine.pumpWaits(7)
    #expect(answer)
    guard case .deliver(id: 0, key: "a", resumePump: 7?) = machine.outerNext() else {
      Issue.record("the outer takes one: the pump is resumed")
      return
    }
  }

  @Test func aGroupThatLeavesFreesItsKeyAndItsRoom() {
    var machine = running(limit: 1)
    guard case .next(nil, nil, wait: true) = machine.pumped(1, key: "a") else { return }
    let answer = machine.pumpWaits(7)
    #expect(answer)
    guard case .deliver(id: 0, key: "a", resumePump: nil) = machine.outerNext() else { return }
    let (waiter, buffer, pump) = machine.groupLeft(0)
    #expect(waiter == nil && buffer?.count == 1 && pump == 7)
    guard case .next(nil, nil, wait: true) = machine.pumped(2, key: "a") else { return }
    guard case .deliver(id: 1, key: "a", resumePump: nil) = machine.outerNext() else {
      Issue.record("the key's next element starts a new group")
      return
    }
  }

  @Test func theOuterLeavingBeforeTheEndEndsEveryGroupAndAfterItNone() {
    var machine = running(limit: 4)
    _ = machine.pumped(1, key: "a")
    _ = machine.outerNext()
    let answer = machine.groupSuspends(0, 5)
    #expect(answer == false)  // it has an element
    _ = machine.groupNext(0)
    let answer2 = machine.groupSuspends(0, 5)
    #expect(answer2)
    let leaving = machine.outerLeft()
    #expect(leaving.task == 100 && leaving.groupWaiters == [5])
    guard case .end(nil) = machine.groupNext(0) else {
      Issue.record("the group ended at once")
      return
    }

    var ended = running(limit: 4)
    _ = ended.pumped(1, key: "a")
    _ = ended.outerNext()
    _ = ended.pumpEnded(.failed(TestError(id: 1)))
    let after = ended.outerLeft()
    #expect(after.task == nil && after.groupWaiters.isEmpty)
    guard case .deliver(1, _) = ended.groupNext(0) else {
      Issue.record("after the end, a group keeps what it holds")
      return
    }
    guard case .end(TestError(id: 1)?) = ended.groupNext(0) else {
      Issue.record("then the base's failure")
      return
    }
  }

  @Test func theOuterGetsTheFailureOnceThenNil() {
    var machine = running(limit: 4)
    _ = machine.pumpEnded(.failed(TestError(id: 2)))
    guard case .end(TestError(id: 2)?) = machine.outerNext() else {
      Issue.record("the failure")
      return
    }
    guard case .end(nil) = machine.outerNext() else {
      Issue.record("then nil")
      return
    }
  }

  @Test func aPumpStartedAfterTheOuterLeftIsCancelled() {
    var machine = Machine(limit: 4)
    guard case .startPump = machine.outerNext() else { return }
    _ = machine.outerLeft()
    let answer = machine.pumpStarted(100)
    #expect(!answer)
  }
}
