import AsyncFlow

/// One user's edit of a shared document.
public struct UserEdit: Sendable, Equatable {
  public var user: String
  public var text: String

  public init(user: String, text: String) {
    (self.user, self.text) = (user, text)
  }
}

// region: per-user-autosave
/// Saves each user's last edit once that user has paused for `quiet`. The edits of every user come
/// interleaved on one stream; `grouped(by:)` routes each user's to a pipeline of their own, so each
/// user's debounce waits for that user's pause. One debounce for everyone would save only the edit
/// of whoever typed last, and never save a user while another types.
public func autosaves<Edits: AsyncSequence<UserEdit, Never> & Sendable, C: Clock<Duration>>(
  of edits: Edits, quiet: Duration = .seconds(1), clock: C
) -> Flow<String, Never> {
  edits
    .grouped(by: \.user)
    .mergeFlow { user in
      user.debounceFlow(for: quiet, clock: clock).map { "save \(user.key): \($0.text)" }
    }
    .eraseToFlow()
}
// endregion: per-user-autosave

/// The same with one debounce for everyone: what `autosaves(of:quiet:clock:)` is there to avoid.
public func sharedDebounceAutosaves<Edits: AsyncSequence<UserEdit, Never> & Sendable, C: Clock<Duration>>(
  of edits: Edits, quiet: Duration = .seconds(1), clock: C
) -> Flow<String, Never> {
  edits.debounceFlow(for: quiet, clock: clock).map { "save \($0.user): \($0.text)" }.eraseToFlow()
}
