/// An owner-scoped registry of tasks with one slot per identity, and a rule for what a new task
/// does to the one in flight: the single entry point that app code needs when work starts from
/// many places (appear, refresh, retry, typing).
///
/// Tasks end with their owner: releasing the `TaskSlots` cancels every task it started.
///
/// ```swift
/// enum Work: Hashable { case search, refresh, articles, details(Int), submit }
///
/// @MainActor final class SearchModel {
///   private let slots = TaskSlots<Work>()
///   var results: [Item] = []
///
///   func queryChanged(_ query: String) {
///     slots.run(.search) { @MainActor in              // latest wins
///       let found = try? await api.articles(page: 1)
///       guard let found, !Task.isCancelled else { return }   // a cancelled search writes nothing
///       self.results = found
///     }
///   }
/// }
/// ```
///
/// ## Spinners under `latestWins`
///
/// `defer { isLoading = false }` in the operation is wrong: a superseded run is cancelled, not
/// awaited, so its cleanup runs after its successor started and turns the new run's spinner off
/// while the new request is still in flight. Either let each run check, with the ``Run`` token,
/// that no newer run took its identity over, and turn the spinner on inside the operation too (a
/// run cancelled before its operation starts, by `cancel(_:)` right after `run`, runs nothing, not
/// even its `defer`, so a spinner turned on before `run` would stay on):
///
/// ```swift
/// @Observable @MainActor private final class FeedModel {
///   private(set) var items: [Item] = []
///   private(set) var isRefreshing = false
///   @ObservationIgnored private let slots = TaskSlots<String>()
///
///   func refresh() {
///     slots.run("refresh") { @MainActor [weak self] run in
///       self?.isRefreshing = true
///       defer { if run.isLatest { self?.isRefreshing = false } }   // a successor owns the spinner
///       let page = try? await api.articles(page: 1)
///       guard let self, let page, !Task.isCancelled else { return }
///       self.items = page
///     }
///   }
/// }
/// ```
///
/// or keep no flag at all and bind the slot's running state, which stays `true` from the first
/// run to the end of the last one: see ``isRunningFlow(_:)``.
///
/// ## A run that never began
///
/// A run superseded or cancelled before its operation begins never begins it, whatever the
/// operation's isolation: its task checks, on the operation's own actor, right before calling it,
/// that it was not cancelled and is still registered. So two entry points in one main-actor turn
/// (`category = "b"; retry()`) send one request, and an operation needs no
/// `guard !Task.isCancelled` as its first line.
///
/// ## Awaiting a run
///
/// `run` returns the run's task, whose `value` ignores the caller's cancellation. For a caller that
/// waits for its run (`.refreshable`'s `refresh() async`), use
/// ``runAndWait(_:policy:priority:trigger:operation:)``: the caller's cancellation cancels the run,
/// and the caller gets what the operation returned or threw, unless the run was superseded or
/// cancelled: then it gets `nil`, so a stale result or failure is never the caller's to write.
///
/// ## Mixed policies on one identity
///
/// The policy of the new run decides, whatever the policies of the runs already registered under
/// its identity:
///
/// | new run | runs registered under the identity |
/// |---|---|
/// | `latestWins` | all cancelled and removed, queued ones included (they never run); the new run starts at once |
/// | `firstWins` | if any (of any policy), the new run is ignored and `run` returns `nil` |
/// | `queue` | the new run starts after every one of them has ended |
/// | `concurrent` | untouched; the new run starts at once |
///
/// So a `latestWins` run cancels a `firstWins` write in flight: give writes an identity of their own.
///
/// ## Identities
///
/// An identity is a value (an enum case, with a row's id where needed): its `==`, `hash(into:)` and
/// release run while the registry's lock is held, so an identity that holds an object whose
/// `deinit` calls back into the same `TaskSlots` would deadlock. Operations, their captures, tasks
/// and trigger names are released, and cancellation handlers run, only after the lock.
public final class TaskSlots<ID: Hashable & Sendable>: Sendable {
  @usableFromInline let storage: TaskSlotsStorage<ID>

  /// Creates an empty registry; keep it in the object whose lifetime the tasks share. With a
  /// `log`, every run is numbered and what happens to it is recorded there (see ``RequestLog``).
  /// With an `owner`, the registry refuses new runs once the owner closes (`run` and `runAndWait`
  /// return `nil`), and the owner's shutdown cancels its runs and waits until their tasks have
  /// ended (see ``FlowOwner``).
  ///
  /// ```swift
  /// let slots = TaskSlots<Work>()
  /// let logged = TaskSlots<Work>(log: RequestLog())
  /// let owned = TaskSlots<Work>(owner: FlowOwner())   // a service's, closed at its shutdown
  /// @Sendable func reloadFeed() async {}   // the app's reload, for the examples below
  /// ```
  public init(owner: FlowOwner? = nil, log: RequestLog<ID>? = nil) {
    storage = TaskSlotsStorage(log: log, owner: owner)
  }

