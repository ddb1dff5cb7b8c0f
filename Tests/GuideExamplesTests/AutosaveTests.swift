import AsyncFlow
import AsyncFlowTesting
import GuideExamples
import Testing

/// The per-user autosave of Flattening.md: two users typing at once are each saved after their
/// own pause; one debounce for everyone loses a user's edit.
@Suite("Per-user autosave example", .hangGuard)
struct AutosaveTests {
  /// Alice types at 0 s and 0.7 s, Bob at 0.5 s; each pauses 1 s after. Returns what was saved by
  /// 3 s, with the instant of each save.
  private func saves(
    _ pipeline: (PassthroughFlow<UserEdit, Never>, TestClock) -> Flow<String, Never>
  ) async -> [String] {
    let clock = TestClock()
    let edits = PassthroughFlow<UserEdit, Never>()
    let saved = LockedState<[String]>([])
    let saves = pipeline(edits, clock)
    let consumer = clock.task {
      for await save in saves {
        saved.withLock { $0.append("\(clock.now) \(save)") }
      }
    }
    await clock.runCurrent()
    edits.send(UserEdit(user: "alice", text: "a1"))
    await clock.advance(by: .milliseconds(500))
    edits.send(UserEdit(user: "bob", text: "b1"))
    await clock.advance(by: .milliseconds(200))
    edits.send(UserEdit(user: "alice", text: "a2"))
    await clock.advance(by: .milliseconds(2300))
    edits.finish()
    await clock.run()
    await bounded(consumer, "consumer")
    return saved.withLock { $0 }
  }

  @Test func eachUserIsSavedAfterTheirOwnPause() async {
    let saved = await saves { edits, clock in autosaves(of: edits, clock: clock) }
    #expect(saved == ["1.5 seconds save bob: b1", "1.7 seconds save alice: a2"])
  }

  @Test func oneDebounceForEveryoneLosesBobsEdit() async {
    let saved = await saves { edits, clock in sharedDebounceAutosaves(of: edits, clock: clock) }
    #expect(saved == ["1.7 seconds save alice: a2"])
  }
}
