/// How much an ``Exploration`` tries: every order up to a bound, seeded samples beyond it, and the
/// cancellation points of a few orders.
///
/// ```swift
/// let thorough = ExplorationBudget(orders: 200, samples: 50, seed: 7)  // for explore(_:) or check(_:)
/// ```
public struct ExplorationBudget: Hashable, Sendable {
  /// The most orders enumerated one by one (depth first). A scenario with fewer orders is explored
  /// completely; a larger one goes on with ``samples``.
  ///
  /// ```swift
  /// let exhaustive = ExplorationBudget(orders: 10_000, samples: 0)
  /// ```
  public var orders: Int
  /// Seeded orders sampled (with priorities, as shuttle's PCT does) once the enumeration stopped
  /// at ``orders`` without finishing.
  ///
  /// ```swift
  /// let wide = ExplorationBudget(orders: 100, samples: 1_000)
  /// ```
  public var samples: Int
  /// The seed of the sampled orders and of the seeded cancellation schedules: the same seed, the
  /// same report.
  ///
  /// ```swift
  /// let other = ExplorationBudget(seed: 42)
  /// ```
  public var seed: UInt64
  /// How many orders have every cancellation point tried: the answers-first order, the
  /// entry-points-first order, then seeded ones. `0` skips cancellation points.
  ///
  /// ```swift
  /// let ordersOnly = ExplorationBudget(cancellationOrders: 0)
  /// ```
  public var cancellationOrders: Int
  /// The most choices in one run: a model that keeps starting calls fails here instead of running
  /// forever.
  ///
  /// ```swift
  /// let long = ExplorationBudget(choicesPerRun: 1_000)
  /// ```
  public var choicesPerRun: Int

  /// A budget; the defaults find a two-request race in well under a second.
  ///
  /// ```swift
  /// let budget = ExplorationBudget()  // 500 orders, 100 samples, seed 0, 3 cancellation orders
  /// ```
  public init(
    orders: Int = 500, samples: Int = 100, seed: UInt64 = 0, cancellationOrders: Int = 3, choicesPerRun: Int = 200
  ) {
    precondition(orders >= 1, "ExplorationBudget: orders must be 1 or more, got \(orders)")
    precondition(samples >= 0, "ExplorationBudget: samples must be 0 or more, got \(samples)")
    precondition(cancellationOrders >= 0, "ExplorationBudget: cancellationOrders must be 0 or more, got \(cancellationOrders)")
    precondition(choicesPerRun >= 1, "ExplorationBudget: choicesPerRun must be 1 or more, got \(choicesPerRun)")
    self.orders = orders
    self.samples = samples
    self.seed = seed
    self.cancellationOrders = cancellationOrders
    self.choicesPerRun = choicesPerRun
  }
}

/// What one ``Exploration`` found: how many orders and cancellation points it ran, and the first
/// failure, if any.
///
/// ```swift
/// @MainActor private final class HistoryModel {
///   private(set) var items: [String] = []
///   private let fetch: @Sendable (_ offset: Int) async -> Result<[String], any Error>
///   init(fetch: @escaping @Sendable (_ offset: Int) async -> Result<[String], any Error>) { self.fetch = fetch }
///   func refresh() async { if case .success(let page) = await fetch(0) { items = page } }
///   func loadMore() async { if case .success(let page) = await fetch(items.count) { items += page } }
/// }
///
/// private var exploration: Exploration<HistoryModel> {  // a fresh scenario for each use
///   Exploration("history") { run in
///     let pages = ControlledCalls<Int, Result<[String], any Error>>()
///     run.answer(pages, as: "pages") { offset in .success(["item \(offset)"]) }
///     return HistoryModel(fetch: run.stub(pages))
///   }
///   .step("refresh") { await $0.refresh() }
///   .step("load more") { await $0.loadMore() }
///   .invariant("no item twice") { Set($0.items).count == $0.items.count }
/// }
///
/// let report = await exploration.explore()
/// if let failure = report.failure { print(failure) } else { print(report) }
/// ```
public struct ExplorationReport: Sendable, CustomStringConvertible {
  /// The scenario's name.
  ///
  /// ```swift
  /// #expect(report.scenario == "history")
  /// ```
  public var scenario: String
  /// Orders run to their end (enumerated and sampled), the failing one included.
  ///
  /// ```swift
  /// print("\(report.orders) orders")
  /// ```
  public var orders: Int = 0
  /// Whether the enumeration ran every order the scenario has.
  ///
  /// ```swift
  /// #expect(report.isExhaustive)  // small enough to try every order
  /// ```
  public var isExhaustive: Bool = false
  /// Of ``orders``, how many were seeded samples.
  ///
  /// ```swift
  /// #expect(report.sampledOrders == 0)
  /// ```
  public var sampledOrders: Int = 0
  /// Cancellation points tried (a run each), the failing one included.
  ///
  /// ```swift
  /// print("\(report.cancellationPoints) cancellation points")
  /// ```
  public var cancellationPoints: Int = 0
  /// Every run: orders, cancellation points, and the runs that counted them.
  ///
  /// ```swift
  /// print("\(report.runs) runs in \(report.duration)")
  /// ```
  public var runs: Int = 0
  /// The first failure, or `nil` if every run passed.
  ///
  /// ```swift
  /// #expect(report.failure == nil)
  /// ```
  public var failure: ExplorationFailure?
  /// The wall time the exploration took; the only part that two explorations with the same seed
  /// do not share.
  ///
  /// ```swift
  /// print(report.duration)  // 0.095 seconds
  /// ```
  public var duration: Duration = .zero

