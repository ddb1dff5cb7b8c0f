extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Runs `body` for each element, cancelling the `body` still running when a newer element
  /// arrives: Kotlin's `collectLatest`. Returns once the sequence has ended and the last `body`
  /// has finished; throws the sequence's failure. `body` runs on its own isolation, so a
  /// `@MainActor` closure may write main-actor state; it should check `Task.isCancelled` after
  /// each `await` before it writes.
  ///
  /// Built on ``_Concurrency/AsyncSequence/switchToLatestFlow(_:)-95r6u``: an element superseded
  /// before its `body` began never runs `body` at all, and no `body` is still running when
  /// `collectLatest` returns or when the calling task is cancelled (it then returns without throwing).
  ///
  /// ```swift
  /// await model.queries.collectLatest { @MainActor query in
  ///   let found = await api.search(query)
  ///   guard !Task.isCancelled else { return }  // superseded: a newer query is running
  ///   model.results = found
  /// }
  /// ```
  public func collectLatest(_ body: @escaping @Sendable @isolated(any) (Element) async -> Void) async throws(Failure) {
    let runs = switchToLatestFlow { element in
      Flow<Never, Never>(bufferSize: 0) { _ in await body(element) }
    }
    var iterator = runs.makeAsyncIterator()
    while try await iterator.next() != nil {}
  }
}
