/// Where and in what context AsyncFlow runs the tasks it starts.
///
/// Every task AsyncFlow starts for an iteration runs in its consumer's context: it is started,
/// directly or through another such task, from the task that made the iteration's first `next()`
/// (or, for `sink` and `assignFlow`, from the subscriber's task), and it inherits that task's
/// task-local values and priority, as `Task { }` does. Kotlin's Flow calls this context
/// preservation; swift-async-algorithms gets it by calling `Task { }` in `next()`.
///
/// The executor is nowhere in particular by default (the global concurrent executor).
/// `AsyncFlowTesting`'s `TestClock` sets a serial executor here, so that every task an operator or a
/// `TaskSlots` starts runs on it and `advance(by:)` can run them all until they suspend again: a
/// deterministic schedule.
@usableFromInline
package enum FlowScheduling {
  /// The executor preference of the tasks that AsyncFlow starts; inherited by tasks they start.
  ///
  /// A task-local, because unstructured tasks inherit task-local values but not a task-executor
  /// preference: each start reads it here and sets it on the new task.
  @usableFromInline @TaskLocal package static var executor: (any TaskExecutor)?

  /// Starts one of AsyncFlow's tasks, on the preferred executor if one is set: the single place
  /// where the library starts tasks.
  ///
  /// The task inherits the caller's task-local values and priority, as `Task { }` does (under a
  /// `TestClock`, `Task(executorPreference:)` inherits them the same way), so that the work it does
  /// for an iteration sees what its consumer sees: a request's trace ID, a `.high` priority.
  /// `operation` is not isolated: the task runs on the global executor (or the preferred one).
  ///
  /// - Parameter priority: the task's priority; `nil` inherits the caller's.
  @usableFromInline
  package static func startTask(
    priority: TaskPriority? = nil, _ operation: sending @escaping () async -> Void
  ) -> Task<Void, Never> {
    if let executor {
      // Task executor preferences are not inherited by unstructured tasks: set it on each one.
      return Task(executorPreference: executor, priority: priority, operation: operation)
    }
    return Task(priority: priority, operation: operation)
  }

  /// Starts a task that app code asks for (`TaskSlots.run`, `SingleFlight.run`): it inherits the
  /// caller's priority and task-local values as `Task { }` does, since its operation may read them
  /// (an `@isolated(any)` operation still runs on its own isolation). On the preferred executor if
  /// one is set, as ``startTask(priority:_:)``.
  ///
  /// Inlined into its caller, which writes `operation` as a closure literal, so that without a
  /// preferred executor the literal is the body of `Task {}` itself: a plain closure value costs a
  /// box more per task, its conversion to the `@isolated(any)` operation of `Task {}` (a malloc
  /// count in W6: 7 a run against 6).
  @inlinable @inline(__always)
  package static func startInheritingTask(
    priority: TaskPriority?, _ operation: sending @escaping @isolated(any) () async -> Void
  ) -> Task<Void, Never> {
    // A `TestClock` sets an executor: then the task goes where `startTask` puts it.
    if let executor { return Task(executorPreference: executor, priority: priority, operation: operation) }
    return Task(priority: priority, operation: operation)
  }
}

extension FlowScheduling {
  /// Starts one of AsyncFlow's tasks as ``startTask(priority:_:)`` does (inheriting the caller's
  /// task-local values and priority, on the preferred executor if one is set), but runs it at once
  /// in the caller's thread until its first suspension, where the OS has `Task.immediate` (macOS
  /// 26, iOS 26 and their peers; always on Linux). Elsewhere the task is only started, as
  /// `startTask` starts it.
  ///
  /// For an operator that must know what an input has without waiting before it starts another:
  /// by the time this returns, the task has either suspended or gone past what was available at once.
  @usableFromInline
  package static func startTaskRunningAtOnce(_ operation: sending @escaping () async -> Void) -> Task<Void, Never> {
    if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
      // The executor preference is set as in `startTask`; both forms copy the task-local values.
      if let executor { return Task.immediate(executorPreference: executor, operation: operation) }
      return Task.immediate(operation: operation)
    }
    return startTask(operation)
  }

  /// Adds a child to `group` that runs at once in the caller's thread until its first suspension,
  /// as ``startTaskRunningAtOnce(_:)`` does for a task (where the OS lacks it, the child is only
  /// added first). The child inherits the group's task-executor preference, as every child does.
  @usableFromInline
  package static func addTaskRunningAtOnce(
    to group: inout TaskGroup<Void>, _ operation: sending @escaping () async -> Void
  ) {
    if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
      return group.addImmediateTask(operation: operation)
    }
    group.addTask(operation: operation)
  }
}

/// An executor that knows when a wait can no longer be met: `AsyncFlowTesting`'s test clock, set
/// in ``FlowScheduling/executor``. AsyncFlow's counting waits (`subscribers(count:)`) cannot see
/// the clock; through this they give up as the testing library's own barriers do, once the clock
/// is idle and nothing on it can meet them, recording an issue at the caller's location.
package protocol FlowBarrierExecutor: TaskExecutor {
  /// Waits in `wait` (which returns once `isMet` holds, or when cancelled) while the schedule
  /// runs; gives up with an issue naming `what()` when the schedule is idle and `isMet` fails.
  func barrier(
    _ what: @escaping @Sendable () -> String, isMet: @escaping @Sendable () -> Bool,
    wait: @escaping @Sendable () async -> Void, fileID: String, filePath: String, line: Int, column: Int
  ) async
}

extension FlowScheduling {
  /// A counting wait of AsyncFlow's: on a test clock's schedule, the clock's barrier (which gives
  /// up once the clock is idle); elsewhere `wait` alone, which ends when its condition holds or the
  /// caller is cancelled. The one path for every such wait, so that they all give up alike.
  package static func barrier(
    _ what: @escaping @Sendable () -> String, isMet: @escaping @Sendable () -> Bool,
    wait: @escaping @Sendable () async -> Void, fileID: String, filePath: String, line: Int, column: Int
  ) async {
    guard let executor = executor as? any FlowBarrierExecutor else { return await wait() }
    await executor.barrier(
      what, isMet: isMet, wait: wait, fileID: fileID, filePath: filePath, line: line, column: column)
  }
}
