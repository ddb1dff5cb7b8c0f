extension Flow where Element == Never, Failure == Never {
  /// The latest of both inputs: the first pair once both have produced, then one pair per element of
  /// either, with the latest of the other. Both inputs have one `Failure` (give a `Never` input the
  /// other's with `setFailureType(to:)`). See ``AsyncCombineLatestFlowSequence`` for the rules.
  ///
  /// ```swift
  /// let email = CurrentValueFlow(""), password = CurrentValueFlow("")  // a sign-up form's fields
  /// for await (email, password) in Flow.combineLatest(email, password) {
  ///   print("can submit:", email.contains("@") && password.count >= 8)
  /// }
  /// ```
  ///
  /// Called as `Flow.combineLatest(a, b)`: the `Flow` it is declared on is only a namespace.
  @inlinable
  public static func combineLatest<A: AsyncSequence & Sendable, B: AsyncSequence & Sendable>(_ a: A, _ b: B)
    -> AsyncCombineLatestFlowSequence<(A.Element, B.Element), A.Failure>
  where A.Element: Sendable, B.Element: Sendable, B.Failure == A.Failure {
    AsyncCombineLatestFlowSequence(CombiningIteration.pull(.combineLatest, a, b))
  }

  /// The latest of three inputs, as a tuple; one `Failure`. See ``AsyncCombineLatestFlowSequence``.
  ///
  /// ```swift
  /// let cart = CurrentValueFlow([Item]()), address = CurrentValueFlow(""), isExpress = CurrentValueFlow(false)
  /// let checkout = Flow.combineLatest(cart, address, isExpress)  // ([Item], String, Bool), on each change
  /// ```
  @inlinable
  public static func combineLatest<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable
  >(
    _ a: A, _ b: B, _ c: C
  ) -> AsyncCombineLatestFlowSequence<(A.Element, B.Element, C.Element), A.Failure>
  where A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, B.Failure == A.Failure, C.Failure == A.Failure {
    AsyncCombineLatestFlowSequence(CombiningIteration.pull(.combineLatest, a, b, c))
  }

  /// The latest of four inputs, as a tuple; one `Failure`. See ``AsyncCombineLatestFlowSequence``.
  ///
  /// ```swift
  /// let query = CurrentValueFlow(""), sort = CurrentValueFlow("title")
  /// let category = CurrentValueFlow<String?>(nil), onlyInStock = CurrentValueFlow(false)
  /// let filters = Flow.combineLatest(query, sort, category, onlyInStock)
  /// ```
  @inlinable
  public static func combineLatest<
    A: AsyncSequence & Sendable, B: AsyncSequence & Sendable, C: AsyncSequence & Sendable, D: AsyncSequence & Sendable
  >(
    _ a: A, _ b: B, _ c: C, _ d: D
  ) -> AsyncCombineLatestFlowSequence<(A.Element, B.Element, C.Element, D.Element), A.Failure>
  where
    A.Element: Sendable, B.Element: Sendable, C.Element: Sendable, D.Element: Sendable, B.Failure == A.Failure,
    C.Failure == A.Failure, D.Failure == A.Failure
  {
    AsyncCombineLatestFlowSequence(CombiningIteration.pull(.combineLatest, a, b, c, d))
  }

  /// The latest of every input of an array, as an array in the inputs' order; one type of input.
  /// An empty array finishes at once. See ``AsyncCombineLatestFlowSequence``.
  ///
  /// ```swift
  /// let balances = [CurrentValueFlow(120), CurrentValueFlow(80)]  // one per account
  /// let latest = Flow.combineLatest(balances)  // [120, 80], then one array per change
  /// ```
  @inlinable
  public static func combineLatest<Input: AsyncSequence & Sendable>(_ inputs: [Input])
    -> AsyncCombineLatestFlowSequence<[Input.Element], Input.Failure>
  where Input.Element: Sendable {
    AsyncCombineLatestFlowSequence(CombiningIteration.pull(.combineLatest, inputs))
  }
}

/// The sequence `Flow.combineLatest` returns: the latest element of every input, each time one changes.
///
/// - Each input runs in a task of its own, started when the consumer first asks, and runs ahead of
///   the consumer by at most 64 elements (kept in order), so that its end or failure is seen when
///   it happens; the consumer takes what they hold in batches (at most 64 per input).
/// - The first output comes once every input has produced, and pairs their first elements. From
///   then on, one output per element of any input, in the order they arrive, with the latest of
///   the others.
/// - An input that finishes without ever producing finishes the result at once (no output can be
///   made); otherwise the result finishes when every input has finished and its elements are used.
/// - The first failure of any input fails the result when it happens and cancels the other inputs;
///   the outputs not yet returned (of elements read ahead) are dropped.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended (a dropped iterator: has been cancelled). A cancelled consumer finishes
///   (`nil`), it does not throw.
///
/// ```swift
/// let email = CurrentValueFlow(""), password = CurrentValueFlow("")
/// let form: AsyncCombineLatestFlowSequence<(String, String), Never> = Flow.combineLatest(email, password)
/// for await (email, password) in form { print("can submit:", email.contains("@") && password.count >= 8) }
/// ```
public typealias AsyncCombineLatestFlowSequence<Element: Sendable, Failure: Error> = AsyncCombiningFlowSequence<
  _CombiningFlowKind.CombineLatest, Element, Failure
>
