import AsyncFlow

/// Runs your model in every order its requests can be answered, and leaves it at every point in
/// between: the orders a race needs, found instead of waited for.
///
/// A scenario is three things: a `model` closure that builds fresh stubs and a fresh model for
/// each run, the entry points the user triggers (``step(_:_:)``, in script order), and what must
/// hold at the end (``invariant(_:_:)``). At each quiescent point (the run's ``TestClock`` settled,
/// every call parked on a ``ControlledCalls`` stub) the explorer chooses what happens next: the
/// next entry point, the answer to one of the waiting calls, a gate, or the clock. So an answer
/// that starts or cancels further calls is explored too, not only the permutations of a fixed set.
///
/// - **Every answer order**: all orders, depth first, up to ``ExplorationBudget/orders``; seeded
///   samples (PCT, as in awslabs/shuttle) beyond it. The invariants are checked after each run.
/// - **Every cancellation point**: for a few orders, the scenario runs once per quiescent point k
///   and leaves the screen at k: the entry points' tasks are cancelled and the model is released.
///   Then, with no help from you: nothing the model shows (``state(_:)``) changes any more, no
///   stub is called again, no call on a stub made with `whenCancelled:` and no gate is still
///   waiting, and once every request on the wire is answered the model is deallocated and no
///   sleeper is left on the clock.
/// - **Seeded and replayable**: the explorer makes every choice itself and waits for quiescence
///   between two, so a `@MainActor` model, whose steps the clock's executor does not run, repeats
///   itself too. A failure names its order and the one line that runs it again.
///
/// ```swift
/// @MainActor private final class HistoryModel {
///   private(set) var items: [String] = []
///   private let fetch: @Sendable (_ offset: Int) async -> Result<[String], any Error>
///   init(fetch: @escaping @Sendable (_ offset: Int) async -> Result<[String], any Error>) { self.fetch = fetch }
///   func refresh() async { if case .success(let page) = await fetch(0) { items = page } }
///   // Appends to whatever the list has become meanwhile: a refresh in between gets a stale page.
///   func loadMore() async { if case .success(let page) = await fetch(items.count) { items += page } }
/// }
///
/// private var exploration: Exploration<HistoryModel> {  // a fresh scenario for each use
///   Exploration("history") { run in
///     let pages = ControlledCalls<Int, Result<[String], any Error>>()
///     run.answer(pages, as: "pages") { offset in .success(["item \(offset)", "item \(offset + 1)"]) }
///     return HistoryModel(fetch: run.stub(pages))
///   }
///   .step("refresh") { await $0.refresh() }
///   .step("load more") { await $0.loadMore() }
///   .step("refresh") { await $0.refresh() }
///   .state { "items \($0.items)" }
///   .invariant("no item twice") { Set($0.items).count == $0.items.count }
/// }
///
/// let report = await exploration.explore()   // or, in a test: await exploration.check()
/// print(report.failure?.replay ?? "passed")
/// ```
///
/// A scenario can be built anywhere; it is explored on the main actor, which must be serviced (it is under Swift Testing, XCTest
/// and an async `main`). Entry points run on the clock's schedule, so the tasks that AsyncFlow
/// starts for them (`TaskSlots`, sinks, operators) are part of each quiescent point; stubs handed
/// over with ``ExplorationRun/stub(_:)`` wait on the clock too.
public struct Exploration<Model: AnyObject> {
  struct StatePart {
    var name: String?
    var read: @MainActor (Model) -> String
    /// The value a part declared as cleanup (``state(_:cleanup:_:)``) may take after a
    /// cancellation point, as text; `nil` for every other part, which may not change there at all.
    var cleanup: String? = nil
  }

  let name: String
  let make: @MainActor (ExplorationRun) async -> Model
  var steps: [(name: String, action: @MainActor (Model) async -> Void)] = []
  var invariants: [(name: String, holds: @MainActor (Model) -> Bool)] = []
  /// What the model shows, part by part: a named part (``state(_:_:)``) or the whole
  /// description (``state(_:)``), each read as text.
  var parts: [StatePart] = []
  var timeStep: Duration = .seconds(1)

  /// A scenario named `name` whose runs each start from the model that `model` builds.
  ///
  /// Build everything fresh in `model`: the stubs (register each with ``ExplorationRun/answer(_:as:with:)``)
  /// and the model itself; start what the screen starts when it appears there, on the run's clock.
  ///
  /// ```swift
  /// let scenario = Exploration("history") { run in
  ///   let pages = ControlledCalls<Int, Result<[String], any Error>>()
  ///   run.answer(pages, as: "pages") { offset in .success(["item \(offset)"]) }
  ///   return HistoryModel(fetch: run.stub(pages))
  /// }
  /// ```
  public init(_ name: String = "scenario", model: @escaping @MainActor (ExplorationRun) async -> Model) {
    self.name = name
    self.make = model
  }

