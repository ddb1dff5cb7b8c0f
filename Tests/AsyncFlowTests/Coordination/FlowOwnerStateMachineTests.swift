import Testing

@testable import AsyncFlow

/// `FlowOwnerStateMachine`'s grid, with plain values for the members and the waiters.
@Suite("FlowOwnerStateMachine")
struct FlowOwnerStateMachineTests {
  typealias Machine = FlowOwnerStateMachine<String, Int>
  final class Member {}

  @Test func admitWhenOpenHoldsATicketAndWhenClosedIsRefused() {
    var machine = Machine()
    let r1 = machine.admit(.call)
    #expect(r1)
    #expect(machine.total == 1)
    let r2 = machine.close()
    #expect(r2.isEmpty)
    let r3 = machine.admit(.call)
    #expect(!r3)
    #expect(machine.total == 1)
  }

  @Test func retainWhenClosedIsNeverRefused() {
    var machine = Machine()
    let r4 = machine.admit(.call)
    #expect(r4)
    _ = machine.close()
    machine.retain(.run)
    #expect(machine.left == [1, 0, 0, 1])
  }

  @Test func releaseOfTheLastTicketResumesTheWaiters() {
    var machine = Machine()
    let r5 = machine.admit(.call)
    #expect(r5)
    machine.retain(.upstream)
    _ = machine.close()
    let r6 = machine.wait(1, waiter: 10, isCancelled: false)
    #expect(r6 == nil)
    let r7 = machine.wait(2, waiter: 20, isCancelled: false)
    #expect(r7 == nil)
    let r8 = machine.release(.call)
    #expect(r8.isEmpty)
    let resumed = machine.release(.upstream)
    #expect(Set(resumed) == [10, 20])
    #expect(machine.waiters.isEmpty)
  }

  @Test func waitWhenNothingIsHeldOrWhenCancelledResumesAtOnce() {
    var machine = Machine()
    let r9 = machine.wait(1, waiter: 10, isCancelled: false)
    #expect(r9 == 10)
    machine.retain(.delivery)
    let r10 = machine.wait(2, waiter: 20, isCancelled: true)
    #expect(r10 == 20)
    let r11 = machine.wait(3, waiter: 30, isCancelled: false)
    #expect(r11 == nil)
    let r12 = machine.stopWaiting(3)
    #expect(r12 == 30)
    let r13 = machine.stopWaiting(3)
    #expect(r13 == nil)
  }

  @Test func registerWhenClosedIsRefusedAndCloseHandsOutTheMembersOnce() {
    var machine = Machine()
    let (a, b) = (Member(), Member())
    let r14 = machine.register("a", id: ObjectIdentifier(a))
    #expect(r14)
    let r15 = machine.close()
    #expect(r15 == ["a"])
    let r16 = machine.close()
    #expect(r16.isEmpty)
    let r17 = machine.register("b", id: ObjectIdentifier(b))
    #expect(!r17)
    #expect(machine.allMembers == ["a"])
    let r18 = machine.unregister(ObjectIdentifier(a))
    #expect(r18 == "a")
    #expect(machine.allMembers.isEmpty)
  }
}
