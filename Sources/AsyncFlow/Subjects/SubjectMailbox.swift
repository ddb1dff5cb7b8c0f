/// A push subscriber of a hot source (`sink`, `assignFlow` on a `PassthroughFlow`,
/// `CurrentValueFlow` or `shareFlow`): what its drain delivers to, and the handle its
/// `FlowSubscription` cancels. Its buffer and its drain's phase live in the source's
/// ``SubjectStateMachine``; this object only carries the receiver, so an idle subscriber is this
/// object and one entry in the machine's table, no task.
@usableFromInline
final class SubjectMailbox<Element: Sendable, Failure: Error>: FlowSubscriptionTarget {
  @usableFromInline
  enum Receiver: Sendable {
    /// A sink: values on `value`'s isolation, the end on `completion`'s.
    case sink(
      value: @Sendable @isolated(any) (Element) async -> Void,
      completion: @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void)
    /// `assignFlow`: each value written on `isolation`; `false` once the object is gone.
    case assign(isolation: (any Actor)?, write: @Sendable (Element, isolated (any Actor)?) -> Bool)
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

  /// The body of one drain job: hops to the receiver's isolation once, delivers batch after batch
  /// there, and returns when the machine finds the mailbox empty (or the subscriber cancelled).
  @inlinable
  func drain() async {
    switch receiver {
    case .sink(let receiveValue, let receiveCompletion):
      guard let failure = await deliverValues(to: receiveValue, on: receiveValue.isolation) else { return }
      await deliverCompletion(failure.map { .failure($0) } ?? .finished, to: receiveCompletion)
    case .assign(let isolation, let write):
      await assignValues(with: write, on: isolation)
    }
  }

  /// Delivers on `isolation`, which is `receive`'s: the check that the subscription is still on
  /// and the start of `receive` cannot be separated by a `cancel()` made there. Returns the end to
  /// report (`.some(nil)`: finished), or `nil` when the drain ends without one.
  @inlinable
  func deliverValues(
    to receive: @Sendable @isolated(any) (Element) async -> Void, on isolation: isolated (any Actor)?
  ) async -> Failure?? {
    // The batch's elements are moved out into an array before they are delivered, and released
    // with it, here, before the next `take`: never under its lock (an element's `deinit` may cancel
    // this sink, or send). One move per batch, not a `popFirst` per element: this loop is not
    // specialized for the element type (the drain starts in the library), and each `RingBuffer`
    // call here looked up generic metadata (measured with perf on `W2.sink1`: 18 % of the time).
    var batch = RingBuffer<Element>()
    while true {
      switch storage.take(self, swapping: &batch) {
      case .deliver:
        let elements = batch.removeAll()
        for element in elements {
          guard !gate.isCancelled else { return nil }
          await receive(element)
        }
      case .idle, .stop:
        return nil
      case .complete(let failure):
        return .some(failure)
      }
    }
  }

  @inlinable
  func deliverCompletion(
    _ completion: FlowCompletion<Failure>,
    to receive: @escaping @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void
  ) async {
    await gate.deliver(completion, to: receive)
  }

  /// `assignFlow`'s drain: writes on `isolation`; the first write that finds the object gone ends
  /// the subscription.
  @inlinable
  func assignValues(
    with write: @Sendable (Element, isolated (any Actor)?) -> Bool, on isolation: isolated (any Actor)?
  ) async {
    var batch = RingBuffer<Element>()
    while true {
      switch storage.take(self, swapping: &batch) {
      case .deliver:
        let elements = batch.removeAll()  // as in `deliverValues`
        for element in elements {
          guard write(element, isolation) else {
            storage.unsubscribe(self)
            return
          }
        }
      case .idle, .stop, .complete:
        return
      }
    }
  }
}

/// By identity: the machine finds a push subscriber's entry by its mailbox.
extension SubjectMailbox: Hashable {
  @usableFromInline static func == (lhs: SubjectMailbox, rhs: SubjectMailbox) -> Bool { lhs === rhs }
  @usableFromInline func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

// MARK: sink and assignFlow on the hot sources

extension SubjectStorage {
  @inlinable
  func sink(
    receiveCompletion: @escaping @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void,
    receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void
  ) -> FlowSubscription {
    let gate = SinkDeliveryGate()
    let mailbox = SubjectMailbox(
      storage: self, gate: gate, receiver: .sink(value: receiveValue, completion: receiveCompletion))
    subscribe(mailbox)
    return FlowSubscription(gate: gate, target: mailbox)
  }

  @inlinable
  func assign<Root: AnyObject & Sendable>(
    to keyPath: ReferenceWritableKeyPath<Root, Element>, on object: Root, isolation: (any Actor)?
  ) -> FlowSubscription {
    let gate = SinkDeliveryGate()
    let target = AssignTarget(object: object, keyPath: keyPath, gate: gate)
    let mailbox = SubjectMailbox(
      storage: self, gate: gate,
      receiver: .assign(isolation: isolation) { value, isolation in target.write(value, isolation: isolation) })
    subscribe(mailbox)
    return FlowSubscription(gate: gate, target: mailbox)
  }
}

extension PassthroughFlow {
  /// Calls `receiveValue` with every value sent from now on, in order, on the closure's own
  /// isolation: the subscriber is registered before this returns, and costs no task while nothing
  /// arrives (an idle sink is a mailbox of about 340 bytes, with its subscription). Values
  /// wait in the sink's mailbox under the subject's buffering policy; one job drains it on the
  /// closure's isolation while it holds values, and ends when it is empty.
  ///
  /// ```swift
  /// let taps = PassthroughFlow<Int, Never>()
  /// let subscription = taps.sink { @MainActor count in label.text = "\(count)" }
  /// taps.send(1)   // delivered on the main actor
  /// ```
  @inlinable
  public func sink(receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void) -> FlowSubscription {
    storage.sink(receiveCompletion: { _ in }, receiveValue: receiveValue)
  }