  /// Adds an entry point, run after the ones before it, at whichever quiescent point the explorer
  /// chooses. It runs in a task of its own (the task a view's `.task` or a button gives it), which
  /// a cancellation point cancels.
  ///
  /// ```swift
  /// let scrolling = scenario
  ///   .step("pull to refresh") { model in await model.refresh() }
  ///   .step("scroll to the end") { model in await model.loadMore() }
  /// ```
  public func step(_ name: String, _ action: @escaping @MainActor (Model) async -> Void) -> Self {
    adding { $0.steps.append((name, action)) }
  }

  /// Adds a condition that must hold at the end of every order, once every call was answered and
  /// the clock settled.
  ///
  /// ```swift
  /// let checked = scrolling.invariant("no item twice") { Set($0.items).count == $0.items.count }
  /// ```
  public func invariant(_ name: String, _ holds: @escaping @MainActor (Model) -> Bool) -> Self {
    adding { $0.invariants.append((name, holds)) }
  }

  /// Describes what the model shows, for the timeline of a failure (`wrote ...`), for broken
  /// invariants, and for the check that nothing changes after a cancellation point: any change of
  /// the description after the release fails the run (`written after the release`).
  ///
  /// ```swift
  /// let described = checked.state { "items \($0.items)" }
  /// ```
  public func state(_ describe: @escaping @MainActor (Model) -> String) -> Self {
    adding { $0.parts.append(StatePart(name: nil, read: describe)) }
  }

  /// Adds one part of what the model shows, named `name`: the timeline writes it `name value`.
  ///
  /// After a cancellation point the part may not change, whatever value it writes: a page that
  /// arrives late and is written, an error cleared by an answer nobody waits for, fail the run
  /// (`written after the release`), even when the value written is the one the part started with.
  /// A part that the model does change as its screen leaves (a spinner going off) is declared with
  /// ``state(_:cleanup:_:)``.
  ///
  /// ```swift
  /// @MainActor final class FeedModel {
  ///   var items: [String] = []
  ///   var error: String?
  /// }
  /// let feed = Exploration("feed") { _ in FeedModel() }
  ///   .state("items") { $0.items }
  ///   .state("error") { $0.error }   // a stale answer that clears it fails the run
  /// ```
  public func state<Value>(_ name: String, _ read: @escaping @MainActor (Model) -> Value) -> Self {
    adding { $0.parts.append(StatePart(name: name, read: { "\(read($0))" })) }
  }

  /// Adds one part of what the model shows, named `name`, that is the model's cleanup as its
  /// screen leaves: after a cancellation point it may change to `cleanup`, and to nothing else.
  ///
  /// A spinner bound with `TaskSlots.isRunningFlow(_:)` goes off when the leaving cancels its run;
  /// a loading flag is cleared by the run's `defer`. Declared so, that write passes; a change to
  /// any other value after the release (the spinner turned on by a late answer) still fails the
  /// run, and so does any change of the other parts. Values compare as their descriptions, as the
  /// timeline shows them.
  ///
  /// ```swift
  /// @MainActor final class FeedModel {
  ///   var items: [String] = []
  ///   var isLoading = false   // on while a load runs; off again when the screen leaves
  /// }
  /// let feed = Exploration("feed") { _ in FeedModel() }
  ///   .state("items") { $0.items }
  ///   .state("spinner", cleanup: false) { $0.isLoading }   // may go off after leaving
  /// ```
  public func state<Value>(
    _ name: String, cleanup: Value, _ read: @escaping @MainActor (Model) -> Value
  ) -> Self { adding { $0.parts.append(StatePart(name: name, read: { "\(read($0))" }, cleanup: "\(cleanup)")) } }

  /// How far the clock moves when the explorer chooses time (whenever a task sleeps on the run's
  /// clock); one second unless set.
  ///
  /// ```swift
  /// let debounced = checked.timeStep(.milliseconds(300))  // the debounce interval
  /// ```
  public func timeStep(_ step: Duration) -> Self {
    precondition(step > .zero, "Exploration.timeStep(_:): step must be positive, got \(step)")
    return adding { $0.timeStep = step }
  }

  /// Explores every order up to the budget, seeded samples beyond it, then every cancellation
  /// point of a few orders; stops at the first failure.
  ///
  /// ```swift
  /// let report = await exploration.explore()
  /// print(report)   // history: passed: 6 orders (all), 21 cancellation points, 30 runs in 0.2 seconds
  /// ```
  @MainActor
  public func explore(_ budget: ExplorationBudget = ExplorationBudget()) async -> ExplorationReport {
    let started = ContinuousClock.now
    var report = ExplorationReport(scenario: name)
    await explore(budget, into: &report)
    report.duration = ContinuousClock.now - started
    return report
  }

