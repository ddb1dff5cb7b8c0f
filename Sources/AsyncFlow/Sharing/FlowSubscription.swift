import Synchronization

/// How a sequence ended, as a sink reports it.
///
/// ```swift
/// let flow = api.rows()
/// let subscription = flow.sink { completion in
///   if case .failure(let error) = completion { print(error) }
/// } receiveValue: { rows in print(rows.count) }
/// ```
public enum FlowCompletion<Failure: Error>: Sendable {
  /// The sequence finished.
  case finished
  /// The sequence failed.
  case failure(Failure)
}

// Each sink has a form for closures that do not await, declared before the `async` one so that
// the type checker tries it first: a plain closure passed where an `async` one is expected costs a
// penalty that the type checker weighs only once it has read the whole chain, and until then it
// keeps every other candidate of the steps before. A main-actor model's eight-step pipeline
// ending in `.sink { @MainActor [weak self] in ... }` took 2.0 s to type-check with only the
// `async` form, 18 ms with this one first (Benchmarks/README.md, "Type-checking time").
extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// ``_Concurrency/AsyncSequence/sink(receiveValue:)-8etd4`` for a closure that does not await (the
  /// usual one), which the type checker settles sooner; the two run alike.
  ///
  /// ```swift
  /// @MainActor final class CountModel {
  ///   var count = 0
  ///   var subscriptions = Set<FlowSubscription>()
  ///   func bind(_ counts: some AsyncSequence<Int, Never> & Sendable) {
  ///     counts.sink { @MainActor [weak self] in self?.count = $0 }.store(in: &subscriptions)
  ///   }
  /// }
  /// ```
  @inlinable
  public func sink(receiveValue: @escaping @Sendable @isolated(any) (Element) -> Void) -> FlowSubscription {
    let receiveValue: @Sendable @isolated(any) (Element) async -> Void = receiveValue
    return sink(receiveValue: receiveValue)
  }

  /// ``_Concurrency/AsyncSequence/sink(receiveCompletion:receiveValue:)-3bwou`` for closures that do not
  /// await.
  ///
  /// ```swift
  /// let done = api.rows().sink { completion in print(completion) } receiveValue: { rows in print(rows.count) }
  /// ```
  @inlinable
  public func sink(
    receiveCompletion: @escaping @Sendable @isolated(any) (FlowCompletion<Failure>) -> Void,
    receiveValue: @escaping @Sendable @isolated(any) (Element) -> Void
  ) -> FlowSubscription {
    let receiveCompletion: @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void = receiveCompletion
    let receiveValue: @Sendable @isolated(any) (Element) async -> Void = receiveValue
    return sink(receiveCompletion: receiveCompletion, receiveValue: receiveValue)
  }

  /// Iterates this sequence at once, in a task the returned subscription owns, calling
  /// `receiveValue` for each element on the closure's own isolation: a `@MainActor` closure can
  /// write main-actor state directly.
  ///
  /// `cancel()` on the subscription, or releasing it, cancels that task. When `cancel()` is called
  /// from the closure's isolation (the main actor, for a `@MainActor` closure), nothing is
  /// delivered after it returns.
  ///
  /// Called on a hot source's own type (`PassthroughFlow`, `CurrentValueFlow`,
  /// `AsyncShareFlowSequence`, or a generic `some HotFlowSource`), ``HotFlowSource``'s `sink` is
  /// chosen instead, with the same promises, no task while nothing arrives (about 340 bytes, against
  /// about 1,600 for a parked task), and registered before `sink` returns. The choice is made at
  /// compile time: through a generic parameter (`some AsyncSequence`, as in the example below) this
  /// `sink` runs. It makes its iterator before it returns, so a hot source at the head of the chain
  /// has its subscriber by then, through every operator but a `shareFlow` between them (which
  /// subscribes at its first subscriber's first `next()`).
  ///
  /// ```swift
  /// @MainActor final class SearchModel {
  ///   var results: [Item] = []
  ///   var subscriptions = Set<FlowSubscription>()
  ///   func bind(_ results: some AsyncSequence<[Item], Never> & Sendable) {
  ///     results.sink { @MainActor [weak self] in self?.results = $0 }.store(in: &subscriptions)
  ///   }
  /// }
  /// ```
  @inlinable
  public func sink(
    receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void
  ) -> FlowSubscription {
    sink(receiveCompletion: { _ in }, receiveValue: receiveValue)
  }

  /// Like ``_Concurrency/AsyncSequence/sink(receiveValue:)-8etd4``, and reports the end (finished or
  /// the failure) to `receiveCompletion`, unless the subscription was cancelled first.
  ///
  /// ```swift
  /// let uploads = PassthroughFlow<Double, APIError>()   // an upload's progress, from 0 to 1
  /// let progress = uploads.sink { completion in
  ///   print(completion)  // .finished or .failure(error)
  /// } receiveValue: { fraction in
  ///   print(fraction)
  /// }
  /// ```
  @inlinable
  public func sink(
    receiveCompletion: @escaping @Sendable @isolated(any) (FlowCompletion<Failure>) async -> Void,
    receiveValue: @escaping @Sendable @isolated(any) (Element) async -> Void
  ) -> FlowSubscription {
    // Inlinable, so that the task's loop is specialized for the chain in the caller's module:
    // generic, each element went through the iterator's witness table, and the iterator and every
    // frame under it of unknown size took a task allocation of its own (`W5.sinkInTask`).
    // The task holds the delivery gate, not the subscription: releasing the subscription must be
    // able to end the task.
    let gate = SinkDeliveryGate()
    // Made here, not in the task: a hot source at the head of the chain has its subscriber when
    // `sink` returns (each operator's iterator makes its upstream's at once), so a value sent
    // right after reaches the sink.
    var iterator = makeAsyncIterator()
    let task = FlowScheduling.startTask {
      do throws(Failure) {
        while let element = try await iterator.next(isolation: nil) {
          guard await gate.deliver(element, to: receiveValue) else { return }
        }
        _ = await gate.deliver(.finished, to: receiveCompletion)
      } catch {
        _ = await gate.deliver(.failure(error), to: receiveCompletion)
      }
    }
    return FlowSubscription(gate: gate, owner: .task(task))
  }
}

