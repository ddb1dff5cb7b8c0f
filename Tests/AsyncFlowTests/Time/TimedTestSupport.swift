import AsyncFlow

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
