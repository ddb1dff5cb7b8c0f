import AsyncFlow

/// The network failure the simulated service throws for one query.
public struct NetworkError: Error, Equatable, Sendable, CustomStringConvertible {
  public var query: String
  public var description: String { "network error for \"\(query)\"" }
}

/// A simulated search service: a small catalogue, latencies that make responses return out of
/// order, and one query ("swi") that fails. It runs on any clock.
public struct SearchService<C: Clock>: Sendable where C.Duration == Duration {
  public static var catalogue: [String] { ["swift", "swiftui", "swift-format", "switch", "sweep", "sword", "style"] }
  public static var latencies: [String: Duration] {
    [
      "s": .milliseconds(500), "sw": .milliseconds(150), "swi": .milliseconds(100), "swif": .milliseconds(400),
      "swift": .milliseconds(100),
    ]
  }

  public let clock: C

  public init(clock: C) { self.clock = clock }

  // region: search-service
  /// One request: a cold flow, so `retryWithBackoff` can run it again.
  public func search(_ query: String) -> Flow<[String], NetworkError> {
    Flow { emitter throws(NetworkError) in
      do {
        try await clock.sleep(for: Self.latencies[query] ?? .milliseconds(100))
      } catch {
        return  // cancelled: a superseded request delivers nothing
      }
      if query == "swi" { throw NetworkError(query: query) }
      await emitter.emit(Self.catalogue.filter { $0.hasPrefix(query) })
    }
  }
  // endregion: search-service
}

/// The keystrokes of the demo: what the field holds after each, and when.
public let demoKeystrokes: [(text: String, at: Duration)] = [
  ("s", .zero), ("sw", .milliseconds(300)), ("swi", .milliseconds(600)), ("swif", .milliseconds(900)),
  ("swift", .milliseconds(1200)),
]

/// The typing as a timed cold flow on `clock`.
public func typing<C: Clock>(on clock: C) -> Flow<String, Never> where C.Duration == Duration {
  Flow { emitter in
    let start = clock.now
    for keystroke in demoKeystrokes {
      do { try await clock.sleep(until: start.advanced(by: keystroke.at), tolerance: nil) } catch { return }
      await emitter.emit(keystroke.text)
    }
  }
}

// region: pipeline-a
/// Pipeline A: caught at the end. The first failure ends the whole stream.
public func pipelineA<Terms: AsyncSequence & Sendable, C: Clock>(
  _ terms: Terms, service: SearchService<C>, clock: C
) -> some AsyncSequence<[String], Never> & Sendable
where Terms.Element == String, Terms.Failure == Never, C.Duration == Duration {
  terms
    .debounceFlow(for: .milliseconds(100), clock: clock)
    .switchToLatestFlow { service.search($0) }
    .catch { _ in Flow.just([]) }
}
// endregion: pipeline-a

// region: pipeline-b
/// Pipeline B: caught inside. A failed search shows `.failed`; the next keystroke searches again,
/// and the type says the stream cannot fail.
public func pipelineB<Terms: AsyncSequence & Sendable, C: Clock>(
  _ terms: Terms, service: SearchService<C>, clock: C
) -> some AsyncSequence<LoadState<[String], NetworkError>, Never> & Sendable
where Terms.Element == String, Terms.Failure == Never, C.Duration == Duration {
  terms
    .debounceFlow(for: .milliseconds(100), clock: clock)
    .switchToLatestFlow { query in
      service.search(query)
        .retryWithBackoff(maxRetries: 1, initialDelay: .milliseconds(50), clock: clock)
        .asLoadState()
    }
}
// endregion: pipeline-b

/// One thing a pipeline showed, and when.
public struct DemoEvent: Equatable, Sendable {
  public var at: Duration
  public var shows: String

  public init(at: Duration, shows: String) {
    self.at = at
    self.shows = shows
  }
}

/// What a pipeline shows, in words.
public func describe(_ results: [String]) -> String {
  results.isEmpty ? "no results" : results.joined(separator: ", ")
}

/// What pipeline B shows, in words.
public func describe(_ state: LoadState<[String], NetworkError>) -> String {
  switch state {
  case .idle: "idle"
  case .loading: "loading…"
  case .loaded(let results): describe(results)
  case .failed(let error): "failed: \(error)"
  }
}
