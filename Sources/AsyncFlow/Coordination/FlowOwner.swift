/// The owner of a service's long-lived work: the `TaskSlots`, `SingleFlight`s, subjects and shares
/// made with it stop taking new work when it closes, and its ``shutdown(timeout:clock:)`` returns
/// once every task the library started for them has ended (Kotlin's `CoroutineScope`,
/// swift-service-lifecycle's graceful shutdown).
///
/// ```swift
/// let owner = FlowOwner()
/// let profiles = SingleFlight<String, Int, Never>(owner: owner)
/// let slots = TaskSlots<String>(owner: owner)
/// let feed = PassthroughFlow<Int, Never>(owner: owner)
/// let live = feed.shareFlow(replay: 1, owner: owner)
///
/// // On SIGTERM: refuse new work, cancel what runs, and wait for it (at most 10 seconds).
/// let report = await owner.shutdown(timeout: .seconds(10))
/// if !report.isComplete { print("still running:", report) }
/// ```
///
/// ## Closing
///
/// ``close()`` refuses new work from then on, in the same step that would admit it, so that a
/// request racing the close is either admitted (and a shutdown awaits it) or refused, never lost.
/// What each member does with a request once closed:
///
/// | member | refused request | what ran already |
/// |---|---|---|
/// | `TaskSlots` | `run` returns `nil`; `runAndWait` returns `nil` at once, as for a run that was superseded | runs on (queued runs too) until `shutdown` cancels it |
/// | `SingleFlight` | `run` returns `nil` at once, a call that would join included | runs on for its callers until `shutdown` cancels it |
/// | `PassthroughFlow`, `CurrentValueFlow` | the subject is finished, as by `finish()`: `send` is ignored, a new subscriber finishes at once | subscribers get what was buffered for them, then the end |
/// | `shareFlow`, `KeyedShareFlow` | the share ends: a new subscriber finishes at once | the upstream is cancelled; subscribers get what was buffered, then the end |
///
/// A refused request gets what a cancelled one gets (`nil`, or the end), so a caller handles both
/// alike; ``isClosed`` tells which it was.
///
/// ## Shutting down
///
/// ``shutdown(timeout:clock:)`` closes, then cancels every run in flight (their callers get `nil`
/// at once, as when cancelled), and waits until every task the library started for its members
/// has ended: the runs' tasks, the shares' upstreams and grace timers, the `sink`s' deliveries.
/// At the deadline it returns what is still running, in a ``FlowShutdownReport``.
///
/// A member holds no strong reference to its owner's other members, and the owner holds its
/// members weakly: a `TaskSlots` released before the shutdown cancels its runs as it always does.
///
/// ## Context
///
/// The owner starts a task of its own where it is made, parked while nothing starts. A share made
/// with it runs its upstream in that task's context: the task-local values and priority of the
/// code that made the owner, every run of it, whoever subscribes (without an owner, the
/// subscriber's that started it). So a service binds its own request ID once:
///
/// ```swift
/// enum Log { @TaskLocal static var requestID = "-" }
/// let serviceOwner = Log.$requestID.withValue("feed-service") { FlowOwner() }
/// let quotes = Flow.sequence([1, 2]).shareFlow(owner: serviceOwner)   // connects log "feed-service"
/// ```
///
/// `TaskSlots` and `SingleFlight` runs keep their caller's context, as without an owner: their
/// operations are the caller's request.
public final class FlowOwner: Sendable {
  typealias Machine = FlowOwnerStateMachine<OwnedMemberReference, UnsafeContinuation<Void, Never>>
  let state = LockedState(Machine())

  /// The race tests' seam: called by a member after it decided to start a task and before it
  /// starts it, with the caller's ticket held.
  @usableFromInline let decided: (@Sendable () -> Void)?

  /// Where the owner's own task takes the starts that run in its context.
  let context = OwnerContext()
  /// The owner's own task, started where the owner was made; it ends with the shutdown, or when
  /// the owner is released.
  let contextTask: Task<Void, Never>