  deinit {
    storage.close()
  }

  /// Starts `operation` under `id`, related to the task in flight there by `policy`.
  ///
  /// - `latestWins` (the default): the task in flight is cancelled, and leaves the slot in the step
  ///   that registers the new one (never two registrations for one identity), before the new task
  ///   starts. Its task is cancelled by the call that took it out, after the registry's lock, and
  ///   no later operation of the identity begins until that cancellation (its cancellation
  ///   handlers included) has run, whichever thread calls: two operations of one identity never
  ///   run uncancelled at once. Its end never removes its successor. It is cancelled, not
  ///   awaited: it may still run (until its next cancellation check, or through cleanup) while
  ///   the new one starts. When its end matters (it holds a resource, or writes what the new one
  ///   reads), await the task that `run` returned for it at the start of the new operation:
  ///
  ///   ```swift
  ///   var reload: Task<Void, Never>?   // the last reload's task
  ///   let previous = reload
  ///   reload = slots.run(.refresh) {
  ///     await previous?.value   // the cancelled reload has ended, its cleanup done
  ///     await reloadFeed()
  ///   }
  ///   ```
  /// - `firstWins`: while a task runs, nothing starts and `run` returns `nil`.
  ///
  /// Once the registry's ``FlowOwner`` is closed, nothing starts and `run` returns `nil`.
  /// - `queue`: the new task runs after the ones before it, in call order.
  /// - `concurrent`: no relation.
  ///
  /// Runs of different policies may share an identity: see "Mixed policies on one identity" above.
  /// The closure runs on its own isolation: a `@MainActor` closure may write main-actor state. It
  /// may throw: its failure ends the run, and the request log records it as `failed` (a run
  /// superseded or cancelled is `cancelled`, whatever it threw). A caller that wants the failure,
  /// or a value, awaits the run with ``runAndWait(_:policy:priority:trigger:operation:)``.
  ///
  /// `trigger` names why the run was asked for ("appear", "refresh", "retry"), for the request
  /// log that the `TaskSlots` was created with; without a log it is ignored.
  ///
  /// ```swift
  /// slots.run(.refresh) { await reloadFeed() }
  /// slots.run(.articles, trigger: "pull to refresh") { await reloadFeed() }
  /// slots.run(.submit, policy: .firstWins) { try await api.upload("order #7") }   // logged `failed` if it throws
  /// ```
  @inlinable @discardableResult
  public func run(
    _ id: ID, policy: SlotPolicy = .latestWins, priority: TaskPriority? = nil, trigger: String? = nil,
    operation: @escaping @Sendable @isolated(any) () async throws -> Void
  ) -> Task<Void, Never>? {
    storage.run(id, policy: policy, priority: priority, trigger: trigger, operation: .plain(operation))
  }

  /// Starts `operation` under `id` as the `run` whose operation takes no argument does, and hands
  /// it its ``Run``: the token that tells, in the operation's cleanup, whether a newer run has
  /// taken the identity over.
  ///
  /// ```swift
  /// @MainActor final class Spinner { var isOn = false }
  /// let spinner = await Spinner()
  ///
  /// slots.run(.refresh) { @MainActor run in
  ///   spinner.isOn = true   // here, not before `run`: a run cancelled before it starts runs nothing
  ///   defer { if run.isLatest { spinner.isOn = false } }
  ///   await reloadFeed()
  /// }
  /// ```
  @inlinable @discardableResult
  public func run(
    _ id: ID, policy: SlotPolicy = .latestWins, priority: TaskPriority? = nil, trigger: String? = nil,
    operation: @escaping @Sendable @isolated(any) (Run) async throws -> Void
  ) -> Task<Void, Never>? {
    storage.run(id, policy: policy, priority: priority, trigger: trigger, operation: .withRun(operation))
  }

