import AsyncFlow

/// One upstream call per profile ID, however many requests ask for it at once.
struct ProfileLookup: Sendable {
  let flights = SingleFlight<String, String, Never>()
  let fetch: @Sendable (String) async -> String

  /// The profile, or `nil` if the request's task was cancelled.
  func profile(_ id: String) async -> String? {
    await flights.run(id) { await fetch(id) }
  }
}
