import AsyncFlow
import Testing

@testable import AsyncFlow

private typealias Probe = ReleaseHook

/// An element released by a subject must be released after the subject's lock: its `deinit` may
/// send to the subject, cancel a subscription or read `subscriberCount`, and under the lock each
/// deadlocks. Every case runs in a child process with an alarm (see ``Reentrancy/armAlarm()``).
@Suite("Subjects release elements outside their lock", .hangGuard)
struct SubjectReentrantReleaseTests {
  enum Scenario: String, CaseIterable, Codable, Sendable {
    case iteratorRefill, newestDropWithAnIterator, droppedIteratorWithABufferedElement
    case currentValueReplaced, sinkWhoseElementCancelsTheSink, sinkWhoseElementSendsToItsSubject
    case assignFlowWhoseElementSendsToItsSubject, oldestPolicyDropWithASink

    func run() async {
      switch self {
      case .iteratorRefill:
        // The element the iterator returned leaves its batch at the next refill.
        let subject = PassthroughFlow<Probe, Never>()
        var iterator = subject.makeAsyncIterator()
        subject.send(Probe { subject.send(Probe()) })
        _ = await iterator.next()
        subject.send(Probe())
        _ = await iterator.next()
        _ = await iterator.next()

      case .newestDropWithAnIterator:
        let subject = PassthroughFlow<Probe, Never>(bufferingPolicy: .bufferingNewest(1))
        let iterator = subject.makeAsyncIterator()
        subject.send(Probe { subject.send(Probe()) })
        subject.send(Probe())  // drops the first
        withExtendedLifetime(iterator) {}

      case .droppedIteratorWithABufferedElement:
        let subject = PassthroughFlow<Probe, Never>()
        var iterator: PassthroughFlow<Probe, Never>.Iterator? = subject.makeAsyncIterator()
        subject.send(Probe { subject.send(Probe()) })
        withExtendedLifetime(iterator) {}
        iterator = nil
        #expect(subject.subscriberCount == 0)

      case .currentValueReplaced:
        let current = CurrentValueFlow(Probe())
        current.send(Probe { current.send(Probe()) })
        current.send(Probe())  // replaces the one that sends
        current.value = Probe()

      // The receivers run on the main actor, and the test sends from it: the drain cannot take the
      // element before `send` returns and the test's own reference is gone, so the drain's batch
      // holds the last one.
      case .sinkWhoseElementCancelsTheSink:
        let subject = PassthroughFlow<Probe, Never>()
        let box = Reentrancy.SubscriptionBox()
        let cancelled = Signal()
        await MainActor.run {
          box.set(subject.sink { @MainActor _ in })
          subject.send(
            Probe {
              box.cancel()
              cancelled.fire()
            })
        }
        await cancelled.wait()
        #expect(subject.subscriberCount == 0)

      case .sinkWhoseElementSendsToItsSubject:
        let subject = PassthroughFlow<Probe, Never>()
        let secondReleased = Signal()
        let subscription = await MainActor.run {
          let subscription = subject.sink { @MainActor _ in }
          subject.send(Probe { subject.send(Probe { secondReleased.fire() }) })
          return subscription
        }
        await secondReleased.wait()
        withExtendedLifetime(subscription) {}

      case .assignFlowWhoseElementSendsToItsSubject:
        // The property holds its value weakly: the drain's batch holds the last reference.
        let subject = PassthroughFlow<Probe?, Never>()
        let target = WeakTarget()
        let sent = Signal()
        let subscription = await MainActor.run {
          let subscription = subject.assignFlow(to: \.value, on: target, isolation: MainActor.shared)
          subject.send(
            Probe {
              subject.send(nil)
              sent.fire()
            })
          return subscription
        }
        await sent.wait()
        withExtendedLifetime(subscription) {}

      case .oldestPolicyDropWithASink:
        // A sink that leaves with undelivered elements: its mailbox's buffer goes with it.
        let subject = PassthroughFlow<Probe, Never>(bufferingPolicy: .bufferingOldest(4))
        let gate = Signal()
        let entered = Signal()
        let subscription = subject.sink { _ in
          entered.fire()
          await gate.wait()
        }
        subject.send(Probe())
        await entered.wait()  // the drain is busy: what follows stays in the mailbox
        subject.send(Probe { _ = subject.subscriberCount })
        subscription.cancel()
        gate.fire()
        #expect(subject.subscriberCount == 0)
      }
    }
  }

  @Test(arguments: Scenario.allCases)
  func anElementReleasedByTheSubjectMayCallBackIntoIt(_ scenario: Scenario) async {
    await #expect(processExitsWith: .success) { [scenario] in
      Reentrancy.armAlarm()
      await scenario.run()
    }
  }
}

private final class WeakTarget: @unchecked Sendable {
  weak var value: Probe?
}
