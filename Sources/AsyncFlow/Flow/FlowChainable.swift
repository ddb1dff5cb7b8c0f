/// A sequence of AsyncFlow's own (what an operator returns, a subject, a share) whose `map`, `filter` and
/// `compactMap` with a closure that neither awaits nor throws continue the chain as a ``Flow``: the closures
/// after an operator are fused into one stage, as on a `Flow`. A closure that awaits or throws goes to the
/// standard library's `AsyncSequence` forms, as before. (A `throws(Failure)` form here would not be chosen
/// after a switch whose `Failure` comes from its inner: Swift 6.3 infers a non-throwing closure's error type
/// as `Never` before it learns the inner's, and then rejects it.)
///
/// The members are written once, here; every public sequence type of the library conforms (``Flow`` has
/// its own, which also take asynchronous closures). They are there for the type checker as much as for
/// the fusion: the standard library's forms take `async` closures, and a chain whose every closure step
/// takes a synchronous one lets the type checker set the other candidates aside at once. Eight ordinary
/// steps through `removeDuplicatesFlow()` and `scanFlow` (the corpus's `mixed8`) type-checked in 141 ms
/// against 14 ms for the same text on swift-async-algorithms; 10 ms against 15 ms with these
/// (Benchmarks/README.md, "Type-checking time").
///
/// ```swift
/// let field = Flow<String, Never>.sequence(["sw", "sw", "swift"])  // what a text field sends
/// let lengths: Flow<Int, Never> = field.removeDuplicatesFlow().map { $0.count }  // 2, 5
/// ```
public protocol FlowChainable: AsyncSequence {}

extension FlowChainable where Self: Sendable, Element: Sendable {
  /// Transforms every element, as a ``Flow`` stage; the closures that follow are fused into it.
  ///
  /// ```swift
  /// let doubled = field.removeDuplicatesFlow().map { $0 + $0 }  // Flow<String, Never>: "swsw", "swiftswift"
  /// ```
  @inlinable
  public func map<T: Sendable>(_ transform: @escaping @Sendable (Element) -> T) -> Flow<T, Failure> {
    Flow(self).map(transform)
  }

  /// Keeps the elements for which `isIncluded` returns `true`, as a ``Flow`` stage.
  ///
  /// ```swift
  /// let long = field.removeDuplicatesFlow().filter { $0.count > 2 }  // Flow<String, Never>: "swift"
  /// ```
  @inlinable
  public func filter(_ isIncluded: @escaping @Sendable (Element) -> Bool) -> Flow<Element, Failure> {
    Flow(self).filter(isIncluded)
  }

  /// Transforms every element and drops the `nil` results, as a ``Flow`` stage.
  ///
  /// ```swift
  /// let initials = field.removeDuplicatesFlow().compactMap { $0.first }  // Flow<Character, Never>: "s", "s"
  /// ```
  @inlinable
  public func compactMap<T: Sendable>(
    _ transform: @escaping @Sendable (Element) -> T?
  ) -> Flow<T, Failure> {
    Flow(self).compactMap(transform)
  }
}

// Every public sequence type of the library. A new one conforms here too: after it, a closure step
// would otherwise take the standard library's `async` form, and the chain before it would type-check
// again at the cost measured above.
extension AsyncBufferFlowSequence: FlowChainable {}
extension AsyncCatchInnerSequence: FlowChainable {}
extension AsyncCatchSequence: FlowChainable {}
extension AsyncCollectFlowSequence: FlowChainable {}
extension AsyncCombiningFlowSequence: FlowChainable {}
extension AsyncDematerializeSequence: FlowChainable {}
extension AsyncFlattenFlowSequence: FlowChainable {}
extension AsyncHandleEventsFlowSequence: FlowChainable {}
extension AsyncLoadStateSequence: FlowChainable {}
extension AsyncMapErrorSequence: FlowChainable {}
extension AsyncMaterializeSequence: FlowChainable {}
extension AsyncPrependStateSequence: FlowChainable {}
extension AsyncRemoveDuplicatesFlowSequence: FlowChainable {}
extension AsyncReplaceErrorSequence: FlowChainable {}
extension AsyncRetryWithBackoffSequence: FlowChainable {}
extension AsyncScanFlowSequence: FlowChainable {}
extension AsyncShareFlowSequence: FlowChainable {}
extension AsyncTimedFlowSequence: FlowChainable {}
extension AsyncTraceFlowSequence: FlowChainable {}
extension CurrentValueFlow: FlowChainable {}
extension PassthroughFlow: FlowChainable {}