/// A running sink: cancel it, or release it, to stop the iteration.
///
/// A sink made on a ``HotFlowSource`` (`PassthroughFlow`, `CurrentValueFlow`,
/// `AsyncShareFlowSequence`; not through a generic `some AsyncSequence`) holds no task while idle:
/// it is a mailbox in the source's subscriber table (about 340 bytes, with this object). A value
/// sent to it waits in the mailbox under the source's buffering policy, and one job drains the
/// mailbox on the closure's isolation, in order, ending when it is empty. Any other sink owns the
/// task that iterates its sequence.
///
/// ```swift
/// let subject = PassthroughFlow<Int, Never>()
/// var subscriptions = Set<FlowSubscription>()
/// subject.sink { print($0) }.store(in: &subscriptions)   // no task until subject.send(_:)
/// subscriptions.removeAll()   // cancels the sink
/// ```
public final class FlowSubscription: Sendable, Hashable {
  @usableFromInline
  enum Owner: Sendable {
    /// A sink on any sequence: the task iterating it.
    case task(Task<Void, Never>)
    /// A sink on a hot source: its mailbox in the source, which has no task while idle.
    case target(any FlowSubscriptionTarget)
  }

  let gate: SinkDeliveryGate
  private let owner: Owner

  @usableFromInline
  init(gate: SinkDeliveryGate, owner: Owner) {
    self.gate = gate
    self.owner = owner
  }

  /// The iterating task of a sink on a sequence that is not a hot source. Internal, not private:
  /// tests wait for it to end.
  var task: Task<Void, Never>? {
    if case .task(let task) = owner { return task }
    return nil
  }

  /// The mailbox of a sink on a hot source. Internal, not private: tests read which receiver it has.
  var target: (any FlowSubscriptionTarget)? {
    if case .target(let target) = owner { return target }
    return nil
  }

