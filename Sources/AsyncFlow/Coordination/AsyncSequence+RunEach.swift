extension AsyncSequence where Self: Sendable, Element: Equatable & Sendable, Failure == Never {
  /// Feeds this sequence's elements into `slots` under `id`, each one a request: it starts a run of
  /// `operation` with the element, related to the runs in flight there by `policy` as `run`
  /// relates them, unless it equals the identity's last request. So a debounced keyword joins the one load path of a
  /// screen: it supersedes the load that appear or retry started under the same identity, and a
  /// keyword equal to the last one asked for, by this feeding or by
  /// ``TaskSlots/run(_:request:policy:priority:trigger:operation:)`` (appear, retry), loads nothing.
  ///
  /// The identity's last request is its last run's, whichever entry point started it, until a newer
  /// run replaces it (a run without a request forgets it) or that run is cancelled before it ended:
  /// then the next element equal to it runs, since its answer never came. A run that failed keeps
  /// it: an explicit `run(_:request:)` (a retry button) loads again. The comparison and the
  /// registration are one step under the registry's lock, so no other entry point comes in between.
  ///
  /// The iteration runs in a task the returned subscription owns, started at once, which does not
  /// wait for the runs: an element arriving while one runs goes by `policy` (`latestWins`: the new
  /// run supersedes it). Cancelling the subscription, or releasing it, ends the iteration and cancels
  /// the runs it started that are still registered, and no run starts from it after `cancel()`
  /// returns; runs that other entry points started are left alone. The iteration holds the registry,
  /// not its `TaskSlots`: releasing the `TaskSlots` cancels every run and ends the iteration at its
  /// next element. When the sequence finishes, the iteration ends and its runs go on.
  ///
  /// ```swift
  /// @MainActor @Observable private final class SearchModel {
  ///   var keyword = ""
  ///   private(set) var results: [Item] = []
  ///   @ObservationIgnored private let slots = TaskSlots<String>()
  ///   @ObservationIgnored private var subscriptions = Set<FlowSubscription>()
  ///
  ///   func onAppear() {
  ///     slots.run("search", request: keyword, trigger: "appear", operation: load)
  ///     Flow.observing(\.keyword, on: self)
  ///       .debounceFlow(for: .milliseconds(300))
  ///       .runEach(in: slots, id: "search", trigger: "typing", operation: load)   // a repeat loads nothing
  ///       .store(in: &subscriptions)
  ///   }
  ///
  ///   func retry() {
  ///     slots.run("search", request: keyword, trigger: "retry", operation: load)   // loads, even if the same
  ///   }
  ///
  ///   /// The one load path: what each run does with its keyword.
  ///   private var load: @Sendable @MainActor (String) async throws -> Void {
  ///     { [weak self] keyword in
  ///       for try await found in api.search(keyword) where !Task.isCancelled { self?.results = found }
  ///     }
  ///   }
  /// }
  /// ```
  ///
  /// - Parameters:
  ///   - slots: The registry whose identity the elements run under.
  ///   - id: The identity: the one that the screen's other entry points run under.
  ///   - policy: What a new run does to the runs in flight; latest wins by default.
  ///   - trigger: The runs' reason, for the registry's request log.
  ///   - operation: What a run does with its element, on its own isolation.
  public func runEach<ID: Hashable & Sendable>(
    in slots: TaskSlots<ID>, id: ID, policy: SlotPolicy = .latestWins, trigger: String? = nil,
    operation: @escaping @Sendable @isolated(any) (Element) async throws -> Void
  ) -> FlowSubscription {
    // The registry, not the `TaskSlots`: its owner's release must still close it.
    let storage = slots.storage
    let feed = storage.state.withLock { $0.makeWaiterID() }
    // Made here, not in the task, as `sink` does: a value sent right after this returns is fed.
    var iterator = makeAsyncIterator()
    let task = FlowScheduling.startTask {
      await withTaskCancellationHandler {
        while let request = await iterator.next(isolation: nil) {
          let run = TaskSlotsStorage<ID>.Operation.applying(isolation: operation.isolation) { _ in
            try await operation(request)
          }
          // `false`: this task is cancelled, or the `TaskSlots` is gone.
          guard storage.request(request, id: id, feed: feed, policy: policy, trigger: trigger, operation: run) else {
            return
          }
        }
      } onCancel: {
        storage.cancel(id, feed: feed)
      }
      // The handler may not have run: the flag is set before it is called, so the loop can see the
      // cancellation and leave the handler's scope first, and the handler is then never called.
      if Task.isCancelled { storage.cancel(id, feed: feed) }
    }
    return FlowSubscription(gate: SinkDeliveryGate(), owner: .task(task))
  }
}