  /// Starts `operation` under `id` as the `run` whose operation takes no argument does, for
  /// `request`, which it hands the operation, and which becomes the identity's last request: a
  /// ``_Concurrency/AsyncSequence/runEach(in:id:policy:trigger:operation:)`` feeding the same
  /// identity starts nothing for an element equal to it. This call compares nothing: an explicit
  /// entry point (appear, retry) loads, whatever was asked before.
  ///
  /// The identity remembers its last run's request until a newer run replaces it (a run without a
  /// request forgets it), or that run is cancelled before it ended (`cancel(_:)`, `cancelAll()`, its
  /// feeding's cancellation, its task's): its answer then never came. A run that failed keeps it.
  /// A request's `==` and its release run while the registry's lock is held, as an identity's do
  /// (it is released after the lock when a step forgets it).
  ///
  /// ```swift
  /// @Sendable func search(_ keyword: String) async throws -> [Item] { [] }   // the app's search
  ///
  /// let keyword = "swift"
  /// slots.run(.search, request: keyword, trigger: "retry") { keyword in
  ///   _ = try await search(keyword)
  /// }
  /// ```
  @inlinable @discardableResult
  public func run<Request: Equatable & Sendable>(
    _ id: ID, request: Request, policy: SlotPolicy = .latestWins, priority: TaskPriority? = nil,
    trigger: String? = nil, operation: @escaping @Sendable @isolated(any) (Request) async throws -> Void
  ) -> Task<Void, Never>? {
    storage.run(
      id, policy: policy, priority: priority, trigger: trigger, request: request,
      operation: .applying(isolation: operation.isolation, body: { _ in try await operation(request) }))
  }

  /// Starts `operation` under `id`, related to the runs in flight by `policy` as `run` does, and
  /// returns what it returned once the run has ended: the `refresh() async` that SwiftUI's
  /// `.refreshable` awaits, with latest wins and the slot's other rules. The caller's cancellation
  /// cancels the run (`await task.value` would not), so a screen that leaves ends its refresh. The
  /// operation's failure is rethrown here, typed.
  ///
  /// The caller gets the operation's value or failure only if the run was delivered: it ended
  /// still registered and not cancelled. Otherwise the call returns `nil`, and throws nothing:
  ///
  /// - A run superseded by a newer one, or cancelled (`cancel(_:)`, `cancelAll()`, the
  ///   `TaskSlots` released, or the caller's own cancellation), returns `nil` when it has ended:
  ///   its operation has returned (or never began), so nothing it writes comes later, and what it
  ///   returned or threw, stale by then, reaches no one.
  /// - `firstWins` while a run is registered joins it: the call starts nothing and returns `nil`
  ///   when the runs in flight have left (ended or cancelled), or at once when its caller is
  ///   cancelled, leaving them running. Their value and failure are their callers'.
  /// - A caller already cancelled when it calls changes nothing (no run is registered, none in
  ///   flight is superseded) and gets `nil` at once, as a cancelled task's `Task.checkCancellation()`
  ///   would stop it before its first step.
  /// - A `TaskSlots` released during the call, or whose ``FlowOwner`` is closed, starts nothing,
  ///   and the call returns `nil` at once.
  /// - `queue` waits for its own run, after the ones before it; its caller's cancellation drops
  ///   it from the queue, and it returns `nil` then.
  ///
  /// So a model writes what the call returns, and its failure, with no staleness check of its own:
  ///
  /// ```swift
  /// @Observable @MainActor final class FeedScreen {
  ///   private(set) var items: [Item] = []
  ///   private(set) var failure: APIError?
  ///   @ObservationIgnored private let slots = TaskSlots<String>()
  ///
  ///   /// `.refreshable { await screen.refresh() }`: the spinner stays until this returns.
  ///   func refresh() async {
  ///     do throws(APIError) {
  ///       // `nil`: superseded by a newer pull, or the screen left.
  ///       guard let page = try await slots.runAndWait("feed", operation: { () throws(APIError) in
  ///         try await api.articles(page: 1)
  ///       }) else { return }
  ///       (items, failure) = (page, nil)
  ///     } catch {
  ///       failure = error   // the latest pull's failure only
  ///     }
  ///   }
  ///
  ///   /// A queued save: its failure reaches the caller.
  ///   func save(_ text: String) async throws(APIError) {
  ///     try await slots.runAndWait("save", policy: .queue) { () throws(APIError) in try await api.upload(text) }
  ///   }
  /// }
  /// ```
  @inlinable @discardableResult
  public func runAndWait<Success: Sendable, Failure: Error>(
    _ id: ID, policy: SlotPolicy = .latestWins, priority: TaskPriority? = nil, trigger: String? = nil,
    operation: @escaping @Sendable @isolated(any) () async throws(Failure) -> Success
  ) async throws(Failure) -> Success? {
    try await storage.runAndWait(id, policy: policy, priority: priority, trigger: trigger, operation: operation)
  }

  /// Cancels every task under `id`: the running one, and the queued ones, which then never run.
  ///
  /// ```swift
  /// let row = Item(id: 7, title: "Swift 6")
  /// slots.cancel(.details(row.id))   // the row scrolled away
  /// ```
  @inlinable public func cancel(_ id: ID) {
    storage.cancel(id)
  }

  /// Cancels every task; releasing the `TaskSlots` does the same.
  ///
  /// ```swift
  /// slots.cancelAll()   // the screen closed
  /// ```
  @inlinable public func cancelAll() {
    storage.cancelAll()
  }

