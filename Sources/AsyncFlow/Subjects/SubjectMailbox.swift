/// A push subscriber of a hot source (`sink`, `assignFlow` on a `PassthroughFlow`,
/// `CurrentValueFlow` or `shareFlow`): what its drain delivers to, and the handle its
/// `FlowSubscription` cancels. Its buffer and its drain's phase live in the source's
/// ``SubjectStateMachine``; this object only carries the receiver, so an idle subscriber is this
/// object and one entry in the machine's table, no task.
@usableFromInline
final class SubjectMailbox<Element: Sendable, Failure: Error>: FlowSubscriptionTarget {
  @usableFromInline
  enum Receiver: Sendable {
    /// A sink whose `receiveValue` awaits: values on its isolation, the end on `completion`'s.
    case sink(
      value: @Sendable @isolated(any) (Element) async -> Void,
      completion: @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void)
    /// A sink whose `receiveValue` is synchronous: called with no async frame of its own per value.
    case syncSink(
      value: @Sendable @isolated(any) (Element) -> Void,
      completion: @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void)
    /// `assignFlow`: each value written on `isolation`; `false` once the object is gone.
    case assign(isolation: (any Actor)?, write: @Sendable (Element, isolated (any Actor)?) -> Bool)

    /// Where the drain delivers: the value closure's isolation, or `assignFlow`'s.
    @inlinable
    var isolation: (any Actor)? {
      switch self {
      case .sink(let value, _): value.isolation
      case .syncSink(let value, _): value.isolation
      case .assign(let isolation, _): isolation
      }
    }

    /// Where the end goes; `nil` for `assignFlow`, which reports none.
    @inlinable
    var completion: (@Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void)? {
      switch self {
      case .sink(_, let completion), .syncSink(_, let completion): completion
      case .assign: nil
      }
    }
  }

  @usableFromInline let storage: SubjectStorage<Element, Failure>
  @usableFromInline let gate: SinkDeliveryGate
  @usableFromInline let receiver: Receiver

  @usableFromInline
  init(storage: SubjectStorage<Element, Failure>, gate: SinkDeliveryGate, receiver: Receiver) {
    self.storage = storage
    self.gate = gate
    self.receiver = receiver
  }

  @usableFromInline
  func unsubscribe() {
    storage.unsubscribe(self)
  }

  @usableFromInline var droppedCount: Int { storage.dropped(self) }

  @usableFromInline func forgetDrops() {
    storage.forgetDrops(self)
  }

  /// The body of one drain job: hops to the receiver's isolation once, delivers batch after batch
  /// there, and returns when the machine finds the mailbox empty (or the subscriber cancelled).
  @inlinable
  func drain() async {
    guard let end = await deliverValues(on: receiver.isolation) else { return }
    if let completion = receiver.completion {
      await gate.deliver(end.map { .failure($0) } ?? .finished, to: completion)
    }
    storage.endDelivered(self)
  }

  /// Delivers on `isolation`, which is the receiver's: the check that the subscription is still on
  /// and the start of a delivery cannot be separated by a `cancel()` made there. Returns the end to
  /// report (`.some(nil)`: finished), or `nil` when the drain ends without one.
  @inlinable
  func deliverValues(on isolation: isolated (any Actor)?) async -> Failure?? {
    // The batch's elements are moved out into an array before they are delivered, and released
    // with it, here, before the next `take`: never under its lock (an element's `deinit` may cancel
    // this sink, or send). One move per batch, not a `popFirst` per element: a drain that a
    // subscription or the end starts runs unspecialized (it starts in the library; one that `send`
    // starts is specialized, see `SubjectStorage.startDrain`), and there each `RingBuffer` call
    // looked up generic metadata (measured with perf on `W2.sink1`: 18 % of the time).
    var batch = RingBuffer<Element>()
    while true {
      switch storage.take(self, swapping: &batch) {
      case .deliver:
        let elements = batch.removeAll()
        switch receiver {
        case .sink(let receive, _):
          for element in elements {
            guard !gate.isCancelled else { return nil }
            await receive(element)
          }
        case .syncSink(let receive, _):
          for element in elements {
            guard !gate.isCancelled else { return nil }
            await receive(element)  // only the hop to its isolation, which is already this one
          }
        case .assign(_, let write):
          // The first write that finds the object gone (or the subscription cancelled) ends it.
          for element in elements where !write(element, isolation) {
            storage.unsubscribe(self)
            return nil
          }
        }
      case .idle, .stop:
        return nil
      case .complete(let failure):
        return .some(failure)
      }
    }
  }
}

/// By identity: the machine finds a push subscriber's entry by its mailbox.
extension SubjectMailbox: Hashable {
  @usableFromInline static func == (lhs: SubjectMailbox, rhs: SubjectMailbox) -> Bool { lhs === rhs }
  @usableFromInline func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

extension SubjectStorage {
  /// Registers a push subscriber (`sink`, `assignFlow`) delivering to `receiver`, whose
  /// subscription closes `gate`.
  @inlinable
  func subscribe(
    _ receiver: SubjectMailbox<Element, Failure>.Receiver, gate: SinkDeliveryGate = SinkDeliveryGate()
  ) -> FlowSubscription {
    let mailbox = SubjectMailbox(storage: self, gate: gate, receiver: receiver)
    subscribe(mailbox)
    return FlowSubscription(gate: gate, owner: .target(mailbox))
  }
}