  /// Creates an owner that admits work until it is closed, with a task of its own, started here:
  /// the shares made with it run their upstreams in its context (the task-local values, priority
  /// and, under a `TestClock`, the executor of the code that made it), whoever subscribes. The
  /// task is parked while nothing starts (no thread), and ends with the shutdown, or when the
  /// owner is released.
  ///
  /// ```swift
  /// let owner = FlowOwner()
  /// ```
  public init() {
    decided = nil
    contextTask = FlowScheduling.startTask { [context] in await context.serve() }
  }

  /// An owner whose members call `decided` between a decision to start a task and its start.
  package init(decided: @escaping @Sendable () -> Void) {
    self.decided = decided
    contextTask = FlowScheduling.startTask { [context] in await context.serve() }
  }

  deinit {
    context.close()
  }

  /// Whether the owner refuses new work (``close()`` or ``shutdown(timeout:clock:)`` was called).
  ///
  /// ```swift
  /// let owner = FlowOwner()
  /// owner.close()
  /// #expect(owner.isClosed)
  /// ```
  public var isClosed: Bool {
    state.withLock { $0.isClosed }
  }

  /// Refuses new work from now on: see "Closing" above. What runs is left running; call
  /// ``shutdown(timeout:clock:)`` to cancel it and wait for it. Calling it again does nothing.
  ///
  /// ```swift
  /// let owner = FlowOwner()
  /// let slots = TaskSlots<String>(owner: owner)
  /// owner.close()
  /// #expect(slots.run("refresh") {} == nil)   // refused
  /// ```
  public func close() {
    for member in state.withLock({ $0.close() }) { member.member?.ownerClosed() }
  }

  /// Closes the owner, cancels what its members run, and returns once every task the library
  /// started for them has ended, or at `timeout` on `clock` with what is still running. Without a
  /// `timeout` it waits as long as that takes. Its caller's cancellation ends the wait at once, with
  /// what is still running then.
  ///
  /// ```swift
  /// let owner = FlowOwner()
  /// let report = await owner.shutdown(timeout: .seconds(5))
  /// #expect(report.isComplete)
  /// ```
  ///
  /// - Parameters:
  ///   - timeout: How long to wait for the cancelled work to end; `.zero` or greater, or `nil`
  ///     to wait until it has ended.
  ///   - clock: The clock of the timeout (a `TestClock` in tests); unused without one.
  public func shutdown(
    timeout: Duration? = nil, clock: some Clock<Duration> = ContinuousClock()
  ) async -> FlowShutdownReport {
    if let timeout {
      precondition(
        timeout >= .zero, "FlowOwner.shutdown(timeout:clock:): timeout must be .zero or greater, got \(timeout)")
    }
    cancelMembers()
    let waiterID = state.withLock { $0.makeWaiterID() }
    let deadline = timeout.map { clock.now.advanced(by: $0) }
    // The deadline is a task of its own, which takes the waiter out when it fires; it is awaited
    // before this returns, so that nothing the shutdown started outlives it.
    let timer = deadline.map { deadline in
      FlowScheduling.startTask {
        guard (try? await clock.sleep(until: deadline, tolerance: nil)) != nil else { return }
        self.stopWaiting(waiterID)
      }
    }
    await withTaskCancellationHandler {
      await withOrderedContinuation { (waiter: UnsafeContinuation<Void, Never>) in
        if let now = state.withLock({ $0.wait(waiterID, waiter: waiter, isCancelled: Task.isCancelled) }) {
          now.resume()
        }
      }
    } onCancel: {
      stopWaiting(waiterID)
    }
    timer?.cancel()
    await timer?.value
    let report = FlowShutdownReport(left: state.withLock { $0.left })
    // Every start asked of the owner's task was under a ticket: with none left, none is pending.
    // At the deadline one may be: the task runs it, then ends.
    context.close()
    await contextTask.value
    return report
  }

  /// The shutdown's first step: close, then cancel what every member runs.
  func cancelMembers() {
    close()
    for member in state.withLock({ $0.allMembers }) { member.member?.ownerShutdown() }
  }

  private func stopWaiting(_ waiterID: Int) {
    state.withLock { $0.stopWaiting(waiterID) }?.resume()
  }