  /// Whether every run passed.
  ///
  /// ```swift
  /// #expect(report.passed)
  /// ```
  public var passed: Bool { failure == nil }

  /// The failure with its timeline, or a line of figures.
  ///
  /// ```swift
  /// print(report)  // history: passed: 8 orders (all), 16 cancellation points, 27 runs in 95.0 ms
  /// ```
  public var description: String {
    let ordersText = "\(orders) orders" + (isExhaustive ? " (all)" : sampledOrders > 0 ? " (\(sampledOrders) sampled)" : "")
    let figures = "\(ordersText), \(cancellationPoints) cancellation points, \(runs) runs in \(Self.milliseconds(duration))"
    guard let failure else { return "\(scenario): passed: \(figures)" }
    return "\(scenario): FAILED after \(figures)\n\(failure)"
  }

  /// `duration` in milliseconds with one decimal, as the description shows it.
  static func milliseconds(_ duration: Duration) -> String {
    let tenths = duration.components.seconds * 10_000 + duration.components.attoseconds / 100_000_000_000_000
    return "\(tenths / 10).\(tenths % 10) ms"
  }
}

extension ExplorationReport: Equatable {
  /// Equal when everything but the wall time is: two explorations with the same seed compare
  /// equal.
  ///
  /// ```swift
  /// let again = await exploration.explore()
  /// #expect(again == report)  // the same seed, the same report
  /// ```
  public static func == (lhs: Self, rhs: Self) -> Bool {
    (lhs.scenario, lhs.orders, lhs.isExhaustive, lhs.sampledOrders, lhs.cancellationPoints, lhs.runs)
      == (rhs.scenario, rhs.orders, rhs.isExhaustive, rhs.sampledOrders, rhs.cancellationPoints, rhs.runs)
      && lhs.failure == rhs.failure
  }
}

/// A run that broke an invariant: its order, what went wrong, the timeline, and the line that
/// replays it.
///
/// ```swift
/// let failure = try #require(report.failure)
/// print(failure.replay)   // await exploration.replay("s0 pages#0 s1 s2 pages#2 pages#1")
/// ```
public struct ExplorationFailure: Hashable, Sendable, CustomStringConvertible {
  /// The run's choices, one token each: `s1` the entry point numbered 1, `pages#2` the answer
  /// to the third call to `pages` (`pages#2.1`: its second response), `open:gate` a gate released,
  /// `tick` the clock moved on, `leave` the cancellation point.
  ///
  /// ```swift
  /// #expect(failure.order == "s0 pages#0 s1 s2 pages#2 pages#1")
  /// ```
  public var order: String
  /// Each broken invariant, in words.
  ///
  /// ```swift
  /// #expect(failure.problems == ["broken: one list, in order; items [v2#0, v2#1, v1#2, v1#3]"])
  /// ```
  public var problems: [String]
  /// What happened, choice by choice.
  ///
  /// ```swift
  /// for event in failure.timeline { print(event) }
  /// ```
  public var timeline: [ExplorationEvent]

  /// The one line that runs this order again, for a test or a debugger.
  ///
  /// ```swift
  /// print(failure.replay)  // await exploration.replay("s0 pages#0 s1 s2 pages#2 pages#1")
  /// ```
  public var replay: String { "await exploration.replay(\"\(order)\")" }

  /// The problems, the timeline and the replay line.
  ///
  /// ```swift
  /// print(failure)
  /// ```
  public var description: String {
    (problems.map { "  problem: \($0)" } + ["  order: \(order)"] + timeline.map { "    \($0)" } + ["  replay: \(replay)"])
      .joined(separator: "\n")
  }
}

/// One choice of a run, as its timeline shows it: what the explorer did and what the model showed
/// after it.
///
/// ```swift
/// let stale = failure.timeline.filter(\.isStale)
/// let event = try #require(stale.first)
/// ```
public struct ExplorationEvent: Hashable, Sendable, CustomStringConvertible {
  /// The quiescent point the choice was made at, from 0.
  ///
  /// ```swift
  /// #expect(event.point == 4)
  /// ```
  public var point: Int
  /// The choice's token in the order (`pages#2`).
  ///
  /// ```swift
  /// #expect(event.token == "pages#2")
  /// ```
  public var token: String
  /// What was done, in words: `run refresh`, `answered pages#2(0)`.
  ///
  /// ```swift
  /// print(event.action)
  /// ```
  public var action: String
  /// The model's state after the choice, as the scenario's `state` describes it, when it changed;
  /// `nil` when nothing was written.
  ///
  /// ```swift
  /// #expect(event.wrote == "items [v2#0, v2#1]")
  /// ```
  public var wrote: String?
  /// Whether this was an answer to an older call than one already answered, that changed the
  /// state: a stale write.
  ///
  /// ```swift
  /// #expect(failure.timeline.contains { $0.isStale })
  /// ```
  public var isStale: Bool = false

  /// One line: point, action, what was written.
  ///
  /// ```swift
  /// print(event)  // 5  answered pages#1(2)  wrote items [v2#0, v2#1, v1#2, v1#3]  <- STALE
  /// ```
  public var description: String {
    var line = "\(point)".padding(3) + action
    if let wrote { line = line.padding(44) + "wrote " + wrote }
    if isStale { line += "  <- STALE: answers an older call than one already answered" }
    return line
  }
}

extension String {
  fileprivate func padding(_ width: Int) -> String {
    count >= width ? self + " " : self + String(repeating: " ", count: width - count)
  }
}