  /// Like ``sink(receiveValue:)``, and reports the end (`finish()` or `fail(_:)`) to
  /// `receiveCompletion` once, after every value sent before it, unless the subscription was
  /// cancelled first.
  ///
  /// ```swift
  /// let subscription = uploads.sink { completion in
  ///   if case .failure(let error) = completion { log(error) }
  /// } receiveValue: { progress in
  ///   await bar.show(progress)
  /// }
  /// ```
  @inlinable
  public func sink(
    receiveCompletion: @escaping @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void,
    receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void
  ) -> FlowSubscription {
    storage.sink(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
  }
}

extension PassthroughFlow where Failure == Never {
  /// Writes every value sent from now on into `object`'s property at `keyPath`, on the caller's
  /// isolation, holding `object` weakly; as ``_Concurrency/AsyncSequence/assignFlow(to:on:isolation:)``, with no
  /// task while nothing arrives (the values wait in a mailbox drained on that isolation).
  ///
  /// ```swift
  /// @MainActor final class Model {
  ///   var query = ""
  ///   var subscriptions = Set<FlowSubscription>()
  ///   func bind(_ queries: PassthroughFlow<String, Never>) {
  ///     queries.assignFlow(to: \.query, on: self).store(in: &subscriptions)
  ///   }
  /// }
  /// ```
  @inlinable
  public func assignFlow<Root: AnyObject & Sendable>(
    to keyPath: ReferenceWritableKeyPath<Root, Element>, on object: Root,
    isolation: isolated (any Actor)? = #isolation
  ) -> FlowSubscription {
    storage.assign(to: keyPath, on: object, isolation: isolation)
  }
}

extension CurrentValueFlow {
  /// Calls `receiveValue` with the current value first, then with every later one, on the
  /// closure's own isolation, costing no task while the value does not change; a slow closure
  /// receives the latest value, never an older one after a newer one.
  ///
  /// ```swift
  /// let filter = CurrentValueFlow(Filter.all)
  /// let subscription = filter.sink { @MainActor current in list.apply(current) }   // .all first
  /// ```
  @inlinable
  public func sink(receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void) -> FlowSubscription {
    storage.sink(receiveCompletion: { _ in }, receiveValue: receiveValue)
  }

  /// Like ``sink(receiveValue:)``, and reports `finish()` to `receiveCompletion` once, after the
  /// last value, unless the subscription was cancelled first.
  ///
  /// ```swift
  /// let subscription = filter.sink { _ in print("done") } receiveValue: { print($0) }
  /// ```
  @inlinable
  public func sink(
    receiveCompletion: @escaping @Sendable @isolated(any) (FlowCompletion<Never>) async -> Void,
    receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void
  ) -> FlowSubscription {
    storage.sink(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
  }

  /// Writes the current value, then every later one, into `object`'s property at `keyPath`, on
  /// the caller's isolation, holding `object` weakly; no task while the value does not change.
  ///
  /// ```swift
  /// filter.assignFlow(to: \.filter, on: listModel).store(in: &subscriptions)
  /// ```
  @inlinable
  public func assignFlow<Root: AnyObject & Sendable>(
    to keyPath: ReferenceWritableKeyPath<Root, Element>, on object: Root,
    isolation: isolated (any Actor)? = #isolation
  ) -> FlowSubscription {
    storage.assign(to: keyPath, on: object, isolation: isolation)
  }
}

extension AsyncShareFlowSequence {
  /// Subscribes to the shared upstream, starting it if it is not running, and calls `receiveValue`
  /// with the replay, then every element, on the closure's own isolation. The sink counts in
  /// ``subscriberCount``; cancelling or releasing its subscription stops the upstream when it was
  /// the last subscriber. No task while nothing arrives: elements wait in the sink's mailbox.
  ///
  /// ```swift
  /// let prices = api.priceUpdates().shareFlow(replay: 1)
  /// let subscription = prices.sink { @MainActor price in label.text = "\(price)" }
  /// ```
  @inlinable
  public func sink(receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void) -> FlowSubscription {
    storage.sink(receiveCompletion: { _ in }, receiveValue: receiveValue)
  }

  /// Like ``sink(receiveValue:)``, and reports the upstream's finish or failure to
  /// `receiveCompletion` once, after its last element, unless the subscription was cancelled first.
  ///
  /// ```swift
  /// let subscription = prices.sink { completion in
  ///   if case .failure(let error) = completion { log(error) }
  /// } receiveValue: { price in
  ///   await chart.append(price)
  /// }
  /// ```
  @inlinable
  public func sink(
    receiveCompletion: @escaping @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void,
    receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void
  ) -> FlowSubscription {
    storage.sink(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
  }
}

extension AsyncShareFlowSequence where Failure == Never {
  /// Writes the replay, then every element of the shared upstream, into `object`'s property at
  /// `keyPath`, on the caller's isolation, holding `object` weakly; starts the upstream as a sink
  /// does, and costs no task while nothing arrives.
  ///
  /// ```swift
  /// prices.assignFlow(to: \.latest, on: ticker).store(in: &subscriptions)
  /// ```
  @inlinable
  public func assignFlow<Root: AnyObject & Sendable>(
    to keyPath: ReferenceWritableKeyPath<Root, Element>, on object: Root,
    isolation: isolated (any Actor)? = #isolation
  ) -> FlowSubscription {
    storage.assign(to: keyPath, on: object, isolation: isolation)
  }
}
