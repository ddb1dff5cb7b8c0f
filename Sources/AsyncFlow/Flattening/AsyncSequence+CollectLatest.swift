extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Runs `body` for each element, cancelling the `body` still running when a newer element
  /// arrives: Kotlin's `collectLatest`. Returns once the sequence has ended and the last `body`
  /// has finished; throws the sequence's failure. `body` runs on its own isolation, so a
  /// `@MainActor` closure may write main-actor state; it should check `Task.isCancelled` after
  /// each `await` before it writes.
  ///
  /// Built on ``_Concurrency/AsyncSequence/switchToLatestFlow(_:)``: an element superseded
  /// before its `body` began never runs `body` at all, and no `body` is still running when
  /// `collectLatest` returns or when the calling task is cancelled (it then returns without throwing).
  ///
  /// A failure of the sequence is not a newer element: the `body` of the element delivered just
  /// before it begins all the same, as in Kotlin (`flow { emit(1); throw e }.collectLatest { ... }`
  /// runs the body for 1, then throws `e`). The failure then cancels that `body` if it is still
  /// running, and is thrown once it has ended.
  ///
  /// ```swift
  /// @MainActor final class DetailModel { var item: Item? }
  /// let model = await DetailModel()
  /// let selection = Flow.sequence([1, 2])  // the selected row's id
  /// await selection.collectLatest { @MainActor id in
  ///   let item = await api.item(id)
  ///   guard !Task.isCancelled else { return }  // superseded: a newer row is selected
  ///   model.item = item
  /// }
  /// ```
  public func collectLatest(_ body: @escaping @Sendable @isolated(any) (Element) async -> Void) async throws(Failure) {
    // The failure travels as an element of a key of its own, so that it does not supersede the
    // last element's body (whose task may not have begun: it would never run). Its inner waits
    // until that body has begun, then throws, which ends the operator and cancels the body.
    let runs = CollectLatestEvents(base: self).switchToLatestFlow(by: \.isFailure) {
      event -> Flow<Never, Failure> in
      switch event {
      case .element(let element, let begun):
        return Flow(bufferSize: 0) { _ throws(Failure) in
          begun.fire()
          await body(element)
        }
      case .failed(let failure, let lastBegun):
        return Flow(bufferSize: 0) { _ throws(Failure) in
          // Cancelled (the operator ends: its consumer left) before that body began, which then
          // never will: it fires the signal itself, so that it stops waiting.
          await withTaskCancellationHandler { await lastBegun?.wait() } onCancel: { lastBegun?.fire() }
          throw failure
        }
      }
    }
    var iterator = runs.makeAsyncIterator()
    while try await iterator.next() != nil {}
  }
}

/// The base's elements and its failure, as elements: each element with the signal its `body`
/// fires when it begins, the failure with the signal of the element before it.
struct CollectLatestEvents<Base: AsyncSequence & Sendable>: AsyncSequence, Sendable where Base.Element: Sendable {
  enum Event: Sendable {
    case element(Base.Element, begun: CompletionSignal)
    case failed(Base.Failure, after: CompletionSignal?)

    var isFailure: Bool {
      if case .failed = self { return true }
      return false
    }
  }

  let base: Base

  struct AsyncIterator: AsyncIteratorProtocol {
    var base: Base.AsyncIterator
    var last: CompletionSignal?
    var ended = false

    mutating func next(isolation actor: isolated (any Actor)?) async -> Event? {
      guard !ended else { return nil }
      do throws(Base.Failure) {
        guard let element = try await base.next(isolation: actor) else {
          ended = true
          return nil
        }
        let begun = CompletionSignal()
        last = begun
        return .element(element, begun: begun)
      } catch {
        ended = true
        return .failed(error, after: last)
      }
    }

    mutating func next() async -> Event? {
      await next(isolation: nil)
    }
  }

  func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(base: base.makeAsyncIterator())
  }
}
