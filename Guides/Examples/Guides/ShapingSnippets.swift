import AsyncFlow

// The code of Guides/ShapingAndObserving.md. Each region is copied into the guide by
// `.ci/guide-blocks.py --write`; the functions are run by `ShapingSnippetsTests`.

// region: shaping-cart
/// A cart's running total after each item, and the analytics events in batches of three: the
/// last, shorter batch is sent too, before the stream ends or fails.
public func cartTotals(_ prices: Flow<Int, Never>) -> AsyncScanFlowSequence<Flow<Int, Never>, Int> {
  prices.scanFlow(0) { total, price in total + price }
}

public func analyticsBatches(_ events: Flow<String, Never>) -> AsyncCollectFlowSequence<Flow<String, Never>> {
  events.collectFlow(count: 3)
}
// endregion: shaping-cart

// region: shaping-queries
/// A search field's text, without repeats: typing "sw", deleting a letter and typing it again
/// does not search for "sw" twice in a row.
public func distinctQueries(_ text: Flow<String, Never>) -> AsyncRemoveDuplicatesFlowSequence<Flow<String, Never>> {
  text.removeDuplicatesFlow()
}
// endregion: shaping-queries

// region: observing-trace
/// Every request of a search, traced: the request log that says which query was started, which
/// was cancelled by a newer one, and which answered, in order.
public func tracedSearches(
  _ queries: Flow<String, Never>, search: @escaping @Sendable (String) async throws(SearchFailure) -> [String],
  log: @escaping @Sendable (FlowTraceEvent) -> Void
) -> some AsyncSequence<LoadState<[String], SearchFailure>, Never> & Sendable {
  queries.switchToLatestFlow { query in
    Flow.single { () throws(SearchFailure) in try await search(query) }
      .traceFlow("search \(query)", to: log)
      .asLoadState()
  }
}

public struct SearchFailure: Error, Equatable {
  public init() {}
}
// endregion: observing-trace

// region: observing-materialize
/// A failure kept as a value, to store or compare: the events of a run, the failure included.
public func recordedRun(_ upload: Flow<Int, SearchFailure>) async -> [FlowEvent<Int, SearchFailure>] {
  var events: [FlowEvent<Int, SearchFailure>] = []
  for await event in upload.materialize() { events.append(event) }
  return events
}

/// ...and replayed later, failing where the recording failed.
public func replay(_ events: [FlowEvent<Int, SearchFailure>]) -> some AsyncSequence<Int, SearchFailure> {
  Flow.sequence(events).dematerialize()
}
// endregion: observing-materialize

// region: observing-handle-events
/// A spinner that is on while a load runs, and off however it ends: finished, failed, or
/// cancelled by the consumer.
public func withSpinner(
  _ load: Flow<[String], SearchFailure>, spinner: @escaping @Sendable (Bool) -> Void
) -> AsyncHandleEventsFlowSequence<Flow<[String], SearchFailure>> {
  load.handleEventsFlow(
    onStart: { spinner(true) }, onFinish: { spinner(false) }, onFailure: { _ in spinner(false) },
    onCancel: { spinner(false) })
}
// endregion: observing-handle-events
