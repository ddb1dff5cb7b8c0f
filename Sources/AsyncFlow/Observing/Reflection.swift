// What `dump`, `Mirror`, a debugger and Swift Testing's report of a failed expectation show of
// AsyncFlow's stateful types: their counts and state, read under their locks, instead of their
// storage. The default mirror walked into the storage: it read it without the lock, and reached
// the queues' buffers, whose reflection crashed the process.

extension RequestLog: CustomReflectable {
  /// The log's capacity and its entries kept, oldest first, each as its line.
  ///
  /// ```swift
  /// dump(RequestLog<String>(capacity: 10))
  /// // ▿ RequestLog<String>
  /// //   - capacity: 10
  /// //   - entries: 0 elements
  /// ```
  public var customMirror: Mirror {
    Mirror(self, children: ["capacity": capacity, "entries": entries.map(\.description)], displayStyle: .class)
  }
}

extension TaskSlots: CustomReflectable {
  /// The number of registered tasks, the identities they run under, and the request log if it
  /// has one.
  ///
  /// ```swift
  /// dump(TaskSlots<String>())
  /// // ▿ TaskSlots<String>
  /// //   - runningCount: 0
  /// //   - running: 0 elements
  /// ```
  public var customMirror: Mirror {
    let (count, running) = storage.state.withLock { machine in
      (machine.runningCount, machine.slots.compactMap { $0.value.runs.isEmpty ? nil : $0.key })
    }
    // Described outside the lock: an identity's description is the app's code.
    let identities = running.map { String(describing: $0) }.sorted()
    var children: [(label: String?, value: Any)] = [("runningCount", count), ("running", identities)]
    if let log = storage.log { children.append(("log", log)) }
    return Mirror(self, children: children, displayStyle: .class)
  }
}

extension SingleFlight: CustomReflectable {
  /// The identities with a run in flight, each with its run's number and how many callers wait
  /// for it, and the request log if it has one.
  ///
  /// ```swift
  /// dump(SingleFlight<String, Int, Never>())
  /// // ▿ SingleFlight<String, Int, Never>
  /// //   - inFlight: 0 elements
  /// ```
  public var customMirror: Mirror {
    let flights = storage.state.withLock { machine in
      machine.flights.map { (id: $0.key, run: $0.value.run, callers: $0.value.waiters.count) }
    }
    let lines = flights.map { "\($0.id): run #\($0.run), \($0.callers) caller\($0.callers == 1 ? "" : "s")" }.sorted()
    var children: [(label: String?, value: Any)] = [("inFlight", lines)]
    if let log = storage.log { children.append(("log", log)) }
    return Mirror(self, children: children, displayStyle: .class)
  }
}

extension FlowSubscription: CustomReflectable {
  /// Whether the subscription was cancelled, and what it holds: a sink's task, or its mailbox in a
  /// hot source.
  ///
  /// ```swift
  /// let subscription = PassthroughFlow<Int, Never>().sink { print($0) }
  /// dump(subscription)
  /// // ▿ FlowSubscription
  /// //   - isCancelled: false
  /// //   - receiver: "a mailbox in a hot source"
  /// ```
  public var customMirror: Mirror {
    let receiver = task == nil ? "a mailbox in a hot source" : "a task iterating the sequence"
    return Mirror(self, children: ["isCancelled": gate.isCancelled, "receiver": receiver], displayStyle: .class)
  }
}

extension SubjectStorage {
  /// What a subject or a share shows: its subscribers, the elements they have yet to take, what a
  /// newcomer is replayed, and whether it ended. Counts only, read under the lock: the elements
  /// are the app's values.
  func reflected(_ subject: Any, value: Any? = nil) -> Mirror {
    let (subscribers, buffered, replay, ended) = state.withLock { machine -> (Int, Int, Int, String) in
      let buffered =
        machine.subscribers.iterators.reduce(0) { $0 + $1.buffer.count }
        + machine.subscribers.push.reduce(0) { $0 + $1.buffer.count }
      let ended: String
      switch machine.state {
      case .open: ended = "no"
      case .ended(failure: nil): ended = "finished"
      case .ended(failure: .some): ended = "failed"
      }
      return (machine.subscriberCount, buffered, machine.replay.count, ended)
    }
    var children: [(label: String?, value: Any)] = []
    if let value { children.append(("value", value)) }
    children += [("subscriberCount", subscribers), ("buffered", buffered), ("replayed", replay), ("ended", ended)]
    return Mirror(subject, children: children, displayStyle: .class)
  }
}

extension PassthroughFlow: CustomReflectable {
  /// Its subscribers, the elements they have yet to take, and whether it ended.
  ///
  /// ```swift
  /// dump(PassthroughFlow<Int, Never>())
  /// // ▿ PassthroughFlow<Int, Never>
  /// //   - subscriberCount: 0
  /// //   - buffered: 0
  /// //   - replayed: 0
  /// //   - ended: "no"
  /// ```
  public var customMirror: Mirror { storage.reflected(self) }
}

extension CurrentValueFlow: CustomReflectable {
  /// Its value, its subscribers, the elements they have yet to take, and whether it ended.
  ///
  /// ```swift
  /// dump(CurrentValueFlow(3))
  /// // ▿ CurrentValueFlow<Int>
  /// //   - value: 3
  /// //   - subscriberCount: 0
  /// //   ...
  /// ```
  public var customMirror: Mirror { storage.reflected(self, value: value) }
}

extension AsyncShareFlowSequence: CustomReflectable {
  /// Its subscribers, the elements they have yet to take, what a newcomer is replayed, and whether
  /// the upstream ended.
  ///
  /// ```swift
  /// dump(Flow.sequence([1, 2]).shareFlow(replay: 1))
  /// // ▿ AsyncShareFlowSequence<Int, Never>
  /// //   - subscriberCount: 0
  /// //   ...
  /// ```
  public var customMirror: Mirror { storage.reflected(self) }
}
