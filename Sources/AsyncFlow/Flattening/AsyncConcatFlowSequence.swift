extension AsyncSequence
where Self: Sendable, Element: Sendable {
  /// One after another: maps each element to an inner sequence and runs the inners in order, each after the
  /// previous one finished; none is dropped. For an outer and inner sequences that fail with the same type: the
  /// first failure of either ends the result with it. See ``AsyncConcatFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// // files: Flow<File, UploadError>, api.upload(_:) -> Flow<Progress, UploadError>
  /// let progress = files.concatFlow { file in api.upload(file) }  // Failure == UploadError
  /// ```
  ///
  /// - Parameters:
  ///   - transform: Makes the inner sequence for an element.
  @inlinable
  public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncConcatFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Failure {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: { $0 }, innerFailure: { $0 })
  }

  /// One after another: maps each element to an inner sequence and runs the inners in order, each after the
  /// previous one finished; none is dropped. For inner sequences that cannot fail: the result fails only with the
  /// outer's failure, which cancels the running inner. See ``AsyncConcatFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// // files: Flow<File, any Error>, cache.store(_:) -> Flow<Progress, Never>
  /// let progress = files.concatFlow { file in cache.store(file) }  // Failure == any Error
  /// ```
  ///
  /// - Parameters:
  ///   - transform: Makes the inner sequence for an element.
  @inlinable
  public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncConcatFlowSequence<Self, Inner, Failure> where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: { $0 }, innerFailure: absurd)
  }
}

extension AsyncSequence
where Self: Sendable, Element: Sendable, Failure == Never {
  /// One after another: maps each element to an inner sequence and runs the inners in order, each after the
  /// previous one finished; none is dropped. For an outer sequence that cannot fail: the result fails only with
  /// an inner's failure. See ``AsyncConcatFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// // queued: Flow<File, Never>, api.upload(_:) -> Flow<Progress, UploadError>
  /// let progress = queued.concatFlow { file in api.upload(file) }  // Failure == UploadError
  /// ```
  ///
  /// - Parameters:
  ///   - transform: Makes the inner sequence for an element.
  @inlinable
  public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncConcatFlowSequence<Self, Inner, Inner.Failure> where Inner.Element: Sendable {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: absurd, innerFailure: { $0 })
  }

  /// One after another: maps each element to an inner sequence and runs the inners in order, each after the
  /// previous one finished; none is dropped. For an outer and inner sequences that cannot fail: neither can the
  /// result. See ``AsyncConcatFlowSequence`` for the full rules.
  ///
  /// ```swift
  /// // queued: Flow<File, Never>, cache.store(_:) -> Flow<Progress, Never>
  /// for await step in queued.concatFlow({ file in cache.store(file) }) { bar.progress = step }
  /// ```
  ///
  /// - Parameters:
  ///   - transform: Makes the inner sequence for an element.
  @inlinable
  public func concatFlow<Inner: AsyncSequence & Sendable>(
    _ transform: @escaping @Sendable (Element) async -> Inner
  ) -> AsyncConcatFlowSequence<Self, Inner, Never> where Inner.Element: Sendable, Inner.Failure == Never {
    flattened(.merge(maxConcurrent: 1), transform, outerFailure: absurd, innerFailure: absurd)
  }
}

/// The sequence ``_Concurrency/AsyncSequence/concatFlow(_:)-1w77b`` returns: the elements of each
/// inner sequence in turn, in the base's order.
///
/// - Each element of the base is mapped to an inner sequence; an inner starts when the previous one
///   has finished, so none is dropped and their elements never interleave.
/// - The first failure, of the base or of an inner, ends the sequence with it and cancels the
///   running inner; it finishes when the base and the last inner have finished.
/// - When the iteration ends (finish, failure, cancellation or a dropped iterator), every task it
///   started has ended.
///
/// ```swift
/// let uploads: AsyncConcatFlowSequence<Flow<File, Never>, Flow<Progress, Never>, Never> =
///   queued.concatFlow { file in cache.store(file) }
/// for await progress in uploads { bar.progress = progress }
/// ```
public typealias AsyncConcatFlowSequence<
  Base: AsyncSequence & Sendable, Inner: AsyncSequence & Sendable, Failure: Error
> =
  AsyncFlattenFlowSequence<Base, _FlattenFlowKind.SingleKey, Inner, Failure, _FlattenFlowKind.Concat>
where Base.Element: Sendable, Inner.Element: Sendable
