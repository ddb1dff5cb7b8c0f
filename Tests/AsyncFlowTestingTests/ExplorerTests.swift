import AsyncFlow
import AsyncFlowTesting
import Testing

// Small models of the races the explorer must catch, written without AsyncFlow: plain `Task`s on
// the main actor, as app code starts them.

/// Deliberately broken: every query starts its own request, and whichever answer arrives last is
/// shown, even for an older query.
@MainActor
private final class LastAnswerWins {
  private(set) var query = ""
  private(set) var shown = ""
  private let search: @Sendable (String) async -> String

  init(search: @escaping @Sendable (String) async -> String) { self.search = search }

  func type(_ text: String) {
    query = text
    Task { shown = await search(text) }
  }
}

/// Fixed: an answer is shown only if its query is still the current one. A request in flight
/// holds the model weakly, so releasing the screen frees it at once.
@MainActor
private final class CurrentQueryWins {
  private(set) var query = ""
  private(set) var shown = ""
  private let search: @Sendable (String) async -> String

  init(search: @escaping @Sendable (String) async -> String) { self.search = search }

  func type(_ text: String) {
    query = text
    let search = self.search
    Task { [weak self] in
      let answer = await search(text)
      guard let self, self.query == text else { return }
      self.shown = answer
    }
  }
}

private typealias Search = ControlledCalls<String, String>

private func searchExploration<Model: AnyObject>(
  _ make: @escaping @MainActor (@escaping @Sendable (String) async -> String) -> Model,
  type: @escaping @MainActor (Model, String) -> Void, query: @escaping @MainActor (Model) -> String,
  shown: @escaping @MainActor (Model) -> String, queries: [String] = ["s", "sw"]
) -> Exploration<Model> {
  var exploration = Exploration("search") { run in
    let search = Search()  // answers even when cancelled, like a request already sent
    run.answer(search, as: "search") { text in "results for \(text)" }
    return make(run.stub(search))
  }
  for text in queries { exploration = exploration.step("type \(text)") { type($0, text) } }
  return exploration
    .state { "shown '\(shown($0))'" }
    .invariant("shows the results of the current query") { shown($0) == "results for \(query($0))" }
}

private func broken(_ queries: [String] = ["s", "sw"]) -> Exploration<LastAnswerWins> {
  searchExploration(
    LastAnswerWins.init, type: { $0.type($1) }, query: { $0.query }, shown: { $0.shown }, queries: queries)
}

private func fixed(_ queries: [String] = ["s", "sw"]) -> Exploration<CurrentQueryWins> {
  searchExploration(
    CurrentQueryWins.init, type: { $0.type($1) }, query: { $0.query }, shown: { $0.shown }, queries: queries)
}

/// Selecting an item fetches it, and then its image: a request that only the first answer starts.
/// The image is written without checking that the item is still the selected one.
@MainActor
private final class ItemThenImage {
  private(set) var selected = ""
  private(set) var image = ""
  private let item: @Sendable (String) async -> String
  private let imageOf: @Sendable (String) async -> String

  init(item: @escaping @Sendable (String) async -> String, image: @escaping @Sendable (String) async -> String) {
    self.item = item
    self.imageOf = image
  }

  func select(_ id: String) {
    selected = id
    Task {
      let item = await item(id)
      guard selected == id else { return }  // the item is checked...
      image = await imageOf(item)  // ...its image is not
    }
  }
}

// Five minutes: under ThreadSanitizer on two cores its longest tests take most of one when idle.
@Suite("Exploration", .hangGuard)
@MainActor
struct ExplorerTests {
  // MARK: Every answer order

  @Test func theBrokenModelIsCaughtWithItsOrderTimelineAndReplay() async throws {
    let report = await broken().explore()
    let failure = try #require(report.failure)
    #expect(failure.order == "s0 s1 search#1 search#0")
    #expect(failure.problems == ["broken: shows the results of the current query; shown 'results for s'"])
    #expect(failure.timeline.map(\.token) == ["s0", "s1", "search#1", "search#0"])
    #expect(failure.timeline.map(\.isStale) == [false, false, false, true])
    #expect(failure.timeline.last?.wrote == "shown 'results for s'")
    #expect(failure.replay == #"await exploration.replay("s0 s1 search#1 search#0")"#)

    let replayed = await broken().replay(failure.order)
    #expect(replayed.failure == failure)
    #expect(replayed.runs == 1)
  }

