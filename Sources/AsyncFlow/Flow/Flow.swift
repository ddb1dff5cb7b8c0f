/// A cold asynchronous sequence: every iteration runs its producer anew.
///
/// `Flow` is AsyncFlow's currency type. Build one from a closure that emits values, from a
/// synchronous sequence, or from any other `AsyncSequence`; transform it with its fused `map`,
/// `filter` and `compactMap`, which compose their closures into one stage instead of stacking
/// iterators.
///
/// ```swift
/// let countdown = Flow<Int, Never> { emitter in
///   for tick in (1...3).reversed() { await emitter.emit(tick) }
/// }
/// for await tick in countdown.map({ "T-\($0)" }) { print(tick) }  // T-3, T-2, T-1
/// ```
///
/// `Failure` is the error the flow can end with; a `Flow<Element, Never>` cannot fail, and says
/// so in its type.
///
/// A flow runs in its consumer's context, as Kotlin's Flow runs in its collector's: its body, and
/// every task an operator starts for the iteration (an upstream pump, a timer, an inner), inherit
/// the task-local values and the priority of the task that makes the first `next()`, as a
/// `Task { }` inherits its creator's; a transform runs where its stage is pulled, in that context
/// too. A request ID that a server handler binds around its loop reaches a logging helper inside
/// the `Flow.single` that `switchToLatestFlow` starts for each query:
///
/// ```swift
/// private enum Request { @TaskLocal static var id = "-" }
/// private func log(_ message: String) { print("[\(Request.id)] \(message)") }
///
/// let results = Flow.sequence(["sw", "swift"]).switchToLatestFlow { query in
///   Flow.single {
///     log("searching \(query)")  // [request-42] searching swift
///     return [query]
///   }
/// }
/// await Request.$id.withValue("request-42") {
///   for await found in results { print(found) }
/// }
/// ```
///
/// A value bound inside the body stays there. The hot sources, which serve many subscribers from
/// one upstream, have rules of their own: a share's upstream runs in the context of the subscriber
/// that started it, a subject's sink in its sender's (see <doc:Guarantees>).
public struct Flow<Element: Sendable, Failure: Error>: AsyncSequence, Sendable {
  /// Makes the pull function of one iteration; called once per `makeAsyncIterator()`.
  @usableFromInline
  let makePull: @Sendable () -> FlowPull<Element, Failure>

  @inlinable
  init(makePull: @escaping @Sendable () -> FlowPull<Element, Failure>) {
    self.makePull = makePull
  }

  /// Creates a flow whose elements are emitted by `body`, which runs once per iteration.
  ///
  /// The body starts when the consumer first asks for an element, in a task that the iteration
  /// owns. `emit` suspends the body while `bufferSize` elements are already waiting for the
  /// consumer, so with `bufferSize: 0` the body never runs ahead of what the consumer asked for.
  /// When the consumer stops iterating or its task is cancelled, the body's task is cancelled and
  /// every pending or later `emit` returns at once without delivering.
  ///
  /// ```swift
  /// let pages = Flow<[Item], any Error>(bufferSize: 0) { emitter in
  ///   for number in 1... {
  ///     let page = try await api.articles(page: number)
  ///     if page.isEmpty { return }  // past the last page
  ///     await emitter.emit(page)
  ///   }
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - bufferSize: How many elements the body may run ahead of the consumer. The default, 64,
  ///     lets the consumer take elements in batches; `0` is a strict rendezvous.
  ///   - body: Emits the elements; returning finishes the flow, throwing fails it after the
  ///     elements already emitted have been delivered.
  @inlinable
  public init(
    bufferSize: Int = 64,
    _ body: @escaping @Sendable (FlowEmitter<Element>) async throws(Failure) -> Void
  ) {
    precondition(bufferSize >= 0, "Flow(bufferSize:): bufferSize must be 0 or greater, got \(bufferSize)")
    self.init {
      // Sound: both closures belong to the one iterator that owns this pull. Swift 6.3's region
      // analysis reports a race for a non-Sendable object captured by two closures of one value.
      nonisolated(unsafe) let consumer = BatchConsumer(EmitterBatches(bufferSize: bufferSize, body: body))
      return .buffered(
        take: { () throws(Failure) -> Element? in consumer.takeBuffered() },
        next: { (actor: isolated (any Actor)?) async throws(Failure) -> Element? in
          try await consumer.next(isolation: actor)
        })
    }
  }

