extension AsyncSequence {
  /// Ends this sequence with `element` instead of a failure; the result cannot fail.
  ///
  /// As with Combine, the replacement is the last element: the failed sequence does not resume.
  ///
  /// ```swift
  /// let rows = api.rows().replaceError(with: [])  // a sequence whose Failure is Never
  /// ```
  public func replaceError(with element: Element) -> AsyncReplaceErrorSequence<Self> {
    AsyncReplaceErrorSequence(base: self, replacement: element)
  }
}

/// A sequence that ends with a replacement element instead of failing; made by
/// ``_Concurrency/AsyncSequence/replaceError(with:)``.
///
/// ```swift
/// let sequence: AsyncReplaceErrorSequence<Flow<Int, AppError>> = Flow.fail(AppError.offline).replaceError(with: 0)
/// ```
public struct AsyncReplaceErrorSequence<Base: AsyncSequence>: AsyncSequence {
  /// The elements it delivers: `Base.Element`.
  public typealias Element = Base.Element
  /// How it can fail: `Never`.
  public typealias Failure = Never

  let base: Base
  let replacement: Element

  /// Makes an iterator over the base that swallows its failure.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// ```
  public func makeAsyncIterator() -> Iterator {
    Iterator(base: base.makeAsyncIterator(), replacement: replacement)
  }

  /// The iterator of an ``AsyncReplaceErrorSequence``.
  ///
  /// ```swift
  /// var iterator = sequence.makeAsyncIterator()
  /// while let element = try await iterator.next(isolation: #isolation) { print(element) }
  /// ```
  public struct Iterator: _SerialFlowIterator {
    /// The elements it delivers: the sequence's.
    public typealias Element = AsyncReplaceErrorSequence.Element
    /// How it can fail: as the sequence.
    public typealias Failure = AsyncReplaceErrorSequence.Failure

    var base: Base.AsyncIterator?
    let replacement: Element

    /// Returns the next element of the base, or the replacement once the base has failed.
    ///
    /// ```swift
    /// let element = try await iterator.next(isolation: #isolation)
    /// ```
    public mutating func _step(isolation actor: isolated (any Actor)?) async -> Element? {
      do throws(Base.Failure) {
        return try await base.nextUnlessCancelled(isolation: actor)
      } catch {
        return Task.isCancelled ? nil : replacement
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

extension AsyncReplaceErrorSequence: Sendable where Base: Sendable, Base.Element: Sendable {}

@available(*, unavailable)
extension AsyncReplaceErrorSequence.Iterator: Sendable {}
