extension Flow where Element == Never, Failure == Never {
  /// Pairs: the n-th pair holds the n-th element of each input; finishes when either input does,
  /// cancelling the other. Both inputs have one `Failure` (give a `Never` input the other's with
  /// `setFailureType(to:)`). See ``AsyncZipFlowSequence`` for the rules.
  ///
  /// ```swift
  /// let requests = PassthroughFlow<String, Never>(), tokens = PassthroughFlow<String, Never>()  // a token each
  /// for await (request, token) in Flow.zip(requests, tokens) { print("send", request, "with", token) }
  /// ```
  ///
  /// Called as `Flow.zip(a, b)`: the `Flow` it is declared on is only a namespace.
  @inlinable
  public static func zip<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable>(_ a: A, _ b: B)
    -> AsyncZipFlowSequence<(A.Element, B.Element), A.Failure>
  where A.Element: Sendable, B.Element: Sendable, B.Failure == A.Failure {
    AsyncZipFlowSequence(CombiningIteration.pull(.zip, a, b))
  }

  /// Triples of the n-th elements of three inputs; one `Failure`. See ``AsyncZipFlowSequence``.
  ///
  /// ```swift
  /// let ids = Flow.sequence([1, 2]), names = Flow.sequence(["Ann", "Bo"]), scores = Flow.sequence([90, 75])
  /// let rows = Flow.zip(ids, names, scores)  // (1, "Ann", 90), then (2, "Bo", 75)
  /// ```
  @inlinable
  public static func zip<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable>(
    _ a: A, _ b: B, _ c: C
  ) -> AsyncZipFlowSequence<(A.Element, B.Element, C.Element), A.Failure>
  where A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, B.Failure == A.Failure, C.Failure == A.Failure {
    AsyncZipFlowSequence(CombiningIteration.pull(.zip, a, b, c))
  }

  /// Quadruples of the n-th elements of four inputs; one `Failure`. See ``AsyncZipFlowSequence``.
  ///
  /// ```swift
  /// let x = Flow.sequence([0.1, 0.2]), y = Flow.sequence([0.5, 0.4]), z = Flow.sequence([9.8, 9.7])
  /// let time = Flow.sequence([0, 10])  // ms
  /// let samples = Flow.zip(x, y, z, time)  // one accelerometer reading each
  /// ```
  @inlinable
  public static func zip<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable, D: AsyncSequence & Sendable
  >(
    _ a: A, _ b: B, _ c: C, _ d: D
  ) -> AsyncZipFlowSequence<(A.Element, B.Element, C.Element, D.Element), A.Failure>
  where
    A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, D.Element: Sendable, B.Failure == A.Failure,
    C.Failure == A.Failure, D.Failure == A.Failure
  {
    AsyncZipFlowSequence(CombiningIteration.pull(.zip, a, b, c, d))
  }

  /// Arrays of the n-th elements of every input of an array, in the inputs' order; one type of
  /// input. An empty array finishes at once. See ``AsyncZipFlowSequence``.
  ///
  /// ```swift
  /// let moves = [Flow.sequence(["e4", "d4"]), Flow.sequence(["e5", "d5"])]  // one per player
  /// let rounds = Flow.zip(moves)  // ["e4", "e5"], then ["d4", "d5"]
  /// ```
  @inlinable
  public static func zip<Input: AsyncSequence & Sendable>(_ inputs: [Input])
    -> AsyncZipFlowSequence<[Input.Element], Input.Failure>
  where Input.Element: Sendable {
    AsyncZipFlowSequence(CombiningIteration.pull(.zip, inputs))
  }
}

/// The sequence `Flow.zip` returns: the n-th output holds the n-th element of every input.
///
/// - Each input runs in a task of its own, started when the consumer first asks, and runs ahead of
///   the consumer by at most 64 elements (kept in order), so that its end or failure is seen when
///   it happens; the consumer takes the complete rows in batches (at most 64).
/// - It finishes as soon as an input has finished and its elements are used (no further output can
///   be made): the other inputs are cancelled, and have ended before `next()` returns `nil`.
/// - The first failure of any input fails the result when it happens and cancels the other inputs;
///   the outputs not yet returned (of elements read ahead) are dropped.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended (a dropped iterator: has been cancelled). A cancelled consumer finishes
///   (`nil`), it does not throw.
///
/// ```swift
/// let requests = PassthroughFlow<String, Never>(), tokens = PassthroughFlow<String, Never>()  // a token each
/// let pairs: AsyncZipFlowSequence<(String, String), Never> = Flow.zip(requests, tokens)
/// for await (request, token) in pairs { print("send", request, "with", token) }
/// ```
public typealias AsyncZipFlowSequence<Element: Sendable, Failure: Error> = AsyncCombiningFlowSequence<
  _CombiningFlowKind.Zip, Element, Failure
>