  /// Wraps another asynchronous sequence; each iteration of the flow makes a new iterator of
  /// `base` and pulls it in the consumer's own task.
  ///
  /// ```swift
  /// let stream = AsyncStream<Int> { $0.yield(1); $0.finish() }
  /// let flow = Flow(stream)  // Flow<Int, Never>
  /// ```
  public init<Base: AsyncSequence & Sendable>(_ base: Base)
  where Base.Element == Element, Base.Failure == Failure {
    if let flow = base as? Flow {
      self = flow
      return
    }
    self.init {
      let box = AsyncIteratorBox(base.makeAsyncIterator())
      return .async { (actor: isolated (any Actor)?) async throws(Failure) -> Element? in
        try await box.next(isolation: actor)
      }
    }
  }

  /// Makes an iterator that runs this flow's producer from the start.
  ///
  /// ```swift
  /// var iterator = countdown.makeAsyncIterator()
  /// ```
  @inlinable
  public func makeAsyncIterator() -> Iterator {
    Iterator(pull: makePull())
  }

  /// The iterator of one run of a ``Flow``.
  ///
  /// ```swift
  /// var iterator = countdown.makeAsyncIterator()
  /// while let element = try await iterator.next(isolation: #isolation) { print(element) }
  /// ```
  public struct Iterator: AsyncIteratorProtocol {
    @usableFromInline
    var pull: FlowPull<Element, Failure>

    @inlinable
    init(pull: FlowPull<Element, Failure>) {
      self.pull = pull
    }

    /// Returns the next element, running on the caller's isolation: a main-actor consumer pays
    /// no executor hop per element.
    ///
    /// ```swift
    /// let element = try await iterator.next(isolation: #isolation)
    /// ```
    @inlinable @inline(__always)
    public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      // The consumer's cancellation is checked once per element, after it is made: an element made
      // once the task is cancelled (by a fused transform that runs in it and may be what cancelled
      // it, or by an upstream that ignores the cancellation) is never delivered. A synchronous
      // source never suspends: this is also where it notices cancellation.
      do {
        let element: Element?
        switch pull {
        case .sync(let next):
          element = try next()
        case .async(let next):
          element = try await next(actor)
        case .buffered(let take, let next):
          if let buffered = try take() {
            element = buffered
          } else {
            element = try await next(actor)
          }
        case .finished:
          return nil
        }
        guard let element else {
          pull = .finished
          return nil
        }
        guard Task.isCancelled else { return element }
        // A synchronous pull ends here, without going to `endCancelled`: handing that function the
        // pull kept a synchronous chain's closures and boxes alive, where the optimizer otherwise
        // fuses them into the consumer's loop.
        switch pull {
        case .async(let next), .buffered(_, let next):
          pull = .finished
          await Self.end(next, isolation: actor)
        case .sync, .finished:
          pull = .finished
        }
        return nil
      } catch {
        pull = .finished
        throw error
      }
    }

    /// An element came once the consumer was cancelled: it is dropped, and one more pull, in the
    /// cancelled task, ends the upstream's work before `nil`.
    @usableFromInline
    static func end(
      _ next: (isolated (any Actor)?) async throws(Failure) -> Element?, isolation actor: isolated (any Actor)?
    ) async {
      _ = try? await next(actor)
    }

    /// Returns the next element; see ``next(isolation:)``.
    ///
    /// ```swift
    /// let element = try await iterator.next()
    /// ```
    @inlinable
    public mutating func next() async throws(Failure) -> Element? {
      try await next(isolation: nil)
    }
  }
}

@available(*, unavailable)
extension Flow.Iterator: Sendable {}

/// One iteration's way of producing elements. Stages compose these closures, so a chain of
/// `map`/`filter` costs one indirect call per stage and no iterator or task. A pull is never
/// called again after it returned `nil` or threw: ``Flow/Iterator`` guarantees that.
@usableFromInline
enum FlowPull<Element, Failure: Error> {
  /// Never suspends: `Flow.sequence`, `just`, `fail` and the stages built on them.
  case sync(() throws(Failure) -> Element?)
  /// May suspend; runs on the isolation it is given.
  case async((isolated (any Actor)?) async throws(Failure) -> Element?)
  /// May suspend, but often has elements at hand: `take` returns one of those without
  /// suspending (`nil`: none at hand, ask `next`). A batch hand-off (`Flow { emitter in }`) serves
  /// its batch this way, so a chain of stages makes no asynchronous call per element.
  case buffered(take: () throws(Failure) -> Element?, next: (isolated (any Actor)?) async throws(Failure) -> Element?)
  case finished
}

/// Holds the iterator of a wrapped sequence, so that a pull closure can advance it.
final class AsyncIteratorBox<Base: AsyncIteratorProtocol> {
  var base: Base

  init(_ base: Base) {
    self.base = base
  }

  func next(isolation actor: isolated (any Actor)?) async throws(Base.Failure) -> Base.Element? {
    try await base.next(isolation: actor)
  }
}
