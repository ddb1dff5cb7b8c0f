import Observation

@available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *)
extension Flow where Failure == Never {
  /// The values of an `@Observable` model's property, as a flow: its current value first, then
  /// each new value after a change (changes made together come as one), read on the main actor.
  /// Built on Observation's `Observations`.
  ///
  /// The model is held weakly: the flow does not keep it alive, and it ends if it finds the model
  /// gone. A change can no longer come once the model is gone, so end the iteration with the
  /// model: run it in a subscription or a `TaskSlots` slot that the model owns.
  ///
  /// ```swift
  /// @MainActor @Observable private final class SearchModel {
  ///   var query = ""
  ///   var results: LoadState<[Item], SearchError> = .idle
  ///   @ObservationIgnored private var subscriptions = Set<FlowSubscription>()
  ///
  ///   func start() {
  ///     Flow.observing(\.query, on: self)
  ///       .debounceFlow(for: .milliseconds(300))
  ///       .switchToLatestFlow { query in api.search(query).asLoadState() }
  ///       .assignFlow(to: \.results, on: self)
  ///       .store(in: &subscriptions)
  ///   }
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - keyPath: The property to observe.
  ///   - object: The model; held weakly.
  @MainActor
  public static func observing<Root: AnyObject & Sendable>(_ keyPath: KeyPath<Root, Element>, on object: Root) -> Flow {
    // Sound: a key path is an immutable value, and `Observations` applies it on the main actor,
    // where this is called. Swift 6.3 does not infer `Sendable` for a key path to a main-actor
    // property, which is the usual target.
    nonisolated(unsafe) let keyPath = keyPath
    let values = Observations { [weak object] in object?[keyPath: keyPath] }
    return Flow {
      let box = AsyncIteratorBox(values.makeAsyncIterator())
      return .async { (actor: isolated (any Actor)?) async -> Element? in
        // `nil` twice over: the observations ended, or they found the model gone.
        guard let value = await box.next(isolation: actor), let value else { return nil }
        return value
      }
    }
  }
}