  // MARK: For the members

  /// `member` is made with this owner; closed at once if the owner is.
  func adopt(_ member: some FlowOwnedMember) {
    if state.withLock({ $0.register(OwnedMemberReference(member), id: ObjectIdentifier(member)) }) == false {
      member.ownerClosed()
      member.ownerShutdown()
    }
  }

  /// `member` is gone (its `deinit`).
  func forget(_ member: some FlowOwnedMember) {
    let reference = state.withLock { $0.unregister(ObjectIdentifier(member)) }
    withExtendedLifetime(reference) {}
  }

  /// Runs `start` in the owner's own task, so that the task it starts runs in the owner's
  /// context; in the caller once that task has ended (after the shutdown: nothing is admitted).
  func inOwnContext(_ start: @escaping @Sendable () -> Void) {
    if !context.submit(start) { start() }
  }

  /// A ticket for work of `kind`, unless the owner is closed: see `FlowOwnerStateMachine`.
  @usableFromInline func admit(_ kind: OwnedWork) -> Bool {
    state.withLock { $0.admit(kind) }
  }

  /// A ticket for a task started under a ticket already held.
  @usableFromInline func retain(_ kind: OwnedWork) {
    state.withLock { $0.retain(kind) }
  }

  /// Gives a ticket back; the last one lets a shutdown return.
  @usableFromInline func release(_ kind: OwnedWork) {
    for waiter in state.withLock({ $0.release(kind) }) { waiter.resume() }
  }
}

/// What a member of a ``FlowOwner`` does when its owner closes and shuts down. Called after the
/// owner's lock, once each (`ownerShutdown` after `ownerClosed`).
protocol FlowOwnedMember: AnyObject, Sendable {
  /// Refuse new work, under the member's own lock.
  func ownerClosed()
  /// Cancel what runs.
  func ownerShutdown()
}

/// A member, held weakly: the owner does not keep it alive.
struct OwnedMemberReference: @unchecked Sendable {
  // Unchecked: written once at creation, read under the owner's lock or after it.
  weak var member: (any FlowOwnedMember)?

  init(_ member: any FlowOwnedMember) { self.member = member }
}

/// What a ``FlowOwner/shutdown(timeout:clock:)`` left running at its deadline (all zero when it
/// returned because everything had ended).
///
/// ```swift
/// let report = await FlowOwner().shutdown(timeout: .seconds(5))
/// print(report.runs, report.upstreams, report.deliveries, report.isComplete)
/// ```
public struct FlowShutdownReport: Sendable, Hashable, CustomStringConvertible {
  /// Tasks of `TaskSlots` and `SingleFlight` runs that had not ended.
  ///
  /// ```swift
  /// if report.runs > 0 { print("a run ignores its cancellation") }
  /// ```
  public let runs: Int
  /// Share upstreams and grace timers that had not ended.
  ///
  /// ```swift
  /// if report.upstreams > 0 { print("an upstream ignores its cancellation") }
  /// ```
  public let upstreams: Int
  /// `sink` deliveries (a closure in progress) that had not ended.
  ///
  /// ```swift
  /// if report.deliveries > 0 { print("a sink's closure is still running") }
  /// ```
  public let deliveries: Int
  /// Callers admitted before the close whose work had not started yet (a moment's worth).
  ///
  /// ```swift
  /// print(report.calls)
  /// ```
  public let calls: Int

  init(left: [Int]) {
    (runs, upstreams, deliveries, calls) = (left[0], left[1], left[2], left[3])
  }

  /// Whether everything had ended.
  ///
  /// ```swift
  /// #expect(report.isComplete)
  /// ```
  public var isComplete: Bool { runs == 0 && upstreams == 0 && deliveries == 0 && calls == 0 }

  /// The counts, for a log line.
  ///
  /// ```swift
  /// print("shutdown left \(report)")
  /// ```
  public var description: String {
    "FlowShutdownReport(runs: \(runs), upstreams: \(upstreams), deliveries: \(deliveries), calls: \(calls))"
  }
}