  @Test func theFixedModelPassesEveryOrderAndEveryCancellationPoint() async {
    let report = await fixed().explore()
    #expect(report.passed, "\(report)")
    // s0 then s1 come in script order; each answer any time after its call: 3 orders.
    #expect(report.isExhaustive)
    #expect(report.orders == 3)
    #expect(report.sampledOrders == 0)
    // Answers first (s0 search#0 s1 search#1) and entry points first (s0 s1 search#0 search#1):
    // 4 points each; the third order is a seeded one, equal to one of them or not.
    #expect(report.cancellationPoints >= 8)
  }

  @Test func answersThatStartFurtherCallsAreExploredToo() async throws {
    let exploration = Exploration("item then image") { run in
      let items = ControlledCalls<String, String>()
      let images = ControlledCalls<String, String>()
      run.answer(items, as: "item") { id in "item \(id)" }
      run.answer(images, as: "image") { item in "image of \(item)" }
      return ItemThenImage(item: run.stub(items), image: run.stub(images))
    }
    .step("select a") { $0.select("a") }
    .step("select b") { $0.select("b") }
    .state { "image '\($0.image)'" }
    .invariant("shows the selected item's image") { $0.image.isEmpty || $0.image == "image of item \($0.selected)" }
    let failure = try #require(await exploration.explore().failure)
    // The image request for `a` exists only once `a`'s item was answered, and it must come back last.
    #expect(failure.order.hasSuffix("image#0"))
    #expect(failure.timeline.last?.isStale == true)
    #expect(failure.timeline.last?.wrote == "image 'image of item a'")
  }

  @Test func everyOrderOfThreeQueriesIsCountedOnce() async {
    // Three entry points in script order, three calls each answered after its own entry point:
    // 15 orders (1 * 3 * 5: each entry point's answer goes in any gap after it).
    let report = await fixed(["s", "sw", "swi"]).explore(ExplorationBudget(orders: 1_000, cancellationOrders: 0))
    #expect(report.passed, "\(report)")
    #expect(report.isExhaustive && report.orders == 15)
  }

  // MARK: Seeds

  @Test func aSeedGivesTheSameReportTwiceAndSamplesFindWhatTheBoundMissed() async throws {
    // The first order (entry points first, answers oldest first) passes; only samples can fail.
    let budget = ExplorationBudget(orders: 1, samples: 200, seed: 2026)
    let first = await broken(["s", "sw", "swi"]).explore(budget)
    let second = await broken(["s", "sw", "swi"]).explore(budget)
    #expect(first == second)
    let failure = try #require(first.failure)
    #expect(first.sampledOrders >= 1)
    #expect(await broken(["s", "sw", "swi"]).replay(failure.order).failure == failure)

    let passing = await fixed(["s", "sw", "swi"]).explore(ExplorationBudget(orders: 5, samples: 20, seed: 7))
    #expect(passing == (await fixed(["s", "sw", "swi"]).explore(ExplorationBudget(orders: 5, samples: 20, seed: 7))))
    #expect(passing.passed && passing.sampledOrders == 20 && !passing.isExhaustive)
  }

  /// However late the model's tasks get their answers back (a `Task { }` on the main actor returns
  /// from a stub through one hop on the global executor), a failing order replays to the same
  /// report. With two busy cores, 4 replays in 10 differed (a write seen one point late, the model
  /// still alive at the end) until settling waited for answers on their way back.
  @Test func aFailingOrderReplaysToTheSameReportEveryTime() async throws {
    let budget = ExplorationBudget(orders: 1, samples: 200, seed: 2026)
    let failure = try #require(await broken(["s", "sw", "swi"]).explore(budget).failure)
    for replay in 0..<100 {
      let again = await broken(["s", "sw", "swi"]).replay(failure.order).failure
      guard again == failure else {
        Issue.record("replay \(replay) differs:\n\(again.map { "\($0)" } ?? "passed")\nfrom:\n\(failure)")
        return
      }
    }
  }

  // MARK: Cancellation points and the default invariants

