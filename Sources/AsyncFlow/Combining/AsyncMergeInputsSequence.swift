extension Flow where Element == Never, Failure == Never {
  /// The elements of both inputs, as they arrive. Both inputs have one element type and one
  /// `Failure` (give a `Never` input the other's with `setFailureType(to:)`); the first failure
  /// fails the result and cancels the other input. See ``AsyncMergeInputsSequence`` for the rules.
  ///
  /// ```swift
  /// let pushed = PassthroughFlow<Item, APIError>(), polled = PassthroughFlow<Item, APIError>()  // one inbox's feeds
  /// for try await item in Flow.merge(pushed, polled) { print("new:", item.title) }
  /// ```
  ///
  /// Called as `Flow.merge(a, b)`: the `Flow` it is declared on is only a namespace.
  @inlinable
  public static func merge<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable>(_ a: A, _ b: B)
    -> AsyncMergeInputsSequence<A.Element, A.Failure>
  where A.Element: Sendable, B.Element == A.Element, B.Failure == A.Failure {
    AsyncMergeInputsSequence(MergeIteration.make([MergeIteration.pump(a), MergeIteration.pump(b)]))
  }

  /// The elements of three inputs, as they arrive; one element type and one `Failure`. See
  /// ``AsyncMergeInputsSequence`` for the rules.
  ///
  /// ```swift
  /// let taps = Flow.sequence(["tap"]), swipes = Flow.sequence(["swipe"]), keys = Flow.sequence(["key"])
  /// let events = Flow.merge(taps, swipes, keys)  // each event, as it happens
  /// ```
  @inlinable
  public static func merge<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable>(
    _ a: A, _ b: B, _ c: C
  ) -> AsyncMergeInputsSequence<A.Element, A.Failure>
  where
    A.Element: Sendable, B.Element == A.Element, C.Element == A.Element, B.Failure == A.Failure,
    C.Failure == A.Failure
  {
    AsyncMergeInputsSequence(
      MergeIteration.make([MergeIteration.pump(a), MergeIteration.pump(b), MergeIteration.pump(c)]))
  }

  /// The elements of four inputs, as they arrive; one element type and one `Failure`. See
  /// ``AsyncMergeInputsSequence`` for the rules.
  ///
  /// ```swift
  /// let app = Flow.sequence(["launched"]), network = Flow.sequence(["GET /items"])
  /// let database = Flow.sequence(["migrated"]), cache = Flow.sequence(["warmed up"])
  /// let logs = Flow.merge(app, network, database, cache)  // each log line, as it is written
  /// ```
  @inlinable
  public static func merge<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable, D: AsyncSequence & Sendable
  >(
    _ a: A, _ b: B, _ c: C, _ d: D
  ) -> AsyncMergeInputsSequence<A.Element, A.Failure>
  where
    A.Element: Sendable, B.Element == A.Element, C.Element == A.Element, D.Element == A.Element,
    B.Failure == A.Failure, C.Failure == A.Failure, D.Failure == A.Failure
  {
    AsyncMergeInputsSequence(
      MergeIteration.make([
        MergeIteration.pump(a), MergeIteration.pump(b), MergeIteration.pump(c), MergeIteration.pump(d),
      ]))
  }

  /// The elements of every input of an array, as they arrive; an empty array finishes at once. See
  /// ``AsyncMergeInputsSequence`` for the rules.
  ///
  /// ```swift
  /// let servers = ["eu", "us"].map { name in Flow.just("\(name): up") }  // [Flow<String, Never>]
  /// let statuses = Flow.merge(servers)
  /// ```
  @inlinable
  public static func merge<Input: AsyncSequence & Sendable>(_ inputs: [Input])
    -> AsyncMergeInputsSequence<Input.Element, Input.Failure>
  where Input.Element: Sendable {
    AsyncMergeInputsSequence(MergeIteration.make(inputs.map { MergeIteration.pump($0) }))
  }
}

/// The sequence `Flow.merge` returns: every element of every input, in the order they arrive.
///
/// - Each input runs in a task of its own, started when the consumer first asks for an element.
///   The inputs append to one buffer that holds at most 64 elements per input; an input that finds
///   it full waits until the consumer takes it (the consumer takes everything buffered at once).
/// - It finishes once every input has finished and the buffer is drained.
/// - The first failure of any input cancels the other inputs; the elements buffered before it are
///   delivered, then it is thrown.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended (a dropped iterator: has been cancelled). A cancelled consumer finishes
///   (`nil`), it does not throw.
///
/// Named after what it merges, the inputs given to `Flow.merge`, so that it cannot be taken for
/// ``AsyncMergeFlowSequence``, which `mergeFlow` returns: the merge of the inner sequences that
/// an outer sequence's elements make.
///
/// ```swift
/// let pushed = PassthroughFlow<Item, APIError>(), polled = PassthroughFlow<Item, APIError>()  // one inbox's feeds
/// let merged: AsyncMergeInputsSequence<Item, APIError> = Flow.merge(pushed, polled)
/// for try await item in merged { print("new:", item.title) }
/// ```
public typealias AsyncMergeInputsSequence<Element: Sendable, Failure: Error> = AsyncCombiningFlowSequence<
  _CombiningFlowKind.Merge, Element, Failure
>
