import AsyncFlow

/// A stub for request/response code whose calls answer only when the test says so, in the order
/// the test chooses: the way to stage "sent A, B, C; answered C, A, B" without a single sleep. It
/// keeps a log of every call, in order, with its argument and whether it was cancelled: the
/// request log of the code under test.
///
/// By default a call ignores cancellation, like a request already on the wire: it returns what the
/// test answers, whenever that is. Pass `whenCancelled:` to make a cancelled call return that
/// response at once instead.
///
/// In a test on the clock (`@Test(.onTestClock)`), call the model directly: the tasks it starts
/// through AsyncFlow run on the clock, and ``TestClock/runCurrent()`` waits until the model has
/// handled each answer (`ControlledCallsExampleTests` runs this example):
///
/// ```swift
/// @MainActor private final class SearchModel {
///   private(set) var results: [String] = []
///   private let slots = TaskSlots<String>()
///   private let search: @Sendable (String) async throws -> [String]
///   init(search: @escaping @Sendable (String) async throws -> [String]) { self.search = search }
///
///   func queryChanged(_ query: String) {
///     slots.run("search") { @MainActor [weak self, search] in  // the newest search cancels the older one
///       let found = try? await search(query)
///       guard !Task.isCancelled, let found else { return }    // a superseded search writes nothing
///       self?.results = found
///     }
///   }
/// }
///
/// @Test(.onTestClock) @MainActor func theLatestQueryWins() async {
///   let clock = TestClock.current
///   let search = ControlledCalls<String, Result<[String], SearchError>>()
///   let model = SearchModel { query in try await search.call(query).get() }
///   model.queryChanged("sw")
///   await search.calls(count: 1)                       // the first request is on the wire...
///   model.queryChanged("swift")                        // ...when the query changes
///   await search.parked(count: 2)                       // both requests are in flight
///   search.respond(to: "swift", with: .success(["swift"]))
///   await clock.runCurrent()
///   #expect(model.results == ["swift"])
///   search.respond(to: "sw", with: .success(["sw"]))    // the old answer arrives last...
///   await clock.runCurrent()
///   #expect(model.results == ["swift"])                 // ...and must not win
/// }
/// ```
public final class ControlledCalls<Argument: Hashable & Sendable, Response: Sendable>: Sendable {
  /// A call waiting for its answer, with the clock that accounts for it once answered (see
  /// ``TestExecutor/beginTransit()``).
  private typealias Parked = (index: Int, continuation: UnsafeContinuation<Response, Never>, clock: TestExecutor?)

  private struct State {
    var log: [ControlledCall<Argument>] = []
    var parked: [Parked] = []
    /// Calls that have reached their answer's wait: what ``calls(count:)`` counts, so that a call
    /// it reports can be answered at once (a call is logged a moment before it waits).
    var arrived = 0
    var callWatchers = CountWatchers()
    var parkedWatchers = CountWatchers()
    /// The clock's executor in effect where the stub was made or registered, if any: the clock of
    /// a call from a task that lost the clock's task-local (a `Task.detached { }`).
    var home: TestExecutor?

    /// Takes the parked call `index` out, marking it answered; `nil` if it is not parked.
    mutating func unpark(_ index: Int) -> (Parked, [UnsafeContinuation<Void, Never>])? {
      guard let position = parked.firstIndex(where: { $0.index == index }) else { return nil }
      log[index].isAnswered = true
      return (parked.remove(at: position), parkedWatchers.reached(parked.count))
    }
  }

  private let state = LockedState(State())
  private let whenCancelled: Response?
  /// Whether this stub keeps the callers of a ``Gate``, and its issues and waits speak of them.
  let isGate: Bool

  /// Creates a stub with no calls yet.
  ///
  /// ```swift
  /// let calls = ControlledCalls<String, [String]>()                         // ignores cancellation
  /// let stopsAtCancel = ControlledCalls<String, [String]?>(whenCancelled: nil as [String]?)
  /// ```
  ///
  /// - Parameter whenCancelled: What a call returns at once when its task is cancelled, before or
  ///   while it waits. Without it, a cancelled call keeps waiting for the test's answer.
  public init(whenCancelled: Response? = nil) {
    self.whenCancelled = whenCancelled
    isGate = false
    if let executor = FlowScheduling.executor as? TestExecutor { adopt(executor) }
  }

  /// The callers of a ``Gate``: each cancelled one answered at once with `released`.
  init(gateReleasing released: Response) {
    whenCancelled = released
    isGate = true
    if let executor = FlowScheduling.executor as? TestExecutor { adopt(executor) }
  }