  @Test func aCallAnsweredByWhenCancelledIsNeverAnsweredAgain() async {
    @MainActor final class Replaces {
      var task: Task<Void, Never>?
      isolated deinit { task?.cancel() }  // a released screen cancels its search
      var shown = ""
      let search: @Sendable (String) async -> String
      init(search: @escaping @Sendable (String) async -> String) { self.search = search }
      func type(_ text: String) {
        task?.cancel()  // the old request answers "cancelled" at once
        let search = self.search
        task = Task { [weak self] in
          let answer = await search(text)
          guard !Task.isCancelled else { return }
          self?.shown = answer
        }
      }
    }
    let exploration = Exploration("replaces") { run in
      let search = Search(whenCancelled: "cancelled")
      run.answer(search, as: "search") { text in "results for \(text)" }
      return Replaces(search: run.stub(search))
    }
    .step("type s") { $0.type("s") }
    .step("type sw") { $0.type("sw") }
    .invariant("shows the latest") { $0.shown == "results for sw" }
    let report = await exploration.explore()
    #expect(report.passed, "\(report)")
    // s0 s1 search#1, s0 search#0 s1 search#1: the cancelled call is no choice after s1.
    #expect(report.isExhaustive && report.orders == 2)
  }

  @Test func aModelThatWritesAfterItsTaskWasCancelledIsCaught() async throws {
    @MainActor final class IgnoresCancellation {
      var items: [String] = []
      let fetch: @Sendable (Int) async -> [String]
      init(fetch: @escaping @Sendable (Int) async -> [String]) { self.fetch = fetch }
      func load() async { items = await fetch(0) }  // no check: a cancelled load still writes
    }
    let exploration = Exploration("ignores cancellation") { run in
      let fetches = ControlledCalls<Int, [String]>()  // on the wire: answers even when cancelled
      run.answer(fetches, as: "fetch") { _ in ["late"] }
      return IgnoresCancellation(fetch: run.stub(fetches))
    }
    .step("load") { await $0.load() }
    .state { "items \($0.items)" }
    let failure = try #require(await exploration.explore().failure)
    #expect(failure.order == "s0 leave")
    #expect(failure.problems == [#"written after the release (after leaving: answered fetch#0(0)): items [] -> items ["late"]"#])
    #expect(failure.timeline.map(\.action).contains("LEAVE: cancelled 1 running entry point, released the model"))
  }

  @Test func aModelThatCallsAgainAfterTheReleaseIsCaught() async throws {
    @MainActor final class RetriesForever {
      var items: [String] = []
      let fetch: @Sendable (Int) async -> [String]?
      init(fetch: @escaping @Sendable (Int) async -> [String]?) { self.fetch = fetch }
      func load() async {
        // Treats cancellation as one more failure to retry (three tries, so that a stub whose
        // cancelled calls return at once cannot spin the main actor forever).
        for _ in 0..<3 {
          if let page = await fetch(0) {
            items = page
            return
          }
        }
      }
    }
    let exploration = Exploration("retries") { run in
      let fetches = ControlledCalls<Int, [String]?>(whenCancelled: .some(nil))
      run.answer(fetches, as: "fetch") { _ in ["page"] }
      return RetriesForever(fetch: run.stub(fetches))
    }
    .step("load") { await $0.load() }
    let failure = try #require(await exploration.explore().failure)
    #expect(failure.order == "s0 leave")
    // Every retry after the release is a call after it: one, or more once cancelled calls return
    // at once.
    #expect(failure.problems.contains { $0.hasPrefix("called after the release: fetch#1(0)") })
  }

