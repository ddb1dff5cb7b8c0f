import AsyncFlow
import AsyncFlowTesting
import Observation
import Testing

/// A view model as an app has it: isolated to the main actor, written by work that runs elsewhere.
@MainActor
private final class Screen {
  private(set) var log: [String] = []
  func record(_ entry: String) { log.append(entry) }
}

@Observable
@MainActor
private final class Field {
  var text = ""
}

@Suite("TestClock settles the main actor too", .hangGuard)
@MainActor
struct MainActorSettlingTests {
  /// Each step hops to the main actor, back to the clock's executor, and to the main actor again:
  /// without main-actor settling, `runCurrent()` returns as soon as the first hop leaves the
  /// executor idle.
  @Test func runCurrentWaitsForMainActorWritesFromATaskOnTheClock() async {
    let clock = TestClock()
    let screen = Screen()
    clock.task {
      for step in 1...3 {
        await screen.record("begin \(step)")
        await Task.yield()  // work on the clock's executor between the two writes
        await screen.record("end \(step)")
      }
    }
    await clock.runCurrent()
    #expect(screen.log == ["begin 1", "end 1", "begin 2", "end 2", "begin 3", "end 3"])
  }

  /// `advance` settles before each firing: the model shows each tick's writes, in order, before the
  /// next tick fires.
  @Test func advanceLetsTheMainActorCatchUpBeforeTheNextSleeperFires() async {
    let clock = TestClock()
    let screen = Screen()
    clock.task {
      for second in 1...5 {
        try? await clock.sleep(until: .init(offset: .seconds(second)))
        await screen.record("tick \(second) at \(clock.now)")
        await Task.yield()
        await screen.record("rendered \(second)")
      }
    }
    await clock.sleepers(count: 1)
    await clock.advance(by: .seconds(2))
    #expect(screen.log == ["tick 1 at 1.0 seconds", "rendered 1", "tick 2 at 2.0 seconds", "rendered 2"])
    await clock.run()
    #expect(screen.log.count == 10)
  }

  /// A `@MainActor` model whose pipeline is built in its initialiser: made inside `onSchedule`, its
  /// operators' tasks run on the clock, and `runCurrent()` waits until the model has the result.
  @Test func aModelMadeOnTheScheduleIsSettledByRunCurrent() async {
    let clock = TestClock()
    let model = await clock.onSchedule { SearchModel() }
    await clock.runCurrent()  // the pipeline has subscribed
    for text in ["s", "sw", "swift"] {
      model.textChanged(text)
      await clock.runCurrent()
      #expect(model.results == ["\(text) result"])
    }
  }

  /// A stub on the schedule, called from a clock task and from a plain main-actor task, with
  /// hundreds of such cases running at once: the return to the model takes several main-actor hops
  /// whose pace depends on the load, and `runCurrent()` still waits for all of them.
  @Test(arguments: 0..<300) func aStubOnTheScheduleIsSettledUnderMainActorLoad(_ case: Int) async {
    let clock = TestClock()
    let gate = Gate()
    let loader = Loader { @MainActor value in
      await clock.onSchedule {
        await gate.wait()
        return value
      }
    }
    clock.task { await loader.load(1) }
    Task { await loader.load(2) }
    await clock.runCurrent()
    #expect(gate.parkedCount == 2)
    gate.release()
    await clock.runCurrent()
    #expect(loader.items.sorted() == [1, 2])
  }

  /// `Observations` as the input: the observed change, the pipeline on the clock and the write back
  /// to the main actor all happen before `runCurrent()` returns.
  @Test func observationsInputIsSettledByRunCurrent() async {
    let clock = TestClock()
    let field = Field()
    let screen = Screen()
    let texts = Observations { field.text }  // evaluated on the main actor, where it is made
    let pipeline = clock.task {
      for await text in texts where !text.isEmpty {
        await screen.record(text)
      }
    }
    await clock.runCurrent()
    for text in ["a", "ab", "abc"] {
      field.text = text
      await clock.runCurrent()
      #expect(screen.log.last == text)
    }
    pipeline.cancel()
    await bounded(pipeline, "pipeline")
  }
}

@MainActor
private final class Loader {
  private(set) var items: [Int] = []
  private let fetch: @Sendable (Int) async -> Int

  init(fetch: @escaping @Sendable (Int) async -> Int) { self.fetch = fetch }

  func load(_ value: Int) async { items.append(await fetch(value)) }
}

@MainActor
private final class SearchModel {
  private(set) var results: [String] = []
  private let text = PassthroughFlow<String, Never>()
  private var subscriptions = Set<FlowSubscription>()

  init() {
    text
      .switchToLatestFlow { text in Flow.sequence(["\(text) result"]) }
      .sink { @MainActor [weak self] result in self?.results = [result] }
      .store(in: &subscriptions)
  }

  func textChanged(_ value: String) { text.send(value) }
}
