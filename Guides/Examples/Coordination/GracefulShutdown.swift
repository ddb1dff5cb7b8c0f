import AsyncFlow

// region: graceful-shutdown
/// A profile service: lookups joined per user, a refresh per user that the newest request wins,
/// and one live feed of profile changes shared by every subscriber. Everything it starts belongs
/// to one owner, so its shutdown is one call, and a request racing it is refused or awaited.
public final class ProfileService: Sendable {
  private let owner = FlowOwner()
  private let lookups: SingleFlight<String, String, Never>
  private let refreshes: TaskSlots<String>
  private let changes: PassthroughFlow<String, Never>
  private let fetch: @Sendable (String) async -> String

  /// What every subscriber of the live feed gets: the last change first, then each new one.
  public let feed: AsyncShareFlowSequence<String, Never>

  public init(fetch: @escaping @Sendable (String) async -> String) {
    self.fetch = fetch
    lookups = SingleFlight(owner: owner)
    refreshes = TaskSlots(owner: owner)
    changes = PassthroughFlow(owner: owner)
    feed = changes.shareFlow(replay: 1, owner: owner)
  }

  /// One backend call for every request of `user` in flight. `nil`: the caller was cancelled, or
  /// the service is shutting down.
  public func profile(_ user: String) async -> String? {
    await lookups.run(user) { [fetch] in await fetch(user) }
  }

  /// A refresh of `user` that a newer one supersedes; the change goes to the live feed. `nil`:
  /// superseded, cancelled, or refused during the shutdown.
  public func refresh(_ user: String) async -> String? {
    await refreshes.runAndWait(user) { [fetch, changes] in
      let profile = await fetch(user)
      guard !Task.isCancelled else { return nil }
      changes.send(profile)
      return profile
    } ?? nil
  }

  /// On SIGTERM: refuse new requests, cancel what runs, and return once it has ended (the
  /// backend calls, the feed's upstream and its subscribers' deliveries), or after 10 seconds with
  /// what is left.
  public func shutdown(clock: some Clock<Duration> = ContinuousClock()) async -> FlowShutdownReport {
    await owner.shutdown(timeout: .seconds(10), clock: clock)
  }
}
// endregion: graceful-shutdown