  @Test func aModelKeptAliveByItselfIsCaught() async {
    @MainActor final class KeepsItself {
      var count = 0
      var onChange: (() -> Void)?
      init() { onChange = { self.count += 1 } }  // a cycle: the model never goes
    }
    let report = await Exploration("cycle") { _ in KeepsItself() }.step("change") { $0.onChange?() }.explore()
    #expect(
      report.failure?.problems == [
        "the model is still alive once the run ended and the clock settled: a task or a subscription keeps it"
      ])
  }

  // MARK: Gates and time

  @Test func gatesAndTheClockAreChoicesToo() async {
    @MainActor final class Parses {
      var parsed = false
      let clock: TestClock
      let gate: Gate
      init(clock: TestClock, gate: Gate) { (self.clock, self.gate) = (clock, gate) }
      func parse() async {
        await gate.wait()  // a cancelled task leaves the gate at once...
        guard !Task.isCancelled else { return }  // ...and must not go on as if released
        do {
          try await clock.sleep(until: clock.now.advanced(by: .seconds(2)))
          parsed = true
        } catch {}
      }
    }
    let exploration = Exploration("parse") { run in
      let gate = Gate()
      run.gate(gate, as: "parsing")
      return Parses(clock: run.clock, gate: gate)
    }
    .step("parse") { await $0.parse() }
    .state { "parsed \($0.parsed)" }
    let report = await exploration.explore()
    #expect(report.passed, "\(report)")
    #expect(report.orders == 1 && report.cancellationPoints == 4)
    let unfinished = await exploration.invariant("never") { _ in false }.replay("s0 open:parsing tick tick")
    #expect(unfinished.failure?.timeline.map(\.wrote) == [nil, nil, nil, "parsed true"])
  }

  // MARK: Programmer errors

  @Test func aBudgetBelowOneOrderStops() async {
    await #expect(processExitsWith: .failure) {
      _ = ExplorationBudget(orders: 0)
    }
  }

  @Test func aStubNameThatAnOrderCannotSpellStops() async {
    await #expect(processExitsWith: .failure) {
      final class Nothing {}
      _ = await Exploration { run in
        run.answer(ControlledCalls<Int, Int>(), as: "two words") { $0 }
        return Nothing()
      }.explore()
    }
  }
}

// MARK: Cleanup writes after leaving

/// A feed whose spinner is bound to its slot's running state: when the screen leaves, the
/// slot's run is cancelled and the spinner goes off, while `reload()`, which `.refreshable`
/// awaits, still holds the model until its run has ended. That write after the release is the
/// model's cleanup, and it writes no page: the explorer must pass it.
@MainActor
private final class BoundSpinnerFeed {
  private(set) var items: [String] = []
  private(set) var isLoading = false
  private let slots = TaskSlots<String>()
  private var subscriptions = Set<FlowSubscription>()
  private let fetch: @Sendable (Int) async -> [String]

  init(fetch: @escaping @Sendable (Int) async -> [String]) {
    self.fetch = fetch
  }

  func start() {
    slots.isRunningFlow("feed").assignFlow(to: \.isLoading, on: self).store(in: &subscriptions)
  }

  func reload() async {
    let fetch = self.fetch
    await slots.runAndWait("feed") { @MainActor [weak self] in
      let page = await fetch(0)
      guard let self, !Task.isCancelled else { return }
      self.items = page
    }
  }
}

/// The same feed as first written: `reload() async` keeps the model alive until its answer, then
/// writes the page and turns the spinner off, after the screen left.
@MainActor
private final class LateWritingFeed {
  private(set) var items: [String] = []
  private(set) var isLoading = false
  private let fetch: @Sendable (Int) async -> [String]

  init(fetch: @escaping @Sendable (Int) async -> [String]) { self.fetch = fetch }

  func reload() async {
    isLoading = true
    items = await fetch(0)
    isLoading = false
  }
}

@Suite("The explorer and cleanup writes", .hangGuard)
@MainActor
struct ExplorerCleanupTests {
  private typealias Pages = ControlledCalls<Int, [String]>

  private func boundSpinnerFeed() -> Exploration<BoundSpinnerFeed> {
    Exploration("bound spinner") { run in
      let pages = Pages()  // answers even when cancelled, like a request already sent
      run.answer(pages, as: "pages") { offset in ["page \(offset)"] }
      let model = BoundSpinnerFeed(fetch: run.stub(pages))
      await run.clock.onSchedule { model.start() }
      return model
    }
    .step("appear") { await $0.reload() }
    .step("pull to refresh") { await $0.reload() }
  }

  /// The spinner is declared as cleanup, with the value it goes back to: its going off after
  /// leaving is accepted.
  @Test func aSpinnerDeclaredAsCleanupThatGoesOffOnReleasePasses() async {
    let report = await boundSpinnerFeed()
      .state("items") { $0.items }
      .state("spinner", cleanup: false) { $0.isLoading }
      .invariant("the spinner is off at the end") { !$0.isLoading }
      .explore()
    #expect(report.passed, "\(report)")
    #expect(report.cancellationPoints > 0)
  }

