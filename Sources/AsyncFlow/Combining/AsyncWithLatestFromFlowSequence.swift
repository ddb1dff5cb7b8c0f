extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Each element of this sequence paired with the latest element of `other`. Elements that come
  /// before `other`'s first are dropped; `other` finishing does not finish the result, `other`
  /// failing fails it. Both have one `Failure` (give a `Never` one the other's with
  /// `setFailureType(to:)`). See ``AsyncWithLatestFromFlowSequence`` for the rules.
  ///
  /// ```swift
  /// let saveTaps = PassthroughFlow<Void, Never>(), draft = CurrentValueFlow("")  // the editor's text
  /// for await (_, text) in saveTaps.withLatestFromFlow(draft) { print("saving", text) }
  /// ```
  ///
  /// - Parameter other: The sequence whose latest element each element is paired with.
  @inlinable
  public func withLatestFromFlow<Other: AsyncSequence & Sendable>(_ other: Other)
    -> AsyncWithLatestFromFlowSequence<(Element, Other.Element), Failure>
  where Other.Element: Sendable, Other.Failure == Failure {
    AsyncWithLatestFromFlowSequence(CombiningIteration.pull(.withLatestFrom, self, other))
  }
}

/// The sequence ``_Concurrency/AsyncSequence/withLatestFromFlow(_:)`` returns: each element of the base
/// paired with the latest element of the other sequence.
///
/// - The base and the other sequence each run in a task of their own, started when the consumer
///   first asks. Each base element is paired with the other's latest as of the moment it is read,
///   so the outputs do not depend on how far the base ran ahead of the consumer: at most 64
///   elements, which the consumer takes in batches. The other is pulled as fast as it produces,
///   keeping only its latest element.
/// - The other is started first, and runs in the caller of the first `next()` until it suspends
///   (or has produced its first element); only then is the base started. So a value the other has
///   at once (a `CurrentValueFlow`, a `Flow.just`-like source that produces without suspending)
///   is its latest before the base's first element, which pairs with it, whatever the scheduling.
///   (Where the OS lacks `Task.immediate`, before macOS 26 and iOS 26, the other is only started
///   first, and such a first element may still be dropped.)
/// - An element of the base that arrives before the other's first element is dropped.
/// - It finishes when the base finishes (the other is cancelled). The other finishing does not
///   finish it: its last element stays the latest.
/// - The first failure of either fails the result when it happens and cancels the other.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended (a dropped iterator: has been cancelled). A cancelled consumer finishes
///   (`nil`), it does not throw.
///
/// ```swift
/// let saveTaps = PassthroughFlow<Void, Never>(), draft = CurrentValueFlow("")  // the editor's text
/// let saves: AsyncWithLatestFromFlowSequence<(Void, String), Never> = saveTaps.withLatestFromFlow(draft)
/// for await (_, text) in saves { print("saving", text) }
/// ```
public typealias AsyncWithLatestFromFlowSequence<Element: Sendable, Failure: Error> = AsyncCombiningFlowSequence<
  _CombiningFlowKind.WithLatestFrom, Element, Failure
>
