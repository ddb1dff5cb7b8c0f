/// What a ``Flow`` body's emitter needs beyond the life cycle's single-input API: waiting emitters
/// are kept in the logic (several tasks of the body may wait at once), not parked as the input,
/// so that the body stays busy and the consumer's leaving cancels its task.
extension OperatorStorage {
  /// Hands `element` to the logic; returns a token to wait for room with (``waitForRoom(_:)``),
  /// or `nil` when the `emit` returns at once (room left, or nobody will read it any more).
  @inlinable
  func offer<Element, Failure>(_ element: Element) -> Int?
  where Logic == EmitterLogic<Element, Failure, RoomWaiter> {
    let now = clock.now
    let (wakeups, token) = state.withLock { lifecycle -> (Lifecycle.Wakeups?, Int?) in
      // The path of most elements: the life cycle's `input` where it would wake nobody (the
      // consumer is not parked, the body is the busy input, no timer), without its wakeups.
      if case .running(let running) = lifecycle.state, running.consumer == nil, lifecycle.inputs.children[0].isBusy,
        !lifecycle.logic!.isEnding
      {
        _ = lifecycle.logic!.input(element, at: now)
        return (nil, lifecycle.logic!.wantsInput ? nil : lifecycle.logic!.makeToken())
      }
      let (wakeups, accepted, _) = lifecycle.input(element, at: now)
      guard accepted, !lifecycle.logic!.wantsInput else { return (wakeups, nil) }
      return (wakeups, lifecycle.logic!.makeToken())
    }
    if let wakeups { perform(wakeups) }
    return token
  }

  /// Waits until the consumer wants more, the body ends, or the iteration is over.
  @inlinable
  func waitForRoom<Element, Failure>(_ token: Int) async
  where Logic == EmitterLogic<Element, Failure, RoomWaiter> {
    await withTaskCancellationHandler {
      await withOrderedContinuation { (continuation: UnsafeContinuation<Void, Never>) in
        let waiter = RoomWaiter(continuation)
        // Unless the logic keeps it, the waiter is released after the lock, which resumes it.
        _ = state.withLock { lifecycle -> RoomWaiter? in
          guard lifecycle.logic != nil else { return waiter }  // the iteration is over
          return lifecycle.logic!.wait(waiter, token: token, isCancelled: Task.isCancelled)
        }
      }
    } onCancel: {
      _ = state.withLock { $0.logic?.waiterCancelled(token: token) }
    }
  }

  /// The body returned (`nil`) or threw: the consumer drains the buffer, then sees the end; an
  /// `emit` still waiting (from a task the body left running) is let go, after the lock.
  @inlinable
  func bodyEnded<Element, Failure>(_ failure: Failure?)
  where Logic == EmitterLogic<Element, Failure, RoomWaiter> {
    let now = clock.now
    let (wakeups, released) = state.withLock { lifecycle in
      (lifecycle.inputEnded(failure, at: now), lifecycle.logic?.takeWaiters() ?? [])
    }
    perform(wakeups)
    _ = consume released
  }
}
