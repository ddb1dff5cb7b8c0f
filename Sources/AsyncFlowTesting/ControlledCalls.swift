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
/// ```swift
/// let search = ControlledCalls<String, Result<[String], SearchError>>()
/// let model = SearchModel { query in try await search.call(query).get() }
/// model.queryChanged("sw")
/// model.queryChanged("swift")
/// await search.parked(count: 2)                       // both requests are in flight
/// search.respond(to: "swift", with: .success(["swift"]))
/// search.respond(to: "sw", with: .success(["sw"]))    // the old answer arrives last...
/// #expect(await model.results == ["swift"])           // ...and must not win
/// ```
public final class ControlledCalls<Argument: Hashable & Sendable, Response: Sendable>: Sendable {
  private struct Parked {
    var index: Int
    var continuation: UnsafeContinuation<Response, Never>
  }

  private struct State {
    var log: [ControlledCall<Argument>] = []
    var parked: [Parked] = []
    /// Calls that have reached their answer's wait: what ``calls(count:)`` counts, so that a call
    /// it reports can be answered at once (a call is logged a moment before it waits).
    var arrived = 0
    var callWatchers = CountWatchers()
    var parkedWatchers = CountWatchers()

    /// Takes the parked call `index` out, marking it answered; `nil` if it is not parked.
    mutating func unpark(_ index: Int) -> (UnsafeContinuation<Response, Never>, [UnsafeContinuation<Void, Never>])? {
      guard let position = parked.firstIndex(where: { $0.index == index }) else { return nil }
      log[index].isAnswered = true
      return (parked.remove(at: position).continuation, parkedWatchers.reached(parked.count))
    }
  }

  private let state = LockedState(State())
  private let whenCancelled: Response?

  /// Creates a stub with no calls yet.
  ///
  /// ```swift
  /// let answersAnyway = ControlledCalls<Int, String>()                  // ignores cancellation
  /// let stopsAtCancel = ControlledCalls<Int, String?>(whenCancelled: nil as String?)
  /// ```
  ///
  /// - Parameter whenCancelled: What a call returns at once when its task is cancelled while it
  ///   waits. Without it, a cancelled call keeps waiting for the test's answer.
  public init(whenCancelled: Response? = nil) {
    self.whenCancelled = whenCancelled
  }

  /// The code under test calls this: the call is logged, then waits for the test's answer.
  ///
  /// ```swift
  /// let client = SearchClient { query in await calls.call(query) }
  /// ```
  public func call(_ argument: Argument) async -> Response {
    let index = state.withLock { state -> Int in
      state.log.append(ControlledCall(index: state.log.count, argument: argument))
      return state.log.count - 1
    }
    return await withTaskCancellationHandler {
      await withUnsafeContinuation { (continuation: UnsafeContinuation<Response, Never>) in
        let watchers = state.withLock { state in
          state.parked.append(Parked(index: index, continuation: continuation))
          state.arrived += 1
          return state.callWatchers.reached(state.arrived) + state.parkedWatchers.reached(state.parked.count)
        }
        for watcher in watchers { watcher.resume() }
      }
    } onCancel: {
      let answer = state.withLock { state -> (UnsafeContinuation<Response, Never>, [UnsafeContinuation<Void, Never>])? in
        state.log[index].wasCancelled = true
        guard whenCancelled != nil else { return nil }
        return state.unpark(index)
      }
      if let (continuation, watchers) = answer, let whenCancelled {
        for watcher in watchers { watcher.resume() }
        continuation.resume(returning: whenCancelled)
      }
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

  /// Suspends until at least `count` calls have been made (answered or not) and each has reached
  /// the wait for its answer, so that the test can answer it at once; or until the waiting task is
  /// cancelled.
  ///
  /// ```swift
  /// model.refresh()
  /// await calls.calls(count: 1)  // the request is on the wire
  /// ```
  public func calls(count: Int) async {
    await state.waitUntil(count: count, of: { $0.arrived }, watchers: \.callWatchers)
  }

  /// Suspends until at least `count` calls are waiting for an answer at once, or until the
  /// waiting task is cancelled.
  ///
  /// ```swift
  /// await calls.parked(count: 2)  // the old and the new request are both in flight
  /// ```
  public func parked(count: Int) async {
    await state.waitUntil(count: count, of: { $0.parked.count }, watchers: \.parkedWatchers)
  }

  /// Answers the oldest waiting call made with `argument`.
  ///
  /// No such call waiting is a programmer error, except in a cancelled task: see
  /// ``respond(toCall:with:)``.
  ///
  /// ```swift
  /// calls.respond(to: "swift", with: ["swift", "swiftui"])
  /// ```
  public func respond(to argument: Argument, with response: Response) {
    let index = state.withLock { state in
      state.parked.first { state.log[$0.index].argument == argument }?.index
    }
    guard let index else {
      precondition(Task.isCancelled, "ControlledCalls.respond(to:with:): no call with argument \(argument) is waiting")
      return
    }
    respond(toCall: index, with: response)
  }

  /// Answers the call made `index`-th (from 0, in the order of ``log``).
  ///
  /// That call not waiting is a programmer error, except in a cancelled task, where the answer is
  /// ignored: a test cancelled by its `.timeLimit` gets here because a wait returned early (the
  /// call it waited for never came), and it is failing already; stopping the process instead
  /// would end the whole test run, every other test's report with it.
  ///
  /// ```swift
  /// calls.respond(toCall: 0, with: ["late"])  // the first request answers last
  /// ```
  public func respond(toCall index: Int, with response: Response) {
    guard let (continuation, watchers) = state.withLock({ $0.unpark(index) }) else {
      precondition(Task.isCancelled, "ControlledCalls.respond(toCall:with:): call \(index) is not waiting")
      return
    }
    for watcher in watchers { watcher.resume() }
    continuation.resume(returning: response)
  }
}

extension ControlledCalls {
  /// Fails the oldest waiting call made with `argument`, for a stub whose response is a `Result`.
  ///
  /// ```swift
  /// calls.fail("swi", with: .offline)
  /// ```
  public func fail<Success, Failure>(_ argument: Argument, with error: Failure)
  where Response == Result<Success, Failure> {
    respond(to: argument, with: .failure(error))
  }

  /// Fails the call made `index`-th, for a stub whose response is a `Result`.
  ///
  /// ```swift
  /// calls.fail(call: 1, with: .offline)
  /// ```
  public func fail<Success, Failure>(call index: Int, with error: Failure)
  where Response == Result<Success, Failure> {
    respond(toCall: index, with: .failure(error))
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
  /// calls.respond(toCall: call.index, with: response)
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
  /// #expect(calls.log.allSatisfy(\.isAnswered))
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

extension ControlledCalls {
  /// Whether a cancelled call returns `whenCancelled` at once: the explorer then counts a call
  /// still waiting after the model was released as work that nobody cancelled.
  package var answersCancellation: Bool { whenCancelled != nil }
}
