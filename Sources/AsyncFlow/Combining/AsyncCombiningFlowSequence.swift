/// The one sequence type behind `Flow.merge`, `Flow.combineLatest`, `Flow.zip` and
/// `withLatestFromFlow`, told apart by `Kind` (`_CombiningFlowKind`): each operator's public name
/// is a typealias of it (``AsyncMergeInputsSequence``, ``AsyncCombineLatestFlowSequence``,
/// ``AsyncZipFlowSequence``, ``AsyncWithLatestFromFlowSequence``), whose documentation gives the
/// rules. The types of the inputs stay inside the iteration it makes, so one type serves every arity.
///
/// ```swift
/// let email = CurrentValueFlow(""), password = CurrentValueFlow("")  // a sign-up form's fields
/// let form: AsyncCombiningFlowSequence<_CombiningFlowKind.CombineLatest, (String, String), Never> =
///   Flow.combineLatest(email, password)
/// ```
public struct AsyncCombiningFlowSequence<Kind, Element: Sendable, Failure: Error>: AsyncSequence, Sendable {
  @usableFromInline let makePull: @Sendable () -> CombiningPull<Element, Failure>

  @inlinable init(_ makePull: @escaping @Sendable () -> CombiningPull<Element, Failure>) {
    self.makePull = makePull
  }

  /// Starts an iteration: the inputs start when the iterator is first asked for an element.
  ///
  /// ```swift
  /// var iterator = form.makeAsyncIterator()  // email and password start at its first next()
  /// ```
  @inlinable public func makeAsyncIterator() -> Iterator {
    Iterator(makePull())
  }

  /// The iterator of a combining sequence; releasing it cancels the inputs. Once the iteration has
  /// ended it lets go of it (and of the inputs), and returns `nil` from then on.
  ///
  /// ```swift
  /// var iterator = Flow.combineLatest(email, password).makeAsyncIterator()
  /// while let output = await iterator.next() { print(output) }
  /// ```
  public struct Iterator: _FlowIterator {
    @usableFromInline var pull: CombiningPull<Element, Failure>?

    @inlinable init(_ pull: @escaping CombiningPull<Element, Failure>) {
      self.pull = pull
    }

    /// The next output, or `nil` once the result finished or the task was cancelled.
    ///
    /// ```swift
    /// let next = try await iterator.next(isolation: #isolation)
    /// ```
    @inlinable public mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      guard let pull else { return nil }
      do {
        guard let element = try await pull(actor) else {
          self.pull = nil
          return nil
        }
        return element
      } catch {
        self.pull = nil
        throw error
      }
    }
  }
}

@available(*, unavailable)
extension AsyncCombiningFlowSequence.Iterator: Sendable {}

/// The operators an ``AsyncCombiningFlowSequence`` is told apart by: public for technical reasons
/// (a public typealias names them), not API. Write the operator's own type instead.
///
/// ```swift
/// let a = Flow.sequence([1, 2]), b = Flow.sequence([10, 20])
/// let zipped: AsyncZipFlowSequence<(Int, Int), Never> = Flow.zip(a, b)  // not _CombiningFlowKind.Zip
/// ```
public enum _CombiningFlowKind {
  /// `Flow.merge`: ``AsyncMergeInputsSequence``.
  ///
  /// ```swift
  /// let merged: AsyncMergeInputsSequence<Int, Never> = Flow.merge(a, b)
  /// ```
  public enum Merge {}
  /// `Flow.combineLatest`: ``AsyncCombineLatestFlowSequence``.
  ///
  /// ```swift
  /// let latest: AsyncCombineLatestFlowSequence<(Int, Int), Never> = Flow.combineLatest(a, b)
  /// ```
  public enum CombineLatest {}
  /// `Flow.zip`: ``AsyncZipFlowSequence``.
  ///
  /// ```swift
  /// let zipped: AsyncZipFlowSequence<(Int, Int), Never> = Flow.zip(a, b)
  /// ```
  public enum Zip {}
  /// `withLatestFromFlow`: ``AsyncWithLatestFromFlowSequence``.
  ///
  /// ```swift
  /// let paired: AsyncWithLatestFromFlowSequence<(Int, Int), Never> = a.withLatestFromFlow(b)
  /// ```
  public enum WithLatestFrom {}
}

/// One iteration's pull function, as ``AsyncCombiningFlowSequence`` holds it: the types of the
/// inputs stay inside the closure, so that one public type serves every arity.
@usableFromInline
typealias CombiningPull<Element, Failure: Error> = (isolated (any Actor)?) async throws(Failure) -> Element?
