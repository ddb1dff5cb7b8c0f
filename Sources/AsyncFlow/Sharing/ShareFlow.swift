extension AsyncSequence where Self: Sendable, Element: Sendable {
  /// Shares one iteration of this sequence among many consumers.
  ///
  /// The upstream is iterated once, started by the first subscriber's first `next()`, and
  /// cancelled when the last subscriber leaves (a later subscriber starts it again). Every
  /// subscriber gets the elements sent after it subscribed, each buffered by `bufferingPolicy`; a
  /// late subscriber first gets the last `replay` elements. The upstream's finish or failure
  /// reaches every subscriber; a subscriber that comes after it ends at once.
  ///
  /// ```swift
  /// let prices = api.priceUpdates().shareFlow(replay: 1)
  /// for await price in prices { chart.append(price) }     // in one place
  /// for await price in prices { label.text = "\(price)" } // and in another, one connection
  /// ```
  public func shareFlow(
    replay: Int = 0, bufferingPolicy: FlowBufferingPolicy = .unbounded
  ) -> some AsyncSequence<Element, Failure> & Sendable {
    precondition(replay >= 0, "shareFlow(replay:bufferingPolicy:): replay must be 0 or greater, got \(replay)")
    return ShareSequence(base: self, replay: replay, bufferingPolicy: bufferingPolicy)
  }
}

/// The sequence `shareFlow` returns: each iterator is one subscriber of the shared storage.
struct ShareSequence<Element: Sendable, Failure: Error>: AsyncSequence, Sendable {
  let storage: SubjectStorage<Element, Failure>

  init<Base: AsyncSequence & Sendable>(base: Base, replay: Int, bufferingPolicy: FlowBufferingPolicy)
  where Base.Element == Element, Base.Failure == Failure {
    storage = SubjectStorage(SubjectStateMachine(sharingWith: bufferingPolicy, replayLimit: replay)) {
      storage, generation in
      FlowScheduling.startTask { await storage.iterateUpstream(base, generation: generation) }
    }
  }

  func makeAsyncIterator() -> Iterator {
    Iterator(subscriber: SubjectSubscriber(storage))
  }

  struct Iterator: AsyncIteratorProtocol {
    let subscriber: SubjectSubscriber<Element, Failure>

    mutating func next(isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
      try await subscriber.next(isolation: actor)
    }

    mutating func next() async throws(Failure) -> Element? {
      try await subscriber.next(isolation: nil)
    }
  }
}
