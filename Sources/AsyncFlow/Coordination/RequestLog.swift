/// What happened to each run of a ``TaskSlots`` (or each call of a ``SingleFlight``), in the order
/// it happened: the log to read when a screen shows stale data and "only the endpoint name" is not
/// enough to tell a late write from a repeated trigger or a lost cancellation.
///
/// Every `run` gets a number (from 1, in call order, shared by everything that writes to the same
/// log), the identity it ran under, and the trigger its caller named. The log keeps the last
/// `capacity` entries, so it can stay on in a shipping app; recording costs a few uncontended lock
/// acquisitions per run (the `W6.taskSlotsLatestLogged` benchmark row).
///
/// ```swift
/// @Sendable func loadArticles() async {}   // the app's load
/// let log = RequestLog<String>()
/// let slots = TaskSlots<String>(log: log)
/// slots.run("articles", trigger: "appear") { await loadArticles() }     // #1
/// slots.run("articles", trigger: "refresh") { await loadArticles() }    // #2
/// print(log)
/// // #1 articles [appear] started
/// // #1 articles [appear] superseded by #2
/// // #2 articles [refresh] started
/// // #1 articles [appear] cancelled
/// // #2 articles [refresh] finished
/// ```
///
/// Entries are recorded while the owner's lock is held, so that their order is the order in which
/// the owner decided: the entry for a superseded run comes before its successor's `started`. The
/// log runs no user code; its identities are values, released (when an entry leaves the log) under
/// that lock, as the owner's own table releases them.
public final class RequestLog<ID: Hashable & Sendable>: Sendable, CustomStringConvertible {
  /// Locked by an owner inside its own lock, so that a call's number and the entries of what the
  /// owner decided come in one acquisition, in the order of the owner's decisions.
  @usableFromInline struct Storage {
    @usableFromInline let capacity: Int
    @usableFromInline var nextNumber = 1
    @usableFromInline var entries = RingBuffer<Entry>()

    @inlinable init(capacity: Int) { self.capacity = capacity }

    @inlinable mutating func takeNumber() -> Int {
      defer { nextNumber += 1 }
      return nextNumber
    }

    @inlinable mutating func append(_ entry: Entry) {
      if entries.count == capacity { _ = entries.popFirst() }
      entries.append(entry)
    }
  }

  @usableFromInline let storage: LockedState<Storage>

  /// How many entries the log keeps; the oldest leave first.
  ///
  /// ```swift
  /// #expect(RequestLog<String>().capacity == 1_000)
  /// ```
  public let capacity: Int

  /// Creates an empty log that keeps the last `capacity` entries.
  ///
  /// ```swift
  /// let log = RequestLog<String>(capacity: 200)   // enough for a bug report
  /// ```
  ///
  /// - Precondition: `capacity` is at least 1.
  public init(capacity: Int = 1_000) {
    precondition(capacity >= 1, "RequestLog(capacity:): capacity must be at least 1, got \(capacity)")
    self.capacity = capacity
    storage = LockedState(Storage(capacity: capacity))
  }

  /// The entries kept, oldest first.
  ///
  /// ```swift
  /// #expect(log.entries.last?.event == .finished)
  /// ```
  public var entries: [Entry] {
    storage.withLock { Array($0.entries) }
  }

  /// The entries of one run, oldest first.
  ///
  /// ```swift
  /// #expect(log.entries(ofRun: 3).map(\.event) == [.started, .superseded(by: 4), .cancelled])
  /// ```
  public func entries(ofRun run: Int) -> [Entry] {
    storage.withLock { $0.entries.filter { $0.run == run } }
  }

  /// One line per entry kept, oldest first, as in `#3 articles [load] superseded by #4`.
  ///
  /// ```swift
  /// print(log)
  /// ```
  public var description: String {
    entries.map(\.description).joined(separator: "\n")
  }

  @inlinable func record(_ entry: Entry) {
    storage.withLock { $0.append(entry) }
  }
}

