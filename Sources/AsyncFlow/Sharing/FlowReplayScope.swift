/// What a `shareFlow(replay:)` replays once its upstream stopped (the last subscriber left) and
/// started again (a new subscriber came).
///
/// ```swift
/// let lastPrice = api.priceUpdates().shareFlow(replay: 1, replayScope: .acrossRestarts)
/// ```
public struct FlowReplayScope: Sendable, Equatable, CustomStringConvertible {
  @usableFromInline enum Storage: Sendable, Equatable {
    case whileRunning, acrossRestarts
  }

  @usableFromInline let storage: Storage

  /// The replay holds elements of the running iteration only: it is emptied when the upstream
  /// stops, so a subscriber that starts it again gets the new run's elements, none of the old
  /// one's. As RxSwift's `share(replay:scope: .whileConnected)`. The default: the old run's last
  /// elements may be arbitrarily old, and nothing would tell them from new ones.
  ///
  /// ```swift
  /// let prices = api.priceUpdates().shareFlow(replay: 1, replayScope: .whileRunning)
  /// ```
  public static var whileRunning: Self { Self(storage: .whileRunning) }

  /// The replay outlives a stop: a subscriber that starts the upstream again first gets the last
  /// elements of the previous run, then the new run's. As RxSwift's `.forever` and Kotlin's
  /// `shareIn`: for a last known value worth showing while the new run starts (a location, a
  /// profile).
  ///
  /// ```swift
  /// let rows = api.rows().shareFlow(replay: 1, replayScope: .acrossRestarts)   // the last rows while reloading
  /// ```
  public static var acrossRestarts: Self { Self(storage: .acrossRestarts) }

  /// The scope as written in code, as in `.whileRunning`.
  ///
  /// ```swift
  /// print(FlowReplayScope.acrossRestarts)  // .acrossRestarts
  /// ```
  public var description: String { ".\(storage)" }
}