  /// The code under test calls this: the call is logged, then waits for the test's answer.
  ///
  /// On a test clock's schedule, the clock waits for an answered call until its caller is back on
  /// its own isolation. A call reached from a task that does not run on the clock (a `Task { }` of
  /// the code under test's own, not on the main actor) records a test issue: the clock cannot wait
  /// for what that task does with the answer.
  ///
  /// ```swift
  /// let search: @Sendable (String) async -> [String] = { query in await calls.call(query) }
  /// ```
  public func call(_ argument: Argument, isolation: isolated (any Actor)? = #isolation) async -> Response {
    let clock = self.clock
    if let clock, !clock.isPreferredByCurrentTask, isolation.map({ $0 !== MainActor.shared }) ?? true {
      // Neither on the clock's executor nor on the main actor, which settling goes through.
      recordIssue(
        """
        \(isGate ? "Gate.wait()" : "ControlledCalls.call(\(String(reflecting: argument)))") was reached from a task \
        that does not run on the test clock's executor (a `Task { }` or `Task.detached { }` of the code under test?). \
        The clock waits for the answer to reach that task, but cannot wait for what the task does after it, so \
        `runCurrent()` may return before it is done. Start that work through AsyncFlow (an operator, a sink, \
        `TaskSlots`) inside `@Test(.onTestClock)`, start it with `clock.task { }`, or make the caller `@MainActor`.
        """)
    }
    let index = state.withLock { state -> Int in
      state.log.append(ControlledCall(index: state.log.count, argument: argument))
      return state.log.count - 1
    }
    return await withTaskCancellationHandler {
      let response = await withUnsafeContinuation(isolation: isolation) {
        (continuation: UnsafeContinuation<Response, Never>) in
        // The watchers to wake, and the answer if the call is answered at once.
        let (watchers, answer) = state.withLock { state -> ([UnsafeContinuation<Void, Never>], Response?) in
          state.arrived += 1
          let arrivals = state.callWatchers.reached(state.arrived)
          // Cancelled before it could wait: the handler below ran first and found nothing parked
          // (or runs now and will find nothing), so this is the only place left to answer it.
          if Task.isCancelled, let whenCancelled {
            state.log[index].wasCancelled = true
            state.log[index].isAnswered = true
            return (arrivals, whenCancelled)
          }
          state.parked.append((index, continuation, clock))
          return (arrivals + state.parkedWatchers.reached(state.parked.count), nil)
        }
        for watcher in watchers { watcher.resume() }
        if let answer {
          clock?.beginTransit()
          continuation.resume(returning: answer)
        }
      }
      // Back on the caller's isolation: from here on, what the caller does with the response runs
      // where settling sees it.
      clock?.endTransit()
      return response
    } onCancel: {
      state.withLock { $0.log[index].wasCancelled = true }
      if let whenCancelled { _ = answer(index, with: whenCancelled) }
    }
  }

  /// Every call so far, in order: argument, whether it was cancelled, whether it was answered.
  ///
  /// ```swift
  /// #expect(calls.log.map(\.wasCancelled) == [true, false])  // the first search was superseded
  /// ```
  public var log: [ControlledCall<Argument>] { state.withLock { $0.log } }

  /// The arguments of every call so far, in order.
  ///
  /// ```swift
  /// #expect(calls.arguments == ["s", "sw", "swi"])
  /// ```
  public var arguments: [Argument] { state.withLock { $0.log.map(\.argument) } }

  /// The calls waiting for an answer right now, oldest first: what ``respond(toCall:with:fileID:filePath:line:column:)`` can
  /// answer.
  ///
  /// ```swift
  /// #expect(calls.waitingCalls.map(\.argument) == ["sw", "swift"])
  /// ```
  public var waitingCalls: [ControlledCall<Argument>] {
    state.withLock { state in state.parked.map { state.log[$0.index] } }
  }

  /// Suspends until at least `count` calls have been made (answered or not) and each has reached
  /// the wait for its answer, so that the test can answer it at once.
  ///
  /// On a test clock's schedule (the stub was made, or this is called, in `@Test(.onTestClock)` or
  /// `withTestClock`), the clock runs meanwhile; when it is idle and the calls have not come,
  /// nothing it can see will make them: this records an issue naming what was called and what is
  /// parked (`calls(count: 2): 1 call made, 1 parked: call 0 ("a")`) and returns, in milliseconds.
  /// Off a clock it waits until the calls come or the waiting task is cancelled.
  ///
  /// ```swift
  /// let request = Task { await search("swift") }  // the code under test sends a request
  /// await calls.calls(count: 1)                     // it is on the wire
  /// ```
  public func calls(
    count: Int, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column
  ) async {
    precondition(count >= 0, "ControlledCalls.calls(count:): count must be 0 or greater, got \(count)")
    await barrier("calls", count: count, of: \.arrived, watchers: \.callWatchers, at: (fileID, filePath, line, column))
  }

