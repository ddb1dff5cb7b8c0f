import Synchronization

extension AsyncSequence where Element: Sendable {
  /// Reports every event of every iteration to `sink`, one ``FlowTraceEvent`` each: which
  /// iteration (numbered from 1 per sequence), the label, what happened (start, element, finish,
  /// failure, cancel) and when, as a monotonic offset from that iteration's start. It is the
  /// request log that explains a race after the fact: which request, started when, ended how, in
  /// which order. The default sink prints one line per event.
  ///
  /// Cheap when the sink ignores an event: the element is kept as it is, and only described if
  /// the sink asks for the event's `description`.
  ///
  /// ```swift
  /// let queries = Flow<String, Never>.sequence(["sw", "swi"])
  /// let results = queries.switchToLatestFlow { query in
  ///   api.search(query).traceFlow("search \(query)")
  /// }
  /// // [search sw #1 +0.0 seconds] start
  /// // [search sw #1 +0.102 seconds] cancel
  /// // [search swi #1 +0.0 seconds] start ...
  /// ```
  ///
  /// - Parameters:
  ///   - label: Names the sequence in every event.
  ///   - sink: Receives every event, synchronously in the consumer's task.
  public func traceFlow(
    _ label: String, to sink: @escaping @Sendable (FlowTraceEvent) -> Void = { print($0) }
  ) -> AsyncTraceFlowSequence<Self> {
    AsyncTraceFlowSequence(base: self, label: label, sink: sink)
  }
}

/// One event of a traced iteration, as ``_Concurrency/AsyncSequence/traceFlow(_:to:)`` reports it.
///
/// ```swift
/// import Synchronization
///
/// let events = Mutex<[FlowTraceEvent]>([])
/// for await _ in Flow.just(1).traceFlow("one", to: { event in events.withLock { $0.append(event) } }) {}
/// // events: start, element 1, finish, all of iteration 1
/// let event = events.withLock { $0[0] }  // the start
/// ```
public struct FlowTraceEvent: Sendable, CustomStringConvertible {
  /// What happened.
  ///
  /// ```swift
  /// if case .failure(let error) = event.kind { print(error) }
  /// ```
  public enum Kind: Sendable {
    /// The consumer asked for the first element.
    case start
    /// An element, on its way to the consumer.
    case element(any Sendable)
    /// The sequence finished.
    case finish
    /// The sequence failed.
    case failure(any Error)
    /// The consumer's task was cancelled, or it stopped iterating before the end.
    case cancel
  }

  /// The iteration it belongs to, counted from 1 for each traced sequence.
  ///
  /// ```swift
  /// #expect(event.iteration == 2)  // the second time the sequence was iterated
  /// ```
  public var iteration: Int
  /// The label given to `traceFlow`.
  ///
  /// ```swift
  /// #expect(event.label == "search")
  /// ```
  public var label: String
  /// What happened.
  ///
  /// ```swift
  /// if case .cancel = event.kind { print("the consumer went away") }
  /// ```
  public var kind: Kind
  /// The time since the iteration's start, on the monotonic `ContinuousClock`.
  ///
  /// ```swift
  /// #expect(event.offset < .seconds(1))
  /// ```
  public var offset: Duration

  /// Creates an event.
  ///
  /// ```swift
  /// let event = FlowTraceEvent(iteration: 1, label: "search", kind: .start, offset: .zero)
  /// ```
  public init(iteration: Int, label: String, kind: Kind, offset: Duration) {
    self.iteration = iteration
    self.label = label
    self.kind = kind
    self.offset = offset
  }

  /// One line: `[label #iteration +offset] event`.
  ///
  /// ```swift
  /// print(event)  // [search #1 +0.104 seconds] element: ["swift"]
  /// ```
  public var description: String {
    let what =
      switch kind {
      case .start: "start"
      case .element(let element): "element: \(element)"
      case .finish: "finish"
      case .failure(let error): "failure: \(error)"
      case .cancel: "cancel"
      }
    return "[\(label) #\(iteration) +\(offset)] \(what)"
  }
}

/// A sequence whose iterations report their events to a sink; made by
/// ``_Concurrency/AsyncSequence/traceFlow(_:to:)``.
///
/// ```swift
/// let traced: AsyncTraceFlowSequence<Flow<Int, Never>> = Flow.sequence([1, 2]).traceFlow("numbers")
/// ```
public struct AsyncTraceFlowSequence<Base: AsyncSequence>: AsyncSequence where Base.Element: Sendable {
  /// The elements it delivers: `Base.Element`.
  public typealias Element = Base.Element
  /// How it can fail: `Base.Failure`.
  public typealias Failure = Base.Failure

  let base: Base
  let label: String
  let sink: @Sendable (FlowTraceEvent) -> Void
  /// Shared by every copy of the sequence, so that iterations are numbered once.
  let iterations = TraceIterationCounter()

  /// Starts an iteration; it is numbered, and its clock started, at its first request.
  ///
  /// ```swift
  /// var iterator = traced.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    let (label, sink, iterations) = (label, sink, iterations)
    return Iterator(
      iteration: ObservedIteration(base: base.makeAsyncIterator()) {
        TraceObserver(label: label, iteration: iterations.next(), sink: sink)
      })
  }

  /// The iterator of an ``AsyncTraceFlowSequence``; releasing it before the end reports `cancel`.
  ///
  /// ```swift
  /// var iterator = traced.makeAsyncIterator()
  /// while let value = await iterator.next() { print(value) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncTraceFlowSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncTraceFlowSequence.Failure

    let iteration: ObservedIteration<Base.AsyncIterator, TraceObserver<Element, Failure>>

    /// The base's next element, traced first.
    ///
    /// ```swift
    /// let value = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await iteration.next(isolation: actor)
    }

    /// Ends what the iterator holds; every step returns `nil` after it.
    ///
    /// ```swift
    /// await iterator._end(isolation: #isolation)
    /// ```
    public mutating func _end(isolation actor: isolated (any Actor)?) async {
      await iteration.end(isolation: actor)
    }
  }
}

/// Numbers the iterations of one traced sequence.
final class TraceIterationCounter: Sendable {
  private let count = Atomic(0)

  func next() -> Int {
    count.wrappingAdd(1, ordering: .relaxed).newValue
  }
}

/// Reports one iteration's events, timed from its start.
struct TraceObserver<Element: Sendable, Failure: Error>: IterationObserver {
  let label: String
  let iteration: Int
  let sink: @Sendable (FlowTraceEvent) -> Void
  let start = ContinuousClock.now

  private func report(_ kind: FlowTraceEvent.Kind) {
    sink(FlowTraceEvent(iteration: iteration, label: label, kind: kind, offset: start.duration(to: .now)))
  }

  func started() { report(.start) }
  // The element is boxed as it is: describing it is left to a sink that prints.
  func element(_ element: Element) { report(.element(element)) }
  func finished() { report(.finish) }
  func failed(_ failure: Failure) { report(.failure(failure)) }
  func cancelled() { report(.cancel) }
}

extension AsyncTraceFlowSequence: Sendable where Base: Sendable {}

@available(*, unavailable)
extension AsyncTraceFlowSequence.Iterator: Sendable {}
