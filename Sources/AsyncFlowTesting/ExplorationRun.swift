import AsyncFlow

/// One run of an ``Exploration``: a fresh ``TestClock``, and the stubs and gates whose answers the
/// explorer chooses. The scenario's `model` closure receives it, registers its stubs and returns a
/// new model.
///
/// ```swift
/// @MainActor final class HistoryModel {
///   private(set) var items: [String] = []
///   private let fetch: @Sendable (_ offset: Int) async -> Result<[String], any Error>
///   init(fetch: @escaping @Sendable (_ offset: Int) async -> Result<[String], any Error>) { self.fetch = fetch }
///   func loadMore() async { if case .success(let page) = await fetch(items.count) { items += page } }
/// }
///
/// let exploration = Exploration("history") { run in
///   let pages = ControlledCalls<Int, Result<[String], any Error>>()
///   run.answer(pages, as: "pages") { offset in .success(["item \(offset)"]) }
///   return HistoryModel(fetch: run.stub(pages))
/// }
/// ```
@MainActor
public final class ExplorationRun {
  /// The run's clock: settled at every quiescent point, advanced when the explorer chooses time.
  ///
  /// ```swift
  /// let slow = Exploration("slow history") { run in
  ///   let clock = run.clock  // the explorer moves it on when it chooses time
  ///   return HistoryModel { _ in try? await clock.sleep(for: .seconds(1)); return .success(["item"]) }
  /// }
  /// ```
  public let clock: TestClock

  struct Stub {
    var name: String
    /// Whether a cancelled call returns at once (`whenCancelled:`), so that one still waiting
    /// after the model was released shows work that nobody cancelled.
    var answersCancellation: Bool
    var count: () -> Int
    var waiting: () -> [Int]
    var responses: (Int) -> Int
    var respond: (_ call: Int, _ response: Int) -> Void
    var describe: (Int) -> String
  }

  private(set) var stubs: [Stub] = []
  private(set) var gates: [(name: String, gate: Gate)] = []

  init(clock: TestClock) { self.clock = clock }

  /// Lets the explorer answer `calls`, with the response `respond` gives for each argument.
  ///
  /// `name` appears in orders and timelines (`pages#2` is the third call to `pages`): letters,
  /// digits, `-` and `_`, different for every stub and gate of the run.
  ///
  /// ```swift
  /// let answered = Exploration("history") { run in
  ///   let pages = ControlledCalls<Int, Result<[String], any Error>>()
  ///   run.answer(pages, as: "pages") { offset in .success(["item \(offset)"]) }
  ///   return HistoryModel(fetch: run.stub(pages))
  /// }
  /// ```
  public func answer<Argument, Response>(
    _ calls: ControlledCalls<Argument, Response>, as name: String,
    with respond: @escaping @MainActor (Argument) -> Response
  ) { answer(calls, as: name, eitherOf: { call in [respond(call.argument)] }) }

  /// Lets the explorer answer `calls` with each of the responses `responses` lists for a call:
  /// every order is then tried with every response (a success and a failure, say), so the order
  /// names the response too (`pages#2.1` is the second response to the third call).
  ///
  /// The call's place in the log is there for answers that depend on what came before.
  ///
  /// ```swift
  /// let flaky = Exploration("flaky history") { run in
  ///   let pages = ControlledCalls<Int, Result<[String], any Error>>()
  ///   run.answer(pages, as: "pages", eitherOf: { call in
  ///     [.success(["item \(call.argument)"]), .failure(AppError.offline)]  // every order, with each response
  ///   })
  ///   return HistoryModel(fetch: run.stub(pages))
  /// }
  /// ```
  public func answer<Argument, Response>(
    _ calls: ControlledCalls<Argument, Response>, as name: String,
    eitherOf responses: @escaping @MainActor (ControlledCall<Argument>) -> [Response]
  ) {
    checkName(name)
    // Watched by the clock whatever task calls it (one the model starts in its initialiser, say,
    // outside every entry point's scope), so that settling waits for each answer to get back.
    calls.adopt(clock.executor)
    stubs.append(
      Stub(
        name: name, answersCancellation: calls.answersCancellation,
        count: { calls.log.count },
        waiting: { calls.log.filter { !$0.isAnswered }.map(\.index) },
        responses: { index in
          let count = responses(calls.log[index]).count
          precondition(count > 0, "ExplorationRun.answer(_:as:eitherOf:): no response for call \(index) of '\(name)'")
          return count
        },
        respond: { index, response in calls.respond(toCall: index, with: responses(calls.log[index])[response]) },
        describe: { index in "\(name)#\(index)(\(calls.log[index].argument))" }))
  }

  /// Lets the explorer release `gate` whenever someone waits there, at any point of the order.
  ///
  /// ```swift
  /// let parsed = Exploration("parsing") { run in
  ///   let parsing = Gate()
  ///   run.gate(parsing, as: "parsing")
  ///   return HistoryModel { offset in await parsing.wait(); return .success(["item \(offset)"]) }
  /// }
  /// ```
  public func gate(_ gate: Gate, as name: String) {
    checkName(name)
    gate.adopt(clock.executor)
    gates.append((name, gate))
  }

  /// A function that calls `calls` on this run's clock, to hand a `@MainActor` model as its
  /// request: the call parks and resumes on the main actor, which the clock settles, and the clock
  /// waits for each answer to reach it, so that the explorer sees each call arrive and each answer
  /// handled.
  /// The entry point's own task already runs on the clock's schedule.
  ///
  /// ```swift
  /// let stubbed = Exploration("history") { run in
  ///   let pages = ControlledCalls<Int, Result<[String], any Error>>()
  ///   run.answer(pages, as: "pages") { offset in .success(["item \(offset)"]) }
  ///   return HistoryModel(fetch: run.stub(pages))  // each call waits on the run's clock
  /// }
  /// ```
  public func stub<Argument, Response>(
    _ calls: ControlledCalls<Argument, Response>
  ) -> @Sendable (Argument) async -> Response { { @MainActor argument in await calls.call(argument) } }

  private func checkName(_ name: String) {
    precondition(
      !name.isEmpty && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" },
      "ExplorationRun: name '\(name)' must be letters, digits, '-' and '_'")
    precondition(
      !stubs.contains { $0.name == name } && !gates.contains { $0.name == name },
      "ExplorationRun: name '\(name)' is already used by another stub or gate of this run")
  }
}
