import AsyncFlow
import AsyncFlowTesting

// The code of the guides' snippets. Each region is copied into its guide by
// `.ci/guide-blocks.py --write` and checked by `.ci/guide-blocks.py` in CI; the functions are
// compiled with the package and run by `GuideSnippetsTests`.

public struct Article: Sendable, Equatable {
  public var title: String
  public init(title: String) { self.title = title }
}

/// A stand-in for a real client, so the snippets compile and run.
public struct ArticlesClient: Sendable {
  public var pages: [[Article]]
  public init(pages: [[Article]]) { self.pages = pages }

  public func articles(page: Int) async throws -> [Article] {
    guard pages.indices.contains(page - 1) else { throw ClientError.notFound }
    return pages[page - 1]
  }

  public func search(_ query: String) -> Flow<[Article], ClientError> {
    Flow { emitter throws(ClientError) in
      if query == "fail" { throw ClientError.notFound }
      await emitter.emit(pages.flatMap { $0 }.filter { $0.title.hasPrefix(query) })
    }
  }
}

public enum ClientError: Error, Equatable { case notFound }

// region: getting-started-flow
/// A cold flow: its body runs once per iteration, when the consumer asks.
public func pages(from client: ArticlesClient) -> Flow<[Article], any Error> {
  Flow { emitter in
    for page in 1...2 { await emitter.emit(try await client.articles(page: page)) }
  }
}
// endregion: getting-started-flow

// region: getting-started-load-state
/// Errors as values: `.loading`, `.loaded(page)` per page, or `.failed(error)` last. The type says
/// the sequence cannot fail.
public func pageStates(from client: ArticlesClient) async -> [LoadState<[Article], any Error>] {
  var states: [LoadState<[Article], any Error>] = []
  for await state in pages(from: client).asLoadState() { states.append(state) }
  return states
}
// endregion: getting-started-load-state

// region: getting-started-catch-inner
/// Catch inside each search, so one failed search does not end the stream of searches.
public func searches(
  _ queries: Flow<String, Never>, client: ArticlesClient
) -> some AsyncSequence<[Article], Never> & Sendable {
  queries
    .map { query in client.search(query) }
    .catchInner { _ in Flow.just([Article]()) }
    .switchToLatestFlow()
}
// endregion: getting-started-catch-inner

// region: flattening-latest-and-first
/// Reads are latest-wins; writes are first-wins.
public func flatteningPolicies(
  queries: PassthroughFlow<String, Never>, payTaps: PassthroughFlow<Void, Never>, client: ArticlesClient,
  pay: @escaping @Sendable () async -> String
) -> (
  results: some AsyncSequence<LoadState<[Article], ClientError>, Never> & Sendable,
  receipts: some AsyncSequence<String, Never> & Sendable
) {
  // Searches: the newest query wins; the stale request is cancelled and can never write.
  let results = queries.switchToLatestFlow { query in client.search(query).asLoadState() }
  // Payments: the first tap wins; later taps are ignored while it runs.
  let receipts = payTaps.exhaustFlow { _ in Flow<String, Never> { emitter in await emitter.emit(await pay()) } }
  return (results, receipts)
}
// endregion: flattening-latest-and-first

// region: time-search-box
/// A search box: wait for the typing to pause, retry transient failures, show states.
public func searchBox<C: Clock>(
  _ text: some AsyncSequence<String, Never> & Sendable, client: ArticlesClient, clock: C
) -> some AsyncSequence<LoadState<[Article], ClientError>, Never> & Sendable where C.Duration == Duration {
  text
    .debounceFlow(for: .milliseconds(300), clock: clock)
    .switchToLatestFlow { query in
      client.search(query)
        .retryWithBackoff(maxRetries: 3, initialDelay: .seconds(1), clock: clock)
        .asLoadState()
    }
}
// endregion: time-search-box

// region: flattening-stop-early
/// A fan-out that stops at the first ten results: the searches still running are cancelled, and
/// `collectWhile` returns only once they have ended, so no backend call outlives the handler.
public func firstTen(
  of queries: [String], client: ArticlesClient
) async throws(ClientError) -> [Article] {
  var found: [Article] = []
  try await Flow.sequence(queries)
    .mergeFlow(maxConcurrent: 3) { query in client.search(query) }
    .collectWhile { articles in
      found += articles
      return found.count < 10
    }
  return Array(found.prefix(10))
}
// endregion: flattening-stop-early

// region: time-typed-timeout
/// A search with a deadline: the timeout is a case of its own beside the client's typed failure.
public func searchWithin<C: Clock>(
  _ limit: C.Duration, query: String, client: ArticlesClient, clock: C
) async -> String {
  var results = client.search(query).timeoutFlow(after: limit, clock: clock).makeAsyncIterator()
  do throws(FlowTimeoutFailure<ClientError>) {
    return "\(try await results.next()?.count ?? 0) articles"
  } catch {
    switch error {
    case .timedOut: return "The search took too long"
    case .upstream(.notFound): return "Nothing found"
    }
  }
}
// endregion: time-typed-timeout

// region: hot-sources-search-text
/// A text field's callback sends into a subject; a main-actor sink shows the states.
@MainActor
public final class SearchFieldModel {
  public private(set) var state: LoadState<[Article], ClientError> = .idle
  public let searchText = PassthroughFlow<String, Never>()
  private var subscriptions = Set<FlowSubscription>()

  public init(client: ArticlesClient) {
    searchText
      .switchToLatestFlow { client.search($0).asLoadState() }
      .sink { @MainActor [weak self] state in self?.state = state }
      .store(in: &subscriptions)
  }

  /// Called by the text field, on any thread.
  public nonisolated func textChanged(_ text: String) {
    searchText.send(text)
  }
}
// endregion: hot-sources-search-text

// region: testing-debounce-marbles
/// A marble test: the input plays a diagram on a test clock, the output is recorded as one.
public func debounceDiagram() async -> (output: String, pendingSleepers: Int) {
  let marbles = Marbles(tick: .seconds(1))
  let output = await marbles.record(
    marbles.input("a-b----c|").debounceFlow(for: .seconds(2), clock: marbles.clock), ticks: 12)
  return (output, marbles.clock.pendingSleepers)  // "----b---[c|]", 0
}
// endregion: testing-debounce-marbles

// region: testing-gate
/// A gate parks a stub request, so the test can act while the request is in flight.
public func cancelWhileInFlight() async -> Bool {
  let gate = Gate()
  let slots = TaskSlots<String>()
  let search = slots.run("search") {
    await gate.wait()  // the stub request, parked; returns at once when cancelled
  }
  await gate.entered()  // the request is in flight
  slots.cancel("search")
  gate.release()
  await search?.value
  return search?.isCancelled ?? false
}
// endregion: testing-gate

// region: testing-clock-task
/// Code under test runs on the clock's executor; `advance` runs it until it suspends again.
public func timerTicks() async -> [Duration] {
  await withTestClock { clock in
    let ticks = clock.task {
      var offsets: [Duration] = []
      for await tick in Flow.timer(every: .seconds(1), clock: clock).prefix(3) { offsets.append(tick.offset) }
      return offsets
    }
    await clock.advance(by: .seconds(3))
    return await clock.value(of: ticks) ?? []  // [1 s, 2 s, 3 s]
  }
}
// endregion: testing-clock-task
