extension AsyncSequence {
  /// Turns this sequence into load states: `.loading` first, `.loaded(element)` for each element,
  /// and `.failed(error)` as the last element if it fails. The result cannot fail.
  ///
  /// A sequence that ends because its consumer was cancelled ends without `.failed`: a cancelled
  /// load has nothing to report.
  ///
  /// ```swift
  /// for await state in api.search("swift").asLoadState() {
  ///   print(state)  // LoadState<[Item], SearchError>: .loading, then .loaded(items) or .failed(error)
  /// }
  /// ```
  public func asLoadState() -> AsyncLoadStateSequence<Self> {
    AsyncLoadStateSequence(base: self)
  }
}

/// A sequence of the load states of its base; made by ``_Concurrency/AsyncSequence/asLoadState()``.
///
/// ```swift
/// let sequence: AsyncLoadStateSequence<Flow<Int, AppError>> = Flow.just(1).setFailureType(to: AppError.self).asLoadState()
/// ```
public struct AsyncLoadStateSequence<Base: AsyncSequence>: AsyncSequence {
  /// The elements it delivers: `LoadState<Base.Element, Base.Failure>`.
  public typealias Element = LoadState<Base.Element, Base.Failure>
  /// How it can fail: `Never`.
  public typealias Failure = Never

  let base: Base

  /// Makes an iterator that starts with `.loading`.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator())
  }

  /// The iterator of an ``AsyncLoadStateSequence``.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// while let element = try await iterator.next(isolation: #isolation) { print(element) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncLoadStateSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncLoadStateSequence.Failure

    var base: Base.AsyncIterator?
    var started = false

    /// Returns `.loading` first, then `.loaded` per element, then `.failed` if the base fails.
    ///
    /// ```swift
    /// let element = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async -> Element? {
      guard !Task.isCancelled, var iterator = base else {
        await base.end(isolation: actor)
        return nil
      }
      guard started else {
        started = true
        return .loading
      }
      do throws(Base.Failure) {
        guard let element = try await iterator.next(isolation: actor) else {
          base = nil
          return nil
        }
        base = iterator
        return .loaded(element)
      } catch {
        base = nil
        return Task.isCancelled ? nil : .failed(error)
      }
    }

    /// Ends what the iterator holds; every step returns `nil` after it.
    ///
    /// ```swift
    /// await iterator._end(isolation: #isolation)
    /// ```
    public mutating func _end(isolation actor: isolated (any Actor)?) async {
      await base.end(isolation: actor)
    }
  }
}

extension AsyncLoadStateSequence: Sendable where Base: Sendable {}

@available(*, unavailable)
extension AsyncLoadStateSequence.Iterator: Sendable {}
