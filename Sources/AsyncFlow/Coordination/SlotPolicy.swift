/// What `TaskSlots.run` does when a task already runs under the same identity.
///
/// ```swift
/// slots.run(.search, policy: .latestWins) { await model.search(query) }
/// slots.run(.submit, policy: .firstWins) { await model.submit(order) }
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
  /// slots.run(.refresh, policy: .latestWins) { await feed.reload() }
  /// ```
  public static var latestWins: Self { Self(storage: .latestWins) }

  /// Ignores the new task while one runs (`run` returns `nil`): submissions and payments, where a
  /// second tap must not send a second write, and cancelling the first would not undo it.
  ///
  /// ```swift
  /// slots.run(.pay, policy: .firstWins) { await checkout.pay() }
  /// ```
  public static var firstWins: Self { Self(storage: .firstWins) }

  /// Runs the new task after the ones before it, in call order; none is dropped.
  ///
  /// ```swift
  /// slots.run(.save, policy: .queue) { await store.save(draft) }
  /// ```
  public static var queue: Self { Self(storage: .queue) }

  /// No relation: the tasks run side by side, and `cancel(_:)` still stops them all.
  ///
  /// ```swift
  /// slots.run(.prefetch, policy: .concurrent) { await images.prefetch(url) }
  /// ```
  public static var concurrent: Self { Self(storage: .concurrent) }

  /// The policy as written in code, as in `.latestWins`.
  ///
  /// ```swift
  /// print(SlotPolicy.firstWins)  // .firstWins
  /// ```
  public var description: String { ".\(storage)" }
}
