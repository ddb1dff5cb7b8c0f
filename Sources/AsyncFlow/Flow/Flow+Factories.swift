extension Flow {
  /// A flow that fails with `error` as soon as it is iterated, without elements.
  ///
  /// ```swift
  /// let broken = Flow<Int, NetworkError>.fail(.offline)
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
