/// What the outer consumer, the groups' consumers and the pump of an ``AsyncGroupedSequence``
/// share: the machine under the lock, and the pump. Continuations are resumed, the task started
/// and cancelled, and elements released only after the lock.
final class GroupedStorage<Base: AsyncSequence & Sendable, Key: Hashable & Sendable>: Sendable
where Base.Element: Sendable {
  typealias Element = Base.Element
  typealias Failure = Base.Failure
  /// Resumed with a new group, or `nil`: ask again.
  typealias OuterWaiter = UnsafeContinuation<(Int, Key)?, Never>
  /// Resumed with an element, or `nil`: ask again.
  typealias GroupWaiter = UnsafeContinuation<Element?, Never>
  typealias PumpWaiter = UnsafeContinuation<Void, Never>
  typealias Machine = GroupedStateMachine<
    Key, Element, Failure, OuterWaiter, GroupWaiter, PumpWaiter, Task<Void, Never>
  >

  let state: LockedState<Machine>
  let handOff: IteratorHandOff<Base.AsyncIterator>
  let key: @Sendable (Element) -> Key

  init(base: Base, key: @escaping @Sendable (Element) -> Key, limit: Int) {
    state = LockedState(Machine(limit: limit))
    handOff = IteratorHandOff(base.makeAsyncIterator())
    self.key = key
  }

  // MARK: the outer consumer

  func outerNext(isolation actor: isolated (any Actor)?) async throws(Failure) -> (Int, Key)? {
    while true {
      if Task.isCancelled { outerLeave() }
      switch state.withLock({ $0.outerNext() }) {
      case .deliver(let id, let key, let pump):
        pump?.resume()
        return (id, key)
      case .startPump:
        let task = FlowScheduling.startTask { [self] in await pump() }
        if !state.withLock({ $0.pumpStarted(task) }) { task.cancel() }
      case .end(let failure):
        // No work outlives the iteration: the end comes once the pump's task has ended.
        await state.withLock({ $0.pumpTask })?.value
        if let failure { throw failure }
        return nil
      case .suspend:
        let group = await withTaskCancellationHandler {
          await withUnsafeContinuation(isolation: actor) { (waiter: OuterWaiter) in
            if !state.withLock({ $0.outerSuspends(waiter) }) { waiter.resume(returning: nil) }
          }
        } onCancel: {
          outerLeave()
        }
        if let group {
          if Task.isCancelled {
            outerLeave()
            continue
          }
          return group
        }
      }
    }
  }

  /// The outer consumer was cancelled or released its iterator.
  func outerLeave() {
    let leaving = state.withLock { $0.outerLeft() }
    leaving.task?.cancel()
    leaving.outer?.resume(returning: nil)
    leaving.pump?.resume()
    for waiter in leaving.groupWaiters { waiter.resume(returning: nil) }
    _ = consume leaving  // the buffers are released here, after the lock
  }

  // MARK: the pump

  private func pump() async {
    var iterator = handOff.take()
    do throws(Failure) {
      while let element = try await iterator.next(isolation: nil) {
        guard await route(element) else { return }
      }
      end(.finished)
    } catch {
      end(.failed(error))
    }
  }

  /// Hands `element` to its group; `false` once the operator is over.
  private func route(_ element: Element) async -> Bool {
    let key = key(element)  // user code: out of the lock
    switch state.withLock({ $0.pumped(element, key: key) }) {
    case .stop:
      return false
    case .next(let group, let outer, let wait):
      if let (waiter, element) = group { waiter.resume(returning: element) }
      if let (waiter, id, key) = outer { waiter.resume(returning: (id, key)) }
      guard wait else { return true }
      await withUnsafeContinuation { (waiter: PumpWaiter) in
        if !state.withLock({ $0.pumpWaits(waiter) }) { waiter.resume() }
      }
      return state.withLock { $0.pumpMayGoOn }
    }
  }

  private func end(_ end: Machine.End) {
    let ending = state.withLock { $0.pumpEnded(end) }
    ending.outer?.resume(returning: nil)
    for waiter in ending.groupWaiters { waiter.resume(returning: nil) }
  }

  // MARK: a group's consumer

  func makeGroupIterator(_ id: Int) {
    let first = state.withLock { $0.makeIterator(id) }
    precondition(first, "grouped(by:): a group is iterated once; its second makeAsyncIterator() is an error")
  }

  func groupNext(_ id: Int, isolation actor: isolated (any Actor)?) async throws(Failure) -> Element? {
    while true {
      if Task.isCancelled {
        groupLeave(id)
        return nil
      }
      switch state.withLock({ $0.groupNext(id) }) {
      case .deliver(let element, let pump):
        pump?.resume()
        return element
      case .end(let failure):
        if let failure { throw failure }
        return nil
      case .suspend:
        let element = await withTaskCancellationHandler {
          await withUnsafeContinuation(isolation: actor) { (waiter: GroupWaiter) in
            if !state.withLock({ $0.groupSuspends(id, waiter) }) { waiter.resume(returning: nil) }
          }
        } onCancel: {
          groupLeave(id)
        }
        if let element {
          if Task.isCancelled {
            groupLeave(id)
            return nil
          }
          return element
        }
      }
    }
  }

  /// A group's consumer was cancelled, or the group and its iterator were released.
  func groupLeave(_ id: Int) {
    let (waiter, buffer, pump) = state.withLock { $0.groupLeft(id) }
    waiter?.resume(returning: nil)
    pump?.resume()
    _ = consume buffer  // released here, after the lock
  }
}

/// Ends the outer iteration when its consumer releases its iterator.
final class GroupedConsumer<Base: AsyncSequence & Sendable, Key: Hashable & Sendable>: Sendable
where Base.Element: Sendable {
  let storage: GroupedStorage<Base, Key>

  init(_ storage: GroupedStorage<Base, Key>) {
    self.storage = storage
  }

  deinit {
    storage.outerLeave()
  }
}