  /// Whether a task is registered under `id`.
  ///
  /// ```swift
  /// let canSubmit = !slots.isRunning(.submit)   // the submit button's state
  /// ```
  @inlinable public func isRunning(_ id: ID) -> Bool {
    storage.state.withLock { $0.isRunning(id) }
  }

  /// Whether a task is registered under `id`, as a flow: the current state first, then each
  /// change, without repeats. For an `@Observable` model's spinner, with no flag of its own to
  /// keep right: the state stays `true` while one run replaces another, and turns `false` when
  /// the last run under `id` ends or is cancelled.
  ///
  /// States are conflated: a consumer that is busy while the state turns `false` and back to
  /// `true` sees `true` still, and nothing. The flow finishes when its consumer is cancelled, and
  /// when the `TaskSlots` is released (after `false`, if it last delivered `true`).
  ///
  /// A bound flag is one step behind the registry: the change travels through the flow's
  /// consumer, a task, before it is written. Right after `run`, ``isRunning(_:)`` is `true` while
  /// a flag bound with `assignFlow` is still `false`, until that task has run (in a test, after
  /// `await clock.runCurrent()` or any other await of the test). A screen shows the spinner a
  /// few scheduler hops later, which no user sees; a test that reads at once reads
  /// `isRunning(_:)`, or awaits first.
  ///
  /// ```swift
  /// @Observable @MainActor private final class ArticlesModel {
  ///   private(set) var isRefreshing = false
  ///   @ObservationIgnored private let slots = TaskSlots<String>()
  ///   @ObservationIgnored private var subscriptions = Set<FlowSubscription>()
  ///
  ///   init() {
  ///     slots.isRunningFlow("refresh").assignFlow(to: \.isRefreshing, on: self).store(in: &subscriptions)
  ///   }
  /// }
  /// ```
  public func isRunningFlow(_ id: ID) -> Flow<Bool, Never> {
    storage.isRunningFlow(id)
  }

  /// The number of registered tasks, over every identity.
  ///
  /// ```swift
  /// #expect(slots.runningCount == 0)
  /// ```
  @inlinable public var runningCount: Int {
    storage.state.withLock { $0.runningCount }
  }
}

extension TaskSlots {
  /// One run of an operation under an identity, handed to the operation by the `run` whose
  /// operation takes a `Run`: it tells whether a newer run has taken the identity over, so that
  /// cleanup touches shared state (a spinner) only when no successor owns it.
  ///
  /// A run cancelled before its operation starts never gets a `Run`: its operation, cleanup
  /// included, does not run. So the operation turns the spinner on as well as off.
  ///
  /// ```swift
  /// slots.run(.refresh) { @MainActor run in
  ///   spinner.isOn = true
  ///   defer { if run.isLatest { spinner.isOn = false } }
  ///   await reloadFeed()
  /// }
  /// ```
  public struct Run: Sendable {
    @usableFromInline let storage: TaskSlotsStorage<ID>

    /// The identity the run was started under.
    ///
    /// ```swift
    /// slots.run(.details(row.id)) { run in print("loading \(run.id)") }
    /// ```
    public let id: ID

    /// The run's number: from 1, in call order; with a request log, the number the log records
    /// it under (unique among everything that writes to that log), for the caller's own logs.
    ///
    /// ```swift
    /// slots.run(.articles) { run in print("request #\(run.number)") }
    /// ```
    public let number: Int

    @inlinable init(storage: TaskSlotsStorage<ID>, id: ID, number: Int) {
      self.storage = storage
      self.id = id
      self.number = number
    }

    /// Whether no run started after this one under the same identity is still registered: `false`
    /// once a newer run was registered (a `latestWins` successor, a queued or concurrent one) and
    /// until it ends; `true` otherwise, also when this run was cancelled with nothing after it
    /// (`cancel(_:)`, `cancelAll()`, releasing the `TaskSlots`).
    ///
    /// That is the spinner's question: "does a newer run own it?". Whether to write a result is
    /// another one: a cancelled run writes nothing (`Task.isCancelled`), even when it is the latest.
    /// Under `concurrent`, an older run may still run when the latest ends, and the latest is then
    /// `true`: for a spinner over concurrent runs, bind ``TaskSlots/isRunningFlow(_:)`` instead.
    ///
    /// ```swift
    /// slots.run(.refresh) { @MainActor run in
    ///   defer { if run.isLatest { spinner.isOn = false } }
    ///   await reloadFeed()
    /// }
    /// ```
    @inlinable public var isLatest: Bool {
      storage.state.withLock { $0.isLatest(id, token: number) }
    }
  }
}