  deinit {
    cancel()
    if case .target(let target) = owner { target.forgetDrops() }
  }

  /// How many of this sink's elements its source's buffering policy dropped, because the sink was
  /// slower than the source and its buffer full: the count so far, and the final one once the sink
  /// ended or was cancelled. 0 under `.unbounded`, and for a sink on a sequence that is not a hot
  /// source, which has no buffer of its own (a `bufferFlow` in its chain reports its drops through
  /// its policy's ``FlowBufferingPolicy/onDrop(_:)``).
  ///
  /// ```swift
  /// let ticks = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingNewest(1))
  /// let chart = ticks.sink { @MainActor tick in print(tick) }
  /// for tick in 1...100 { ticks.send(tick) }
  /// print(chart.droppedCount)   // up to 99, as the main actor kept up
  /// ```
  public var droppedCount: Int {
    if case .target(let target) = owner { return target.droppedCount }
    return 0
  }

  /// Cancels the sink: its task, or its mailbox in a hot source (its pending values are dropped,
  /// the task of the drain delivering them is cancelled, and a shared upstream stops if it was the
  /// last subscriber). Either way a `receiveValue` call in progress sees the cancellation. Nothing is
  /// delivered after this returns when it is called from the receiving closure's isolation;
  /// calling it again does nothing.
  ///
  /// ```swift
  /// subscription.cancel()
  /// ```
  public func cancel() {
    gate.close()
    switch owner {
    case .task(let task): task.cancel()
    case .target(let target): target.unsubscribe()
    }
  }

  /// Keeps the subscription alive as long as `set` holds it, as Combine's `AnyCancellable` does.
  ///
  /// ```swift
  /// flow.sink { print($0) }.store(in: &subscriptions)
  /// ```
  public func store(in set: inout Set<FlowSubscription>) {
    set.insert(self)
  }

  /// Identity: two subscriptions are equal only if they are the same one.
  ///
  /// ```swift
  /// #expect(subscription == subscription)
  /// ```
  public static func == (lhs: FlowSubscription, rhs: FlowSubscription) -> Bool {
    lhs === rhs
  }

  /// Hashes the identity.
  ///
  /// ```swift
  /// var seen = Set([subscription])
  /// ```
  public func hash(into hasher: inout Hasher) {
    hasher.combine(ObjectIdentifier(self))
  }
}

/// What a `FlowSubscription` cancels when it has no task: a push subscriber's registration.
@usableFromInline
protocol FlowSubscriptionTarget: AnyObject, Sendable {
  /// Removes the subscriber from its source; its pending values are dropped.
  func unsubscribe()
  /// What the source's buffering policy dropped of the subscriber's elements.
  var droppedCount: Int { get }
  /// The subscription is released: the source forgets the subscriber's count.
  func forgetDrops()
}

/// Decides, on the receiver's isolation, whether a sink may still deliver. An atomic flag, not a
/// lock: it is read before every delivery, and its few bytes count in an idle sink's cost.
@usableFromInline
final class SinkDeliveryGate: Sendable {
  @usableFromInline let isClosed = Atomic(false)

  @usableFromInline init() {}

  func close() {
    isClosed.store(true, ordering: .releasing)
  }

  @inlinable
  var isCancelled: Bool {
    isClosed.load(ordering: .acquiring)
  }

  /// Calls `receive` unless cancelled; returns whether the sink goes on.
  @usableFromInline
  @discardableResult
  func deliver<Value: Sendable>(
    _ value: Value, to receive: @escaping @Sendable @isolated(any) (Value) async -> Void
  ) async -> Bool {
    await deliver(value, to: receive, on: receive.isolation)
  }

  /// Runs on the receiver's isolation, so that the check and the start of `receive` cannot be
  /// separated by a `cancel()` made there.
  private func deliver<Value: Sendable>(
    _ value: Value, to receive: @escaping @Sendable @isolated(any) (Value) async -> Void,
    on isolation: isolated (any Actor)?
  ) async -> Bool {
    guard !isCancelled else { return false }
    await receive(value)
    return !isCancelled
  }
}
