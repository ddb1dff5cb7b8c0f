import AsyncFlow

/// Runs both pipelines on queries that arrive one line at a time, and calls `show` with each state
/// as it happens: `A: …` for pipeline A (caught at the end) and `B: …` for pipeline B (caught
/// inside), then `A: (stream over)` and `B: (stream over)` when each ends. Returns when the lines
/// have ended and both pipelines with them.
///
/// Reading the lines and showing the states run concurrently: the caller's source of lines may
/// suspend for as long as the user takes to type, and nothing waits for it. (Blocking an actor's
/// thread while reading would stop the states from being shown until the input ended.)
public func runInteractiveSearch<Lines: AsyncSequence & Sendable, C: Clock>(
  _ lines: Lines, service: SearchService<C>, clock: C, show: @escaping @Sendable (String) -> Void
) async where Lines.Element == String, Lines.Failure == Never, C.Duration == Duration {
  // One stream per pipeline, each keeping only the newest text, as a search field does: nothing is
  // lost before a pipeline starts listening, and a pipeline that has died holds one line at most.
  let (queriesA, sendToA) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1))
  let (queriesB, sendToB) = AsyncStream.makeStream(of: String.self, bufferingPolicy: .bufferingNewest(1))
  await withTaskGroup(of: Void.self) { group in
    group.addTask {
      for await results in pipelineA(queriesA, service: service, clock: clock) { show("A: " + describe(results)) }
      show("A: (stream over)")
    }
    group.addTask {
      for await state in pipelineB(queriesB, service: service, clock: clock) { show("B: " + describe(state)) }
      show("B: (stream over)")
    }
    for await line in lines {
      sendToA.yield(line)
      sendToB.yield(line)
    }
    sendToA.finish()
    sendToB.finish()
  }
}
