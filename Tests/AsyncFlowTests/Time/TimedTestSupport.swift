import AsyncFlow

/// Runs `body` against a budget of `yields` scheduler yields, counted by a task of its own: `nil`
/// when the budget ran out first (then `body` is cancelled). No clock is read: a stall fails the
/// test instead of hanging it, and a healthy run finishes long before the budget on any machine
/// (the counting task competes for the same threads as the code under test).
func withinYieldBudget<T: Sendable>(
  _ yields: Int = 200_000, _ body: @escaping @Sendable () async -> T
) async -> T? {
  await withTaskGroup(of: T?.self) { group in
    group.addTask { await body() }
    group.addTask {
      for _ in 0..<yields {
        if Task.isCancelled { return nil }
        await Task.yield()
      }
      return nil
    }
    // The first child to end decides: the body's result, or `nil` from the budget.
    let first = await group.next()!
    group.cancelAll()
    return first
  }
}

/// A value whose release runs `onDeinit`: the element that calls back into the operator holding
/// it, from wherever the operator lets it go.
final class ReleaseProbe: Sendable {
  let id: Int
  let onDeinit: @Sendable () -> Void

  init(_ id: Int, onDeinit: @escaping @Sendable () -> Void = {}) {
    self.id = id
    self.onDeinit = onDeinit
  }

  deinit { onDeinit() }
}
