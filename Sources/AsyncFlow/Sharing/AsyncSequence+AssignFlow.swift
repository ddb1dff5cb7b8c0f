extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  /// Writes each element into `object`'s property at `keyPath`, on the caller's isolation (call
  /// it from the model's actor: a `@MainActor` model's writes stay on the main actor), and holds
  /// `object` weakly: Combine's `assign(to:on:)` without its retain cycle.
  ///
  /// Store the subscription in `object` itself: when the object goes, its subscriptions go with
  /// it and cancel their iterations. A subscription kept elsewhere ends at the first element that
  /// finds the object gone. Cancelling it, or releasing it, ends the iteration as for
  /// ``_Concurrency/AsyncSequence/sink(receiveValue:)-e2vw``.
  ///
  /// The iteration runs in a task the subscription owns. Called on a hot source's own type
  /// (`PassthroughFlow`, `CurrentValueFlow`, `AsyncShareFlowSequence`: a ``HotFlowSource``),
  /// the source's own `assignFlow` is chosen instead, which holds no task while nothing arrives:
  /// the values wait in a mailbox, drained on `isolation`. The choice is made at compile time:
  /// through a generic parameter (`some AsyncSequence`, as in the example below) this one runs.
  ///
  /// ```swift
  /// @Observable @MainActor private final class SearchModel {
  ///   var results: [Item] = []
  ///   @ObservationIgnored private var subscriptions = Set<FlowSubscription>()
  ///   func bind(_ found: some AsyncSequence<[Item], Never> & Sendable) {
  ///     found.assignFlow(to: \.results, on: self).store(in: &subscriptions)
  ///   }
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - keyPath: The property to write.
  ///   - object: The object to write it on; held weakly.
  ///   - isolation: Where the writes run; by default the caller's.
  public func assignFlow<Root: AnyObject & Sendable>(
    to keyPath: ReferenceWritableKeyPath<Root, Element>, on object: Root,
    isolation: isolated (any Actor)? = #isolation
  ) -> FlowSubscription {
    let target = AssignTarget(object: object, keyPath: keyPath)
    // Made here, not in the task, as `sink` does: a value sent right after this returns is assigned.
    var iterator = makeAsyncIterator()
    let task = FlowScheduling.startTask {
      while let element = await iterator.next(isolation: nil) {
        guard await target.write(element, isolation: isolation) else { return }
      }
    }
    return FlowSubscription(gate: target.gate, owner: .task(task))
  }
}

/// Where `assignFlow` writes: the object, held weakly, and the property.
@usableFromInline
final class AssignTarget<Root: AnyObject & Sendable, Value: Sendable>: Sendable {
  weak let object: Root?
  // Sound: a key path is an immutable value, and it is applied only on the writes' isolation.
  // Swift 6.3 does not infer `Sendable` for a key path to an actor-isolated property, which is the
  // usual target.
  nonisolated(unsafe) let keyPath: ReferenceWritableKeyPath<Root, Value>
  @usableFromInline let gate: SinkDeliveryGate

  @usableFromInline
  init(object: Root, keyPath: ReferenceWritableKeyPath<Root, Value>) {
    self.object = object
    self.keyPath = keyPath
    self.gate = SinkDeliveryGate()
  }

  /// Writes `value` on `isolation` (the check that the subscription is still on, and the write,
  /// with no suspension between them); `false` once the subscription is cancelled or the object
  /// is gone.
  @usableFromInline
  func write(_ value: Value, isolation: isolated (any Actor)?) -> Bool {
    guard !gate.isCancelled, let object else { return false }
    object[keyPath: keyPath] = value
    return true
  }
}