  /// Suspends until at least `count` calls are waiting for an answer at once. On a test clock's
  /// schedule, fails fast as ``calls(count:fileID:filePath:line:column:)`` does.
  ///
  /// ```swift
  /// await calls.parked(count: 2)  // the old and the new request are both in flight
  /// ```
  public func parked(
    count: Int, fileID: String = #fileID, filePath: String = #filePath, line: Int = #line, column: Int = #column
  ) async {
    precondition(count >= 0, "ControlledCalls.parked(count:): count must be 0 or greater, got \(count)")
    let name = isGate ? "entered" : "parked"
    await barrier(name, count: count, of: \.parked.count, watchers: \.parkedWatchers, at: (fileID, filePath, line, column))
  }

  /// Waits in `wait` on the clock's schedule, failing fast there, or plainly off a clock.
  private func barrier(
    _ name: String, count: Int, of current: KeyPath<State, Int> & Sendable,
    watchers: WritableKeyPath<State, CountWatchers> & Sendable, at caller: SourceCaller
  ) async {
    let wait = { @Sendable in await self.state.waitUntil(count: count, of: { $0[keyPath: current] }, watchers: watchers) }
    guard let executor = clock else { return await wait() }
    await executor.barrier(
      { "\(self.typeName).\(name)(count: \(count)): \(self.progress)" },
      isMet: { self.state.withLock { $0[keyPath: current] } >= count }, wait: wait,
      fileID: caller.fileID, filePath: caller.filePath, line: caller.line, column: caller.column)
  }

  private var typeName: String { isGate ? "Gate" : "ControlledCalls<\(Argument.self), \(Response.self)>" }

  /// `2 calls made, 1 parked: call 1 ("b")`: what a barrier that gave up saw.
  private var progress: String {
    let (made, waiting) = state.withLock { state in (state.log.count, state.parked.map { state.log[$0.index] }) }
    if isGate { return "\(counted(waiting.count, "caller")) parked" }
    return "\(counted(made, "call")) made, \(waiting.count) parked" + Self.list(waiting)
  }

  /// `: call 0 ("a"), call 2 ("c")`, or nothing for no call. Outside the lock: it formats the
  /// code under test's arguments.
  private static func list(_ calls: [ControlledCall<Argument>]) -> String {
    calls.isEmpty ? "" : ": " + calls.map { "call \($0.index) (\(String(reflecting: $0.argument)))" }.joined(separator: ", ")
  }

  /// Answers the oldest waiting call made with `argument`.
  ///
  /// No such call waiting is a wrong step of the test: it records an issue naming the calls that
  /// are waiting, and returns (the process goes on, with the tests after this one). In a cancelled
  /// task it returns silently: a test cancelled by its `.timeLimit` gets here because a wait
  /// returned early, and it is failing already.
  ///
  /// ```swift
  /// calls.respond(to: "swift", with: ["swift", "swiftui"])
  /// ```
  public func respond(
    to argument: Argument, with response: Response, fileID: String = #fileID, filePath: String = #filePath,
    line: Int = #line, column: Int = #column
  ) {
    while true {
      // `==` is the code under test's, so it runs outside the lock, on a copy of the waiting
      // calls: an `Argument` whose `==` reads this stub would otherwise deadlock on its own lock.
      let waiting = waitingCalls
      guard let index = waiting.first(where: { $0.argument == argument })?.index else {
        notWaiting(
          "respond(to: \(String(reflecting: argument)), with:): no call with this argument is waiting", waiting: waiting,
          at: (fileID, filePath, line, column))
        return
      }
      // Answered by another thread between the copy and now: look again.
      if answer(index, with: response) { return }
    }
  }

  /// Answers the call made `index`-th (from 0, in the order of ``log``).
  ///
  /// That call not waiting is a wrong step of the test: it records an issue naming the calls that
  /// are waiting, and returns; silently in a cancelled task (see ``respond(to:with:fileID:filePath:line:column:)``).
  ///
  /// ```swift
  /// calls.respond(toCall: 0, with: ["late"])  // the first request answers last
  /// ```
  public func respond(
    toCall index: Int, with response: Response, fileID: String = #fileID, filePath: String = #filePath,
    line: Int = #line, column: Int = #column
  ) {
    if !answer(index, with: response) {
      let made = state.withLock { $0.log.count }
      let why = index < made ? "call \(index) is not waiting (answered already)" : "call \(index) was never made"
      notWaiting("respond(toCall: \(index), with:): \(why)", waiting: waitingCalls, at: (fileID, filePath, line, column))
    }
  }

  private func notWaiting(_ what: String, waiting: [ControlledCall<Argument>], at caller: SourceCaller) {
    guard !Task.isCancelled else { return }
    let calls = waiting.isEmpty ? "no call is waiting" : "waiting" + Self.list(waiting)
    recordIssue("\(typeName).\(what); \(calls)", at: caller)
  }

