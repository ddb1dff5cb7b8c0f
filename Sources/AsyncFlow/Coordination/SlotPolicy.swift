/// What `TaskSlots.run` does when a task already runs under the same identity.
///
/// ```swift
/// enum Work: Hashable { case search, submit, refresh, pay, save, prefetch }
/// let slots = TaskSlots<Work>()
/// slots.run(.search, policy: .latestWins) { _ = await api.item(42) }            // a newer search replaces it
/// slots.run(.submit, policy: .firstWins) { try? await api.upload("order #7") }   // a second tap does nothing
/// ```
public struct SlotPolicy: Sendable, Equatable, CustomStringConvertible {
  @usableFromInline enum Storage: Sendable, Equatable {
    case latestWins, firstWins, queue, concurrent
  }

  @usableFromInline let storage: Storage

  /// Cancels the task in flight, then starts the new one: searches, refreshes, anything where only
  /// the newest answer matters.
  ///
  /// ```swift
  /// slots.run(.refresh, policy: .latestWins) { _ = try? await api.articles(page: 1) }
  /// ```
  public static var latestWins: Self { Self(storage: .latestWins) }

  /// Ignores the new task while one runs (`run` returns `nil`): submissions and payments, where a
  /// second tap must not send a second write, and cancelling the first would not undo it.
  ///
  /// ```swift
  /// slots.run(.pay, policy: .firstWins) { try? await api.upload("payment") }
  /// ```
  public static var firstWins: Self { Self(storage: .firstWins) }

  /// Runs the new task after the ones before it, in call order; none is dropped.
  ///
  /// ```swift
  /// slots.run(.save, policy: .queue) { try? await api.upload("draft") }
  /// ```
  public static var queue: Self { Self(storage: .queue) }

  /// No relation: the tasks run side by side, and `cancel(_:)` still stops them all.
  ///
  /// ```swift
  /// slots.run(.prefetch, policy: .concurrent) { _ = await api.item(7) }
  /// ```
  public static var concurrent: Self { Self(storage: .concurrent) }

  /// The policy as written in code, as in `.latestWins`.
  ///
  /// ```swift
  /// print(SlotPolicy.firstWins)  // .firstWins
  /// ```
  public var description: String { ".\(storage)" }
}
