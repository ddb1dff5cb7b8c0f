extension Flow where Element == Never, Failure == Never {
  /// The elements of both inputs, as they arrive. Both inputs have one element type and one
  /// `Failure` (give a `Never` input the other's with `setFailureType(to:)`); the first failure
  /// fails the result and cancels the other input. See ``AsyncMergedFlowsSequence`` for the rules.
  ///
  /// ```swift
  /// // pushed: Flow<Message, SyncError>, polled: Flow<Message, SyncError>
  /// for try await message in Flow.merge(pushed, polled) { inbox.insert(message) }
  /// ```
  ///
  /// Called as `Flow.merge(a, b)`: the `Flow` it is declared on is only a namespace.
  @inlinable
  public static func merge<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable>(_ a: A, _ b: B)
    -> AsyncMergedFlowsSequence<A.Element, A.Failure>
  where A.Element: Sendable, B.Element == A.Element, B.Failure == A.Failure {
    AsyncMergedFlowsSequence(MergeIteration.make([MergeIteration.pump(a), MergeIteration.pump(b)]))
  }

  /// The elements of three inputs, as they arrive; one element type and one `Failure`. See
  /// ``AsyncMergedFlowsSequence`` for the rules.
  ///
  /// ```swift
  /// let events = Flow.merge(taps, swipes, keys)  // each Flow<UIEvent, Never>
  /// ```
  @inlinable
  public static func merge<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable>(
    _ a: A, _ b: B, _ c: C
  ) -> AsyncMergedFlowsSequence<A.Element, A.Failure>
  where
    A.Element: Sendable, B.Element == A.Element, C.Element == A.Element, B.Failure == A.Failure,
    C.Failure == A.Failure
  {
    AsyncMergedFlowsSequence(
      MergeIteration.make([MergeIteration.pump(a), MergeIteration.pump(b), MergeIteration.pump(c)]))
  }

  /// The elements of four inputs, as they arrive; one element type and one `Failure`. See
  /// ``AsyncMergedFlowsSequence`` for the rules.
  ///
  /// ```swift
  /// let logs = Flow.merge(app, network, database, cache)  // each Flow<LogLine, Never>
  /// ```
  @inlinable
  public static func merge<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable, D: AsyncSequence & Sendable
  >(
    _ a: A, _ b: B, _ c: C, _ d: D
  ) -> AsyncMergedFlowsSequence<A.Element, A.Failure>
  where
    A.Element: Sendable, B.Element == A.Element, C.Element == A.Element, D.Element == A.Element,
    B.Failure == A.Failure, C.Failure == A.Failure, D.Failure == A.Failure
  {
    AsyncMergedFlowsSequence(
      MergeIteration.make([
        MergeIteration.pump(a), MergeIteration.pump(b), MergeIteration.pump(c), MergeIteration.pump(d),
      ]))
  }

  /// The elements of every input of an array, as they arrive; an empty array finishes at once. See
  /// ``AsyncMergedFlowsSequence`` for the rules.
  ///
  /// ```swift
  /// let statuses = Flow.merge(servers.map { $0.status() })  // [Flow<Status, Never>]
  /// ```
  @inlinable
  public static func merge<Input: AsyncSequence & Sendable>(_ inputs: [Input])
    -> AsyncMergedFlowsSequence<Input.Element, Input.Failure>
  where Input.Element: Sendable {
    AsyncMergedFlowsSequence(MergeIteration.make(inputs.map { MergeIteration.pump($0) }))
  }

  /// The elements of every input, as they arrive: the variadic form of ``merge(_:)``,
  /// for five inputs or more of one type.
  ///
  /// ```swift
  /// let all = Flow.merge(a, b, c, d, e)  // each Flow<Int, Never>
  /// ```
  @inlinable
  public static func merge<Input: AsyncSequence & Sendable>(
    _ first: Input, _ second: Input, _ third: Input, _ fourth: Input, _ fifth: Input, _ more: Input...
  ) -> AsyncMergedFlowsSequence<Input.Element, Input.Failure>
  where Input.Element: Sendable {
    merge([first, second, third, fourth, fifth] + more)
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
/// ```swift
/// let merged: AsyncMergedFlowsSequence<Message, SyncError> = Flow.merge(pushed, polled)
/// for try await message in merged { inbox.insert(message) }
/// ```
public typealias AsyncMergedFlowsSequence<Element: Sendable, Failure: Error> = AsyncCombiningFlowSequence<
  _CombiningFlowKind.Merge, Element, Failure
>
