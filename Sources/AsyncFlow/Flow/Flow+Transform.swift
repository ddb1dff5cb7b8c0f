// Each transform has three forms, declared in the order the type checker tries them: a closure
// that neither throws nor awaits (the usual one), one that throws `Failure`, one that awaits. The
// first is there for the type checker: Swift 6.3 does not match a closure against a `throws(Failure)`
// parameter while `Failure` is still unknown (a `Flow` made after a switch whose failure comes from
// its inner), and fell back to the standard library's `async` form, which costs every candidate of
// the chain before it a second look; tried first, it also settles an ordinary chain at once. The
// throwing form is disfavored so that it does not tie with it on a `Flow` that cannot fail.
// Measured in Benchmarks/README.md, "Type-checking time".
extension Flow {
  /// Transforms every element; the closure is fused into this flow's pull, so a chain of
  /// transforms costs no extra iterator or task.
  ///
  /// ```swift
  /// let doubled = Flow.sequence(1...3).map { $0 * 2 }  // 2, 4, 6
  /// ```
  @inlinable
  public func map<T: Sendable>(_ transform: @escaping @Sendable (Element) -> T) -> Flow<T, Failure> {
    map { (element) throws(Failure) -> T in transform(element) }
  }

  /// Keeps the elements for which `isIncluded` returns `true`; fused like ``map(_:)``.
  ///
  /// ```swift
  /// let odd = Flow.sequence(1...5).filter { $0 % 2 == 1 }  // 1, 3, 5
  /// ```
  @inlinable
  public func filter(_ isIncluded: @escaping @Sendable (Element) -> Bool) -> Flow<Element, Failure> {
    compactMap { (element) throws(Failure) -> Element? in isIncluded(element) ? element : nil }
  }

  /// Transforms every element and drops the `nil` results; fused like ``map(_:)``.
  ///
  /// ```swift
  /// let numbers = Flow.sequence(["1", "x", "3"]).compactMap { Int($0) }  // 1, 3
  /// ```
  @inlinable
  public func compactMap<T: Sendable>(_ transform: @escaping @Sendable (Element) -> T?) -> Flow<T, Failure> {
    compactMap { (element) throws(Failure) -> T? in transform(element) }
  }
}

extension Flow {
  /// Transforms every element with a closure that can throw the flow's `Failure`; fused like the
  /// non-throwing form.
  ///
  /// ```swift
  /// let parsed = Flow<String, APIError>.fail(.offline).map { (text) throws(APIError) -> Int in
  ///   guard let number = Int(text) else { throw .offline }
  ///   return number
  /// }
  /// ```
  @_disfavoredOverload
  @inlinable
  public func map<T: Sendable>(_ transform: @escaping @Sendable (Element) throws(Failure) -> T) -> Flow<T, Failure> {
    // An element `T` is never `nil` as a `T?` (an optional `T` is `.some(nil)`): no element dropped.
    compactMap { (element) throws(Failure) -> T? in try transform(element) }
  }

  /// Transforms every element with an asynchronous closure.
  ///
  /// ```swift
  /// let items = Flow.sequence([1, 2]).map { id in await api.item(id) }  // Flow<Item?, Never>
  /// ```
  @inlinable
  public func map<T: Sendable>(
    _ transform: @escaping @Sendable (Element) async throws(Failure) -> T
  ) -> Flow<T, Failure> {
    compactMap { (element) async throws(Failure) -> T? in try await transform(element) }
  }

  /// Keeps the elements for which `isIncluded`, which can throw the flow's `Failure`, returns
  /// `true`; fused like the non-throwing form.
  ///
  /// ```swift
  /// let checked = Flow<Int, APIError>.fail(.offline).filter { (id) throws(APIError) -> Bool in
  ///   guard id >= 0 else { throw .offline }
  ///   return id % 2 == 0
  /// }
  /// ```
  @_disfavoredOverload
  @inlinable
  public func filter(_ isIncluded: @escaping @Sendable (Element) throws(Failure) -> Bool) -> Flow<Element, Failure> {
    compactMap { (element) throws(Failure) -> Element? in try isIncluded(element) ? element : nil }
  }

  /// Keeps the elements for which the asynchronous `isIncluded` returns `true`.
  ///
  /// ```swift
  /// let known = Flow.sequence([1, 2, 3]).filter { await api.item($0) != nil }
  /// ```
  @inlinable
  public func filter(
    _ isIncluded: @escaping @Sendable (Element) async throws(Failure) -> Bool
  ) -> Flow<Element, Failure> {
    compactMap { (element) async throws(Failure) -> Element? in try await isIncluded(element) ? element : nil }
  }