extension RequestLog {
  /// One thing that happened to one run.
  ///
  /// ```swift
  /// let entry = RequestLog<String>.Entry(run: 3, id: "articles", trigger: "load", event: .superseded(by: 4))
  /// print(entry)   // #3 articles [load] superseded by #4
  /// ```
  public struct Entry: Sendable, Hashable, CustomStringConvertible {
    /// The run's number: from 1, in call order, unique within the log.
    ///
    /// ```swift
    /// let third = log.entries.filter { $0.run == 3 }
    /// ```
    public var run: Int

    /// The identity the run was started under.
    ///
    /// ```swift
    /// #expect(entry.id == "articles")
    /// ```
    public var id: ID

    /// What the caller named as the reason for the run (`trigger:` in `run`), if anything.
    ///
    /// ```swift
    /// #expect(entry.trigger == "refresh")
    /// ```
    public var trigger: String?

    /// What happened.
    ///
    /// ```swift
    /// if case .superseded(let successor) = entry.event { print("replaced by #\(successor)") }
    /// ```
    public var event: Event

    /// Creates an entry, for comparing with what the log recorded.
    ///
    /// ```swift
    /// #expect(log.entries.contains(.init(run: 3, id: "articles", trigger: "load", event: .superseded(by: 4))))
    /// ```
    @inlinable
    public init(run: Int, id: ID, trigger: String?, event: Event) {
      self.run = run
      self.id = id
      self.trigger = trigger
      self.event = event
    }

    /// The entry as one line: `#3 articles [load] superseded by #4`.
    ///
    /// ```swift
    /// print(entry)
    /// ```
    public var description: String {
      let trigger = self.trigger.map { " [\($0)]" } ?? ""
      return "#\(run) \(id)\(trigger) \(event)"
    }
  }

  /// What happened to a run. A run of a `TaskSlots` gets one of `started`, `queued` or `ignored`
  /// when it is called; a started or queued run later gets exactly one of `finished`, `failed` or
  /// `cancelled`, when its task ends (a queued run gets `started` too, when its turn comes, unless
  /// it was cancelled first), and `superseded(by:)` in between if a `latestWins` run replaced it.
  /// A call of a `SingleFlight` gets `started` (and later `finished`, `failed` or `cancelled`), or
  /// `joined(run:)`, or, when its task was cancelled before it called, `cancelled` alone.
  ///
  /// The names are the outcomes as a reader of the log asks about them ("was load #3 superseded,
  /// and by what?"), in the past tense of the verbs the guides use for the slot policies.
  ///
  /// ```swift
  /// #expect(log.entries(ofRun: 3).map(\.event) == [.started, .superseded(by: 4), .cancelled])
  /// ```
  public enum Event: Sendable, Hashable, CustomStringConvertible {
    /// The run's task was started (for a queued run: its turn came, and its operation starts).
    case started
    /// A `queue` run waits for the runs registered before it.
    case queued
    /// A `firstWins` run found a run in flight: nothing started, `run` returned `nil`.
    case ignored
    /// A `latestWins` run, numbered here, took the identity over and cancelled this run.
    case superseded(by: Int)
    /// A `SingleFlight` call found the run numbered here in flight and waits for its result.
    case joined(run: Int)
    /// The run's task ended without being cancelled, its operation returned.
    case finished
    /// The run's task ended without being cancelled, its operation threw: the failure went to the
    /// caller of `runAndWait` or to the `SingleFlight` callers (a `TaskSlots.run` has no one to
    /// give it to: this entry is where it shows).
    case failed
    /// The run's task ended cancelled (superseded, `cancel(_:)`, the owner released, or, for a
    /// `SingleFlight`, every caller cancelled): whatever it computed reached no one.
    case cancelled

    /// The event as the log prints it: `superseded by #4`.
    ///
    /// ```swift
    /// print(RequestLog<String>.Event.joined(run: 2))   // joined #2
    /// ```
    public var description: String {
      switch self {
      case .started: "started"
      case .queued: "queued"
      case .ignored: "ignored"
      case .superseded(let successor): "superseded by #\(successor)"
      case .joined(let run): "joined #\(run)"
      case .finished: "finished"
      case .failed: "failed"
      case .cancelled: "cancelled"
      }
    }
  }
}
