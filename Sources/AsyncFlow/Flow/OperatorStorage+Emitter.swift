/// What a ``Flow`` body's emitter needs beyond the life cycle's single-input API: waiting emitters
/// are kept in the logic (several tasks of the body may wait at once), not parked as the input,
/// so that the body stays busy and the consumer's leaving cancels its task.
extension OperatorStorage {
  /// Hands `element` to the logic; returns a token to wait for room with (``waitForRoom(_:)``),
  /// or `nil` when the `emit` returns at once (room left, or nobody will read it any more).
  @inlinable
  func offer<Element, Failure>(_ element: Element) -> Int?
  where Logic == EmitterLogic<Element, Failure, UnsafeContinuation<Void, Never>> {
    let now = clock.now
    let (wakeups, token) = state.withLock { lifecycle -> (Lifecycle.Wakeups?, Int?) in
      let room = { (logic: inout Logic) -> Int? in logic.wantsInput ? nil : logic.makeToken() }
      if let token = lifecycle.inputWakingNobody(element, at: now, then: room) { return (nil, token) }
      let (wakeups, accepted, _) = lifecycle.input(element, at: now)
      guard accepted else { return (wakeups, nil) }
      return (wakeups, lifecycle.withLogic(room) ?? nil)
    }
    if let wakeups { perform(wakeups) }
    return token
  }

  /// Waits until the consumer wants more, the body ends, or the iteration is over.
  @inlinable
  func waitForRoom<Element, Failure>(_ token: Int) async
  where Logic == EmitterLogic<Element, Failure, UnsafeContinuation<Void, Never>> {
    await withTaskCancellationHandler {
      await withOrderedContinuation { (waiter: UnsafeContinuation<Void, Never>) in
        // Unless the logic keeps it, the waiter goes on at once, after the lock; so it does when
        // the iteration is over (the logic retired).
        state.withLock { lifecycle in
          lifecycle.withLogic { $0.wait(waiter, token: token, isCancelled: Task.isCancelled) } ?? waiter
        }?.resume()
      }
    } onCancel: {
      state.withLock { $0.withLogic { $0.waiterCancelled(token: token) } ?? nil }?.resume()
    }
  }

  /// The body returned (`nil`) or threw: the consumer drains the buffer, then sees the end; an
  /// `emit` still waiting (from a task the body left running) is let go, after the lock.
  @inlinable
  func bodyEnded<Element, Failure>(_ failure: Failure?)
  where Logic == EmitterLogic<Element, Failure, UnsafeContinuation<Void, Never>> {
    let now = clock.now
    let (wakeups, released) = state.withLock { lifecycle in
      (lifecycle.inputEnded(failure, at: now), lifecycle.withLogic { $0.takeWaiters() } ?? [])
    }
    perform(wakeups)
    for waiter in released { waiter.resume() }
  }
}