  /// Transforms every element with a closure that can throw the flow's `Failure`, and drops the
  /// `nil` results; fused like the non-throwing form.
  ///
  /// ```swift
  /// let ids = Flow<String, APIError>.fail(.offline).compactMap { (text) throws(APIError) -> Int? in
  ///   guard !text.isEmpty else { throw .offline }
  ///   return Int(text)
  /// }
  /// ```
  @_disfavoredOverload
  @inlinable
  public func compactMap<T: Sendable>(
    _ transform: @escaping @Sendable (Element) throws(Failure) -> T?
  ) -> Flow<T, Failure> {
    let makePull = self.makePull
    return Flow<T, Failure> {
      switch makePull() {
      case .sync(let next):
        return .sync { () throws(Failure) -> T? in
          while let element = try next() {
            if let transformed = try transform(element) { return transformed }
          }
          return nil
        }
      case .async(let upstream):
        // Sound: the new pull owns `upstream` alone. Swift 6.3's region analysis merges the closures
        // bound by one switch over both cases and reports a false race without this.
        nonisolated(unsafe) let next = upstream
        return .async { (actor: isolated (any Actor)?) async throws(Failure) -> T? in
          while let element = try await next(actor) {
            do throws(Failure) {
              if let transformed = try transform(element) { return transformed }
            } catch {
              try await endUpstream(next, actor, error)
            }
          }
          return nil
        }
      case .buffered(let upstreamTake, let upstream):
        // Sound for the same reason: the new pull owns both closures alone.
        nonisolated(unsafe) let take = upstreamTake
        nonisolated(unsafe) let next = upstream
        // A failure of `transform` in `take`, which cannot wait for the upstream's end: held for
        // `next`, which the iterator calls when `take` has nothing, and which ends the upstream.
        nonisolated(unsafe) var failure: Failure?
        return .buffered(
          take: { () throws(Failure) -> T? in
            while let element = try take() {
              do throws(Failure) {
                if let transformed = try transform(element) { return transformed }
              } catch {
                failure = error
                return nil
              }
            }
            return nil
          },
          next: { (actor: isolated (any Actor)?) async throws(Failure) -> T? in
            if let failure = failure.take() { try await endUpstream(next, actor, failure) }
            while let element = try await next(actor) {
              do throws(Failure) {
                if let transformed = try transform(element) { return transformed }
              } catch {
                try await endUpstream(next, actor, error)
              }
            }
            return nil
          })
      case .finished:
        return .finished
      }
    }
  }

  /// Transforms every element with an asynchronous closure and drops the `nil` results.
  ///
  /// ```swift
  /// let items = Flow.sequence([1, 2, 3]).compactMap { await api.item($0) }  // the items that exist
  /// ```
  @inlinable
  public func compactMap<T: Sendable>(
    _ transform: @escaping @Sendable (Element) async throws(Failure) -> T?
  ) -> Flow<T, Failure> {
    let next = asyncPull()
    return Flow<T, Failure> {
      let next = next()
      return .async { (actor: isolated (any Actor)?) async throws(Failure) -> T? in
        while let element = try await next(actor) {
          do throws(Failure) {
            if let transformed = try await transform(element) { return transformed }
          } catch {
            try await endUpstream(next, actor, error)
          }
        }
        return nil
      }
    }
  }

  /// This flow's pulls, seen as asynchronous ones, for stages whose closure may suspend.
  @inlinable
  func asyncPull() -> @Sendable () -> (isolated (any Actor)?) async throws(Failure) -> Element? {
    let makePull = self.makePull
    return {
      switch makePull() {
      case .sync(let upstream):
        // Sound for the same reason as in `compactMap`: the new pull owns `upstream` alone.
        nonisolated(unsafe) let next = upstream
        return { (_: isolated (any Actor)?) async throws(Failure) -> Element? in
          // The iterator only checks cancellation for synchronous pulls; this one is asynchronous.
          guard !Task.isCancelled else { return nil }
          return try next()
        }
      case .async(let next), .buffered(_, let next):
        return next
      case .finished:
        return { (_: isolated (any Actor)?) async throws(Failure) -> Element? in nil }
      }
    }
  }
}

/// A stage's own closure failed while its upstream may still run (a `Flow` body, an operator's
/// tasks): one last pull in a cancelled task (in place, or ``runInCancelledTask(_:)``) ends that
/// work
/// before the failure goes on, so that nothing the iteration started runs when `next()` throws.
@inlinable
func endUpstream<Element: Sendable, Failure: Error>(
  _ next: @escaping (isolated (any Actor)?) async throws(Failure) -> Element?, _ actor: isolated (any Actor)?,
  _ failure: Failure
) async throws(Failure) -> Never {
  if Task.isCancelled {
    _ = try? await next(actor)
  } else {
    let held = HeldForEnd(next)
    await runInCancelledTask { _ = try? await held.value(nil as (any Actor)?) }
  }
  throw failure
}

extension Flow where Failure == Never {
  /// The same flow, typed as one that can fail with `E`, so that it can stand beside flows that can.
  ///
  /// ```swift
  /// let cachedRows = [Item(id: 1, title: "cached")]
  /// let cached: Flow<[Item], APIError> = Flow.just(cachedRows).setFailureType(to: APIError.self)
  /// ```
  @inlinable
  public func setFailureType<E: Error>(to failureType: E.Type) -> Flow<Element, E> {
    // Written through the generic `mapFailure`: a direct conversion of the `throws(Never)` pulls
    // crashes Swift 6.3's SIL generation.
    mapFailure(absurd)
  }
}

extension Flow {
  /// The same flow with its failure transformed, fused into its pull.
  @inlinable
  func mapFailure<E: Error>(_ transform: @escaping @Sendable (Failure) -> E) -> Flow<Element, E> {
    let makePull = self.makePull
    return Flow<Element, E> {
      switch makePull() {
      case .sync(let next):
        return .sync { () throws(E) -> Element? in
          do throws(Failure) { return try next() } catch { throw transform(error) }
        }
      case .async(let upstream):
        // Sound for the same reason as in `compactMap`: the new pull owns `upstream` alone.
        nonisolated(unsafe) let next = upstream
        return .async { (actor: isolated (any Actor)?) async throws(E) -> Element? in
          do throws(Failure) { return try await next(actor) } catch { throw transform(error) }
        }
      case .buffered(let upstreamTake, let upstream):
        // Sound for the same reason: the new pull owns both closures alone.
        nonisolated(unsafe) let take = upstreamTake
        nonisolated(unsafe) let next = upstream
        return .buffered(
          take: { () throws(E) -> Element? in
            do throws(Failure) { return try take() } catch { throw transform(error) }
          },
          next: { (actor: isolated (any Actor)?) async throws(E) -> Element? in
            do throws(Failure) { return try await next(actor) } catch { throw transform(error) }
          })
      case .finished:
        return .finished
      }
    }
  }
}
