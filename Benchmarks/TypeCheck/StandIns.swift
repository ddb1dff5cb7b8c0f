import AsyncFlow

// The baseline's operators: one signature each, with the result type of the AsyncFlow operator it
// stands in for. A pipeline's baseline is its own text with every AsyncFlow operator renamed to one
// of these (`flow-benchmarks --typecheck` does the renaming), so the ratio of the two is the cost of
// AsyncFlow's overloads (and the standard library's beside them), not of the closures the user
// wrote. Compiled once per run into the module TypeCheckStandIns; not part of any package target.
//
// Labels tell apart the forms of one operator (`oneDebounce(for:)`, `oneDebounce(for:clock:)`):
// the type checker discards a candidate whose labels do not match before it solves anything.

extension AsyncSequence where Self: Sendable, Element: Sendable {
  public func oneMap<T: Sendable>(_ transform: @escaping @Sendable (Element) -> T) -> Flow<T, Failure> {
    Flow(self).map(transform)
  }
  public func oneFilter(_ isIncluded: @escaping @Sendable (Element) -> Bool) -> Flow<Element, Failure> {
    Flow(self).filter(isIncluded)
  }
  public func oneCompactMap<T: Sendable>(
    _ transform: @escaping @Sendable (Element) -> T?
  ) -> Flow<T, Failure> {
    Flow(self).compactMap(transform)
  }
  public func oneDebounce(for interval: Duration) -> AsyncDebounceFlowSequence<Self, ContinuousClock> {
    debounceFlow(for: interval)
  }
  public func oneDebounce<C: Clock>(for interval: C.Duration, clock: C) -> AsyncDebounceFlowSequence<Self, C> {
    debounceFlow(for: interval, clock: clock)
  }
  public func oneRetry<C: Clock>(
    maxRetries: Int, initialDelay: C.Duration, clock: C
  ) -> AsyncRetryWithBackoffSequence<Self, C> where C.Duration == Duration {
    retryWithBackoff(maxRetries: maxRetries, initialDelay: initialDelay, clock: clock)
  }
}

extension AsyncSequence where Element: Equatable & Sendable {
  public func oneRemoveDuplicates() -> AsyncRemoveDuplicatesFlowSequence<Self> { removeDuplicatesFlow() }
}

extension AsyncSequence {
  public func oneScan<Result>(
    _ initial: Result, _ next: @escaping @Sendable (Result, Element) throws(Failure) -> Result
  ) -> AsyncScanFlowSequence<Self, Result> {
    scanFlow(initial, next)
  }
  public func oneAsLoadState() -> AsyncLoadStateSequence<Self> { asLoadState() }
  public func onePrependState(_ element: Element) -> AsyncPrependStateSequence<Self> { prependState(element) }
  public func oneCatchInner<Fallback: AsyncSequence>(
    _ fallback: @escaping @Sendable (Element.Failure) -> Fallback
  ) -> AsyncCatchInnerSequence<Self, Fallback>
  where Element: AsyncSequence, Fallback.Element == Element.Element, Fallback.Failure == Never {
    catchInner(fallback)
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  public func oneSink(receiveValue: @escaping @Sendable @isolated(any) (Element) -> Void) -> FlowSubscription {
    let receiveValue: @Sendable @isolated(any) (Element) async -> Void = receiveValue
    return sink(receiveValue: receiveValue)
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  public func oneAssign<Root: AnyObject & Sendable>(
    to keyPath: ReferenceWritableKeyPath<Root, Element>, on object: Root, isolation: isolated (any Actor)? = #isolation
  ) -> FlowSubscription {
    assignFlow(to: keyPath, on: object, isolation: isolation)
  }
}

extension Flow where Failure == Never {
  public func oneSetFailureType<E: Error>(to failureType: E.Type) -> Flow<Element, E> {
    setFailureType(to: failureType)
  }
}

public func oneCombineLatest<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable>(
  _ a: A, _ b: B
) -> AsyncCombineLatestFlowSequence<(A.Element, B.Element), A.Failure>
where A.Element: Sendable, B.Element: Sendable, B.Failure == A.Failure {
  Flow.combineLatest(a, b)
}

// The flattening operators, one stand-in per failure combination of Guides/Flattening.md's table:
// NE (the outer cannot fail), FF (both fail with one type), FN (only the outer can fail). A
// pipeline's `// baseline:` line says which one stands in for its operator.

extension AsyncSequence where Self: Sendable, Element: Sendable, Failure == Never {
  public func oneSwitchToLatestNE<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    switchToLatestFlow(transform)
  }
  public func oneSwitchToLatestNE<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestByKeyFlowSequence<Self, Key, Inner, Inner.Failure> where Inner.Element: Sendable {
    switchToLatestFlow(by: key, transform)
  }
  public func oneMergeNE<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncMergeFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    mergeFlow(maxConcurrent: maxConcurrent, transform)
  }
  public func oneExhaustNE<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncExhaustFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    exhaustFlow(transform)
  }
}

extension AsyncSequence
where Self: Sendable, Element: AsyncSequence & Sendable, Element.Element: Sendable, Failure == Never {
  public func oneSwitchToLatestNE() -> AsyncSwitchToLatestFlowSequence<Self, Element, Element.Failure> {
    switchToLatestFlow()
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  public func oneMergeFF<Inner: AsyncSequence & Sendable>(
    maxConcurrent: Int = .max, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncMergeFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Failure {
    mergeFlow(maxConcurrent: maxConcurrent, transform)
  }
  public func oneConcatFN<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncConcatFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Never {
    concatFlow(transform)
  }
  public func oneSwitchToLatestFN<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Never {
    switchToLatestFlow(transform)
  }
  public func oneSwitchToLatestFN<Key: Hashable & Sendable, Inner: AsyncSequence & Sendable>(
    by key: @escaping @Sendable (Element) -> Key, _ transform: @escaping @Sendable (Element) -> Inner
  ) -> AsyncSwitchToLatestByKeyFlowSequence<Self, Key, Inner, Failure>
  where Inner.Element: Sendable, Inner.Failure == Never {
    switchToLatestFlow(by: key, transform)
  }
}