  /// The same spinner as a part not declared as cleanup: going back to its first value after the
  /// release is a write like any other.
  @Test func aPartNotDeclaredThatGoesBackToItsFirstValueFails() async throws {
    let report = await boundSpinnerFeed()
      .state("items") { $0.items }
      .state("spinner") { $0.isLoading }
      .explore()
    let failure = try #require(report.failure)
    #expect(failure.problems.first?.hasPrefix("written after the release") == true, "\(failure)")
    #expect(failure.problems.first?.hasSuffix("items [] spinner true -> items [] spinner false") == true, "\(failure)")
  }

  /// As one string, "items [page 0] spinner true" going to "... spinner false" is a change: the
  /// whole-state form has no part to declare as cleanup.
  @Test func theWholeStateAsOneStringStillFlagsTheSpinner() async throws {
    let report = await boundSpinnerFeed().state { "items \($0.items) spinner \($0.isLoading)" }.explore()
    let failure = try #require(report.failure)
    #expect(failure.problems.first?.hasPrefix("written after the release") == true, "\(failure)")
  }

  /// A spinner declared as cleanup may go to its cleanup value only: a page written after the
  /// release still fails the run, whatever the spinner does.
  @Test func aPageWrittenAfterReleaseStillFails() async throws {
    let exploration = Exploration("late page") { run in
      let pages = Pages()
      run.answer(pages, as: "pages") { offset in ["page \(offset)"] }
      return LateWritingFeed(fetch: run.stub(pages))
    }
    .step("appear") { await $0.reload() }
    .state("items") { $0.items }
    .state("spinner", cleanup: false) { $0.isLoading }
    let report = await exploration.explore()
    let failure = try #require(report.failure)
    #expect(failure.order.hasSuffix("leave"))
    #expect(
      failure.problems.first == "written after the release (after leaving: answered pages#0(0)): "
        + "items [] spinner true -> items [\"page 0\"] spinner false", "\(failure)")
  }

  // MARK: A stale answer that clears an error

  private func staleErrorClear() -> Exploration<ErrorClearingPages> {
    Exploration("stale error clear") { run in
      let pages = ControlledCalls<Int, Result<[String], PageFailure>>()
      run.answer(pages, as: "pages") { page in page == 0 ? .failure(PageFailure(message: "offline")) : .success([]) }
      return ErrorClearingPages(fetch: run.stub(pages))
    }
    .step("load page 0") { await $0.load(page: 0) }
    .step("load page 1") { await $0.load(page: 1) }
  }

  /// Page 0 fails ("offline"), page 1 is loading when the screen leaves; its late answer clears the
  /// error: `error offline -> error nil` after the release, back to the value the model started
  /// with. The stale-failure bug itself, caught in the one-string form.
  @Test func aStaleAnswerThatClearsTheErrorFailsAsOneString() async throws {
    let report = await staleErrorClear()
      .state { "items \($0.items) error \(String(describing: $0.error))" }
      .explore()
    let failure = try #require(report.failure, "\(report)")
    #expect(failure.order.hasSuffix("leave"))
    #expect(
      failure.problems.first?.hasPrefix("written after the release") == true
        && failure.problems.first?.hasSuffix("items [] error Optional(\"offline\") -> items [] error nil") == true,
      "\(failure)")
  }

  /// The same with named parts: the error part goes back to its first value, and is not cleanup.
  @Test func aStaleAnswerThatClearsTheErrorFailsInNamedParts() async throws {
    let report = await staleErrorClear()
      .state("items") { $0.items }
      .state("error") { $0.error }
      .explore()
    let failure = try #require(report.failure, "\(report)")
    #expect(
      failure.problems.first?.hasSuffix("items [] error Optional(\"offline\") -> items [] error nil") == true,
      "\(failure)")
  }
}

private struct PageFailure: Error, CustomStringConvertible {
  var message: String
  var description: String { message }
}

/// Loads pages one after the other, half fixed: a cancelled load shows no failure, but a page
/// that comes after the screen left is still taken, and it clears the error.
@MainActor
private final class ErrorClearingPages {
  private(set) var items: [String] = []
  private(set) var error: String?
  private let fetch: @Sendable (Int) async -> Result<[String], PageFailure>

  init(fetch: @escaping @Sendable (Int) async -> Result<[String], PageFailure>) { self.fetch = fetch }

  func load(page: Int) async {
    switch await fetch(page) {
    case .success(let loaded):
      items += loaded
      error = nil
    case .failure(let failure):
      guard !Task.isCancelled else { return }
      error = failure.message
    }
  }
}
