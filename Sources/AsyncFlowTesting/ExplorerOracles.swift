/// One choice at a quiescent point of an ``Exploration`` run.
enum ExplorerChoice: Hashable, Sendable {
  /// Run the next entry point of the script (always the next one: the script keeps its order).
  case step(Int)
  /// Answer call `call` of stub `stub` with its response number `response`.
  case answer(stub: Int, call: Int, response: Int)
  /// Release gate `gate`.
  case open(gate: Int)
  /// Move the clock forward by the scenario's time step.
  case advance
  /// Leave the screen here: cancel the entry points' tasks and release the model.
  case leave
}

/// Chooses among the choices enabled at a quiescent point. `nil` means the run cannot follow the
/// plan: the choice it was told to make is not there (the scenario is not deterministic, or a
/// replayed order does not fit it).
protocol ExplorerOracle {
  /// `tokens` names each enabled choice as an order writes it.
  mutating func choose(among enabled: [ExplorerChoice], tokens: [String], at point: Int) -> ExplorerChoice?
}

/// Depth-first enumeration, by replaying a prefix of choice positions and taking the first choice
/// beyond it (the stateless model checking of loom and CHESS: the run is rebuilt from scratch for
/// every order, so nothing has to be snapshotted).
struct DepthFirstOracle: ExplorerOracle {
  /// Positions (in the enabled list) to take, point by point.
  var prefix: [Int]
  /// How many choices each point of the prefix offered when it was first seen: a different count
  /// on replay means the scenario did not repeat itself.
  var counts: [Int]

  mutating func choose(among enabled: [ExplorerChoice], tokens: [String], at point: Int) -> ExplorerChoice? {
    guard point < prefix.count else { return enabled[0] }
    guard enabled.count == counts[point] else { return nil }
    return enabled[prefix[point]]
  }

  /// The next order after a run that chose `positions` among `counts`: the deepest point with an
  /// untried choice moves on by one, everything after it starts over. `nil` once every order ran.
  static func next(after positions: [Int], counts: [Int]) -> DepthFirstOracle? {
    var depth = positions.count - 1
    while depth >= 0, positions[depth] + 1 >= counts[depth] { depth -= 1 }
    guard depth >= 0 else { return nil }
    return DepthFirstOracle(
      prefix: Array(positions[..<depth]) + [positions[depth] + 1], counts: Array(counts[...depth]))
  }
}

/// Follows an order written as tokens (``ExplorationFailure/order``), then takes the first choice.
struct ReplayOracle: ExplorerOracle {
  var tokens: [String]

  mutating func choose(among enabled: [ExplorerChoice], tokens named: [String], at point: Int) -> ExplorerChoice? {
    guard point < tokens.count else { return enabled[0] }
    if tokens[point] == "leave" { return .leave }
    return named.firstIndex(of: tokens[point]).map { enabled[$0] }
  }
}

/// Every request answered before the next entry point runs, oldest first: the order a fast network
/// gives, and the base of the first series of cancellation points.
struct AnswersFirstOracle: ExplorerOracle {
  mutating func choose(among enabled: [ExplorerChoice], tokens: [String], at point: Int) -> ExplorerChoice? {
    enabled.first { if case .step = $0 { false } else { true } } ?? enabled[0]
  }
}

/// Probabilistic concurrency testing (PCT, Burckhardt et al., ASPLOS 2010; the sampler of
/// awslabs/shuttle), adapted to answer orders: every source of choices (the script of entry
/// points, each call, each gate, the clock) gets a random priority when it first appears; the
/// highest-priority enabled source goes next; at `depth - 1` random points the source chosen drops
/// below every other. A bug that needs `d` orderings to line up is found with probability at least
/// 1 / (n · k^(d-1)) per run, n sources and k points, where uniform choices do exponentially worse.
struct PriorityOracle: ExplorerOracle {
  private var random: ExplorerRandom
  /// By source: the script, a call (its token without the response), a gate, the clock.
  private var priorities: [String: UInt64] = [:]
  private var changePoints: Set<Int>
  private var lowest: UInt64 = UInt64(Int64.max)

  /// `length`: the longest run seen so far, over which the change points are spread.
  init(seed: UInt64, depth: Int, length: Int) {
    random = ExplorerRandom(seed: seed)
    var points = Set<Int>()
    for _ in 0..<max(0, depth - 1) { points.insert(random.next(below: max(1, length))) }
    changePoints = points
  }

  mutating func choose(among enabled: [ExplorerChoice], tokens: [String], at point: Int) -> ExplorerChoice? {
    let sources = zip(enabled, tokens).map { choice, token in
      if case .step = choice { "script" } else { String(token.prefix { $0 != "." }) }
    }
    for source in sources where priorities[source] == nil {
      // Above every lowered priority: a new source is never starved by the change points.
      priorities[source] = UInt64(Int64.max) + 1 + UInt64(random.next(below: Int(Int32.max)))
    }
    let best = sources.max { priorities[$0]! < priorities[$1]! }!
    let candidates = enabled.indices.filter { sources[$0] == best }.map { enabled[$0] }  // the responses of one call
    let choice = candidates[random.next(below: candidates.count)]
    if changePoints.contains(point) {
      lowest -= 1
      priorities[best] = lowest
    }
    return choice
  }
}

/// SplitMix64 (Steele, Lea and Flood, 2014): a tiny generator whose whole state is one integer, so
/// that a seed names a schedule on every platform and every Swift version (the standard library's
/// generator promises neither).
///
/// The test targets have one too (`SplitMix64` in `Tests/AsyncFlowTests/Support`): a library
/// cannot use a test target's code, and making this one public would make its sequence part of
/// AsyncFlowTesting's API, where it is what a reported seed replays by, and nothing else.
struct ExplorerRandom {
  private var state: UInt64

  init(seed: UInt64) { state = seed }

  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// A number in `0..<bound`; `bound` must be positive.
  mutating func next(below bound: Int) -> Int { Int(next() % UInt64(bound)) }
}
