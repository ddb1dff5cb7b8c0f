extension Flow {
  /// A flow that fails with `error` as soon as it is iterated, without elements.
  ///
  /// ```swift
  /// let broken = Flow<Int, APIError>.fail(.offline)
  /// ```
  @inlinable
  public static func fail(_ error: Failure) -> Flow {
    Flow { .sync { () throws(Failure) -> Element? in throw error } }
  }

  /// A flow that finishes at once, without elements.
  ///
  /// ```swift
  /// let nothing = Flow<String, Never>.empty
  /// ```
  @inlinable
  public static var empty: Flow {
    Flow { .finished }
  }
}

extension Flow where Failure == Never {
  /// A flow of one element.
  ///
  /// ```swift
  /// for await greeting in Flow.just("hello") { print(greeting) }
  /// ```
  @inlinable
  public static func just(_ value: Element) -> Flow {
    Flow {
      var delivered = false
      return .sync {
        if delivered { return nil }
        delivered = true
        return value
      }
    }
  }

  /// A flow of the elements of a synchronous sequence, pulled on demand in the consumer's task.
  ///
  /// ```swift
  /// let total = await Flow.sequence(1...100).reduce(0, +)  // 5050
  /// ```
  @inlinable
  public static func sequence<S: Sequence & Sendable>(_ elements: S) -> Flow where S.Element == Element {
    Flow {
      var iterator = elements.makeIterator()
      return .sync { iterator.next() }
    }
  }
}

extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Wraps this sequence in a ``Flow``, keeping its element and failure types.
  ///
  /// ```swift
  /// let flow: Flow<Int, Never> = AsyncStream { $0.yield(1); $0.finish() }.eraseToFlow()
  /// ```
  public func eraseToFlow() -> Flow<Element, Failure> {
    Flow(self)
  }
}

extension Flow {
  /// A flow that makes its sequence only when it is iterated, anew for every iteration: Combine's
  /// `Deferred`. What `make` captures is read when the consumer starts, not when the flow is made.
  ///
  /// ```swift
  /// let started = Flow.deferred { Flow.just(ContinuousClock.now) }  // the time each iteration starts
  /// ```
  public static func deferred<Base: AsyncSequence & Sendable>(_ make: @escaping @Sendable () -> Base) -> Flow
  where Base.Element == Element, Base.Failure == Failure {
    Flow {
      let box = AsyncIteratorBox(make().makeAsyncIterator())
      return .async { (actor: isolated (any Actor)?) async throws(Failure) -> Element? in
        try await box.next(isolation: actor)
      }
    }
  }

  /// A flow of one element: the result of `operation`, called once per iteration when the
  /// consumer asks; if it throws, the flow fails with its error. A request in one expression.
  ///
  /// Unlike Combine's `Future`, which runs once, at once, and replays its result, the call is made
  /// again by every iteration (and so by `retryWithBackoff`). For a result computed once and
  /// shared, keep a `Task` and await its `value`.
  ///
  /// ```swift
  /// let pages = Flow<Int, Never>.sequence([1, 2])
  /// let states = pages.switchToLatestFlow { page in
  ///   Flow.single { () throws(APIError) in try await api.articles(page: page) }.asLoadState()
  /// }
  /// ```
  public static func single(_ operation: @escaping @Sendable () async throws(Failure) -> Element) -> Flow {
    Flow {
      var called = false
      return .async { (actor: isolated (any Actor)?) async throws(Failure) -> Element? in
        guard !called else { return nil }
        called = true
        // Cancelled before the consumer's first request: the call is not made.
        guard !Task.isCancelled else { return nil }
        // An operation that returns or throws although cancelled (a typed-throwing one cannot
        // throw `CancellationError`): a cancelled consumer gets nothing after cancellation.
        do throws(Failure) {
          let element = try await operation()
          return Task.isCancelled ? nil : element
        } catch {
          if Task.isCancelled { return nil }
          throw error
        }
      }
    }
  }
}
