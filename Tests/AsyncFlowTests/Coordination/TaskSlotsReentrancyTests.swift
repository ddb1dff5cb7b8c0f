import AsyncFlow
import AsyncFlowTesting
import Testing

@testable import AsyncFlow

/// No user value is released, and no user code runs, while the registry's lock is held: an
/// operation's captures, and its cancellation handlers, may call back into the same `TaskSlots`.
/// Each callback sets a flag; a deadlock leaves it unset, and the bounded wait fails the test.
@Suite("TaskSlots re-entrant release", .hangGuard)
struct TaskSlotsReentrancyTests {
  /// What a callback does with the registry: every synchronous entry point.
  private static func callBack(into slots: TaskSlots<String>, _ called: Reentry.Flag) {
    _ = slots.isRunning("load")
    _ = slots.runningCount
    slots.cancel("elsewhere")
    slots.run("elsewhere") {}
    called.set()
  }

  @Test func anOperationsCapturesReleasedWhenItFinishesMayCallBackIn() async {
    let slots = TaskSlots<String>()
    let called = Reentry.Flag()
    do {
      let probe = ReleaseHook { Self.callBack(into: slots, called) }
      slots.run("load") { _ = probe }
    }
    #expect(await Reentry.isSetSoon(called))
  }

  @Test func aSupersededOperationsCapturesMayStartItsSuccessorsSuccessor() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let called = Reentry.Flag()
    do {
      let probe = ReleaseHook {
        slots.run("load") {}  // supersedes the run that superseded this one
        called.set()
      }
      slots.run("load") {
        _ = probe
        await gate.wait()  // returns once cancelled
      }
    }
    await gate.entered()
    slots.run("load") { await gate.wait() }
    #expect(await Reentry.isSetSoon(called))
    slots.cancelAll()
  }

  @Test func aDroppedQueuedOperationsCapturesMayCallBackIn() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let called = Reentry.Flag()
    slots.run("save", policy: .queue) { await gate.wait() }
    do {
      let probe = ReleaseHook { Self.callBack(into: slots, called) }
      slots.run("save", policy: .queue) { _ = probe }  // never runs: dropped by `cancel`
    }
    await gate.entered()
    slots.cancel("save")
    #expect(await Reentry.isSetSoon(called))
  }

  @Test func anIgnoredOperationIsReleasedAfterTheLock() async {
    let slots = TaskSlots<String>()
    let gate = Gate()
    let returned = Reentry.Flag()
    let called = Reentry.Flag()
    slots.run("submit", policy: .firstWins) { await gate.wait() }
    await gate.entered()
    // On a thread of its own: `run` releases the ignored operation before it returns.
    Reentry.onThread(setting: returned) {
      let probe = ReleaseHook { Self.callBack(into: slots, called) }
      #expect(slots.run("submit", policy: .firstWins) { _ = probe } == nil)
    }
    #expect(await Reentry.isSetSoon(returned))
    #expect(called.isSet)
    gate.release()
  }

  enum Canceller: String, CaseIterable, Sendable {
    case supersede, cancel, cancelAll
  }

  /// A cancellation handler runs synchronously inside `Task.cancel()`: that call comes after the lock.
  /// The operation waits on a signal that cancellation does not end, so that a deadlocked
  /// cancellation blocks only its own thread, and the test fails instead of hanging.
  @Test(arguments: Canceller.allCases)
  func aCancellationHandlerMayCallBackIn(by canceller: Canceller) async {
    let slots = TaskSlots<String>()
    let hold = Signal()
    let entered = Reentry.Flag()
    let called = Reentry.Flag()
    let returned = Reentry.Flag()
    slots.run("load") {
      await withTaskCancellationHandler {
        entered.set()
        await hold.wait()
      } onCancel: {
        Self.callBack(into: slots, called)
      }
    }
    #expect(await Reentry.isSetSoon(entered))
    Reentry.onThread(setting: returned) {
      switch canceller {
      case .supersede: slots.run("load") {}
      case .cancel: slots.cancel("load")
      case .cancelAll: slots.cancelAll()
      }
    }
    let unblocked = await Reentry.isSetSoon(returned)
    #expect(unblocked)
    #expect(called.isSet)
    guard unblocked else {
      // Its lock is held for good: releasing it would block this thread too.
      _ = Unmanaged.passRetained(slots)
      return
    }
    hold.fire()
  }
}
