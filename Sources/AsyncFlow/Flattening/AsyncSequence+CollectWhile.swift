extension AsyncSequence {
  /// Runs `body` for each element until it returns `false` or the sequence ends, and returns once
  /// everything the iteration started has ended: the tasks of the operators in the chain (the
  /// inners of `mergeFlow`, the timers of `debounceFlow`, ...) and the bodies of the `Flow`s they
  /// run. Throws the sequence's failure, which comes only once its work has ended too.
  ///
  /// Leaving a `for await` loop with `break` cancels that work but does not wait for it: a request
  /// handler would return while backend calls still run. `collectWhile` stops the same way an
  /// operator stops an input it no longer needs (it cancels the iteration and asks it once more,
  /// in a cancelled task), so the answer to that last question comes only after every task has
  /// ended. A cancelled calling task ends the iteration the same way and returns without throwing.
  ///
  /// `body` runs in the caller's isolation, one element at a time, and may touch its state.
  ///
  /// ```swift
  /// let backends = Flow.sequence(["eu", "us", "asia"])
  /// var found: [Item] = []
  /// try await backends
  ///   .mergeFlow(maxConcurrent: 3) { backend in api.search(backend) }
  ///   .collectWhile { items in
  ///     found += items
  ///     return found.count < 10  // enough: stop, and wait for the other searches to end
  ///   }
  /// ```
  public func collectWhile(
    isolation actor: isolated (any Actor)? = #isolation, _ body: nonisolated(nonsending) (Element) async -> Bool
  ) async throws(Failure) {
    var iterator: AsyncIterator? = makeAsyncIterator()
    // nextOrRelease ends the iterator itself when the calling task is cancelled; a finish or a
    // failure has ended the iteration's work already (the failure-lifetime rule).
    while let element = try await iterator.nextOrRelease(isolation: actor) {
      guard await body(element) else {
        await iterator.end(isolation: actor)
        return
      }
    }
  }

  /// The first element that satisfies `predicate`, returned once everything the iteration started
  /// has ended (see ``collectWhile(isolation:_:)``); `nil` when the sequence finishes first or the
  /// calling task is cancelled. Unlike the standard library's `first(where:)`, which returns as
  /// soon as it leaves its loop, no task of the iteration is still running when it returns, and
  /// the failure keeps the sequence's type.
  ///
  /// ```swift
  /// let fastest = try await Flow.sequence(["eu", "us", "asia"])
  ///   .mergeFlow { backend in api.search(backend) }
  ///   .firstFlow { !$0.isEmpty }  // the first non-empty answer; the other searches have ended
  /// ```
  public func firstFlow(
    isolation actor: isolated (any Actor)? = #isolation, where predicate: nonisolated(nonsending) (Element) async -> Bool
  ) async throws(Failure) -> Element? {
    var first: Element?
    try await collectWhile(isolation: actor) { element in
      guard await predicate(element) else { return true }
      first = element
      return false
    }
    return first
  }
}