  /// Resumes the parked call `index` with `response`, after the lock; `false` if it is not parked.
  func answer(_ index: Int, with response: Response) -> Bool {
    guard let (parked, watchers) = state.withLock({ $0.unpark(index) }) else { return false }
    for watcher in watchers { watcher.resume() }
    parked.clock?.beginTransit()
    parked.continuation.resume(returning: response)
    return true
  }

  /// Fails the oldest waiting call made with `argument`, for a stub whose response is a `Result`;
  /// no such call waiting records an issue, as ``respond(to:with:fileID:filePath:line:column:)`` does.
  ///
  /// ```swift
  /// let results = ControlledCalls<String, Result<[String], SearchError>>()
  /// results.fail("swi", with: .offline)
  /// ```
  public func fail<Success, Failure>(
    _ argument: Argument, with error: Failure, fileID: String = #fileID, filePath: String = #filePath,
    line: Int = #line, column: Int = #column
  ) where Response == Result<Success, Failure> {
    respond(to: argument, with: .failure(error), fileID: fileID, filePath: filePath, line: line, column: column)
  }

  /// Fails the call made `index`-th, for a stub whose response is a `Result`; that call not
  /// waiting records an issue.
  ///
  /// ```swift
  /// results.fail(call: 1, with: .offline)
  /// ```
  public func fail<Success, Failure>(
    call index: Int, with error: Failure, fileID: String = #fileID, filePath: String = #filePath,
    line: Int = #line, column: Int = #column
  ) where Response == Result<Success, Failure> {
    respond(toCall: index, with: .failure(error), fileID: fileID, filePath: filePath, line: line, column: column)
  }

  /// Whether a cancelled call returns `whenCancelled` at once: the explorer then counts a call
  /// still waiting after the model was released as work that nobody cancelled.
  package var answersCancellation: Bool { whenCancelled != nil }
}

extension ControlledCalls: WaitSource {
  /// The clock whose schedule the current task belongs to (the task-local that `clock.task`,
  /// `onSchedule` and `withTestClock` set, inherited by `Task { }`), else the one where the stub was
  /// made or registered; it watches the stub from now on.
  private var clock: TestExecutor? {
    guard let executor = (FlowScheduling.executor as? TestExecutor) ?? state.withLock({ $0.home }) else { return nil }
    executor.watch(self)
    return executor
  }

  /// Makes `executor` the stub's clock if it has none yet, and watches the stub there: for a stub
  /// registered with a clock after it was made (an ``ExplorationRun``'s).
  func adopt(_ executor: TestExecutor) {
    state.withLock { $0.home = $0.home ?? executor }
    executor.watch(self)
  }

  func describeWaits() -> [String] {
    if isGate { return waitingCalls.isEmpty ? [] : ["Gate: \(progress) in wait(), until release()"] }
    // Described outside the lock: `String(reflecting:)` runs the argument's own description.
    return waitingCalls.map { call in
      "ControlledCalls<\(Argument.self), \(Response.self)>: call \(call.index) (\(String(reflecting: call.argument))) "
        + "waits for its answer\(call.wasCancelled ? ", though its task was cancelled" : "")"
    }
  }
}

/// One call to a ``ControlledCalls`` stub, as its log records it.
///
/// ```swift
/// let first = calls.log[0]
/// #expect(first.argument == "sw" && first.wasCancelled && first.isAnswered)
/// ```
public struct ControlledCall<Argument: Hashable & Sendable>: Hashable, Sendable {
  /// Its place in the log, from 0.
  ///
  /// ```swift
  /// let oldest = calls.waitingCalls[0]
  /// calls.respond(toCall: oldest.index, with: ["swift"])
  /// ```
  public var index: Int
  /// What it was called with.
  ///
  /// ```swift
  /// #expect(calls.log.last?.argument == "swift")
  /// ```
  public var argument: Argument
  /// Whether its task was cancelled while it waited for the answer.
  ///
  /// ```swift
  /// #expect(calls.log[0].wasCancelled)  // superseded by a newer request
  /// ```
  public var wasCancelled = false
  /// Whether it has been answered (by the test, or by `whenCancelled`).
  ///
  /// ```swift
  /// #expect(calls.log.allSatisfy { $0.isAnswered })
  /// ```
  public var isAnswered = false

  /// A call as the log records it.
  ///
  /// ```swift
  /// let expected = ControlledCall(index: 0, argument: "sw", wasCancelled: true, isAnswered: true)
  /// ```
  public init(index: Int, argument: Argument, wasCancelled: Bool = false, isAnswered: Bool = false) {
    self.index = index
    self.argument = argument
    self.wasCancelled = wasCancelled
    self.isAnswered = isAnswered
  }
}