  /// Fills `report` run by run; returns at the first failure.
  @MainActor
  private func explore(_ budget: ExplorationBudget, into report: inout ExplorationReport) async {
    let runner = ExplorerRunner(exploration: self, budget: budget)
    var longest = 1
    /// One run with `oracle`, counted; `nil` once it failed (the failure is in `report`).
    func run(_ oracle: consuming some ExplorerOracle) async -> ExplorerRunner<Model>.Record? {
      let record = await runner.run(&oracle)
      report.runs += 1
      report.failure = record.failure
      return record.failure == nil ? record : nil
    }

    // Every order, depth first: the first is every entry point as early as possible, answers
    // oldest first; each next one changes the latest choice that has an alternative left.
    var next: DepthFirstOracle? = DepthFirstOracle(prefix: [], counts: [])
    while report.orders < budget.orders, let oracle = next {
      report.orders += 1
      guard let record = await run(oracle) else { return }
      longest = max(longest, record.positions.count)
      next = DepthFirstOracle.next(after: record.positions, counts: record.counts)
    }
    report.isExhaustive = next == nil
    for sample in 0..<(report.isExhaustive ? 0 : budget.samples) {
      report.orders += 1
      report.sampledOrders += 1
      guard await run(PriorityOracle(seed: Self.mix(budget.seed, sample), depth: 3, length: longest)) != nil else { return }
    }

    // Every cancellation point of a few orders: one run to record the order and count its points,
    // then one run per point.
    var tried: Set<[String]> = []
    for series in 0..<budget.cancellationOrders {
      let recorded: ExplorerRunner<Model>.Record? =
        switch series {
        case 0: await run(AnswersFirstOracle())
        case 1: await run(DepthFirstOracle(prefix: [], counts: []))
        default: await run(PriorityOracle(seed: Self.mix(budget.seed, -series), depth: 3, length: longest))
        }
      guard let record = recorded else { return }
      guard tried.insert(record.order).inserted else { continue }
      for point in record.order.indices {
        report.cancellationPoints += 1
        guard await run(ReplayOracle(tokens: Array(record.order[..<point]) + ["leave"])) != nil else { return }
      }
    }
  }

  /// This scenario with `change` made: the builder methods return a changed copy.
  private func adding(_ change: (inout Self) -> Void) -> Self {
    var copy = self
    change(&copy)
    return copy
  }

  /// Runs one order again, written as ``ExplorationFailure/order`` writes it; the run goes on with
  /// the first choice once the order is used up.
  ///
  /// ```swift
  /// let report = await exploration.replay("s0 pages#0 s1 s2 pages#2 pages#1")
  /// #expect(report.failure?.problems.isEmpty == false)
  /// ```
  @MainActor
  public func replay(_ order: String) async -> ExplorationReport {
    let started = ContinuousClock.now
    let tokens = order.split(separator: " ").map(String.init)
    var oracle = ReplayOracle(tokens: tokens)
    let record = await ExplorerRunner(exploration: self, budget: ExplorationBudget()).run(&oracle)
    let leaves = tokens.contains("leave")
    return ExplorationReport(
      scenario: name, orders: leaves ? 0 : 1, cancellationPoints: leaves ? 1 : 0, runs: 1, failure: record.failure,
      duration: ContinuousClock.now - started)
  }

  #if canImport(Testing)
    /// Explores like ``explore(_:)`` and records a test issue with the failure (its problems,
    /// timeline and replay line) if a run fails.
    ///
    /// ```swift
    /// @Test @MainActor func theHistoryListSurvivesEveryOrder() async {
    ///   await exploration.check()
    /// }
    /// ```
    @MainActor @discardableResult
    public func check(
      _ budget: ExplorationBudget = ExplorationBudget(), fileID: String = #fileID, filePath: String = #filePath,
      line: Int = #line, column: Int = #column
    ) async -> ExplorationReport {
      let report = await explore(budget)
      if !report.passed { recordIssue(report.description, at: (fileID, filePath, line, column)) }
      return report
    }
  #endif

  /// A seed per sample, far apart even for neighbouring samples.
  private static func mix(_ seed: UInt64, _ index: Int) -> UInt64 {
    var random = ExplorerRandom(seed: seed ^ (UInt64(bitPattern: Int64(index)) &* 0x2545_F491_4F6C_DD1D))
    return random.next()
  }
}
