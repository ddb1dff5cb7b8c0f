/// Where AsyncFlow runs the tasks it starts.
///
/// By default nowhere in particular (the global concurrent executor). `AsyncFlowTesting`'s
/// `TestClock` sets a serial executor here, so that every task an operator or a `TaskSlots` starts
/// runs on it and `advance(by:)` can run them all until they suspend again: a deterministic schedule.
@usableFromInline
package enum FlowScheduling {
  /// The executor preference of the tasks that AsyncFlow starts; inherited by tasks they start.
  @TaskLocal package static var executor: (any TaskExecutor)?

  /// Starts one of AsyncFlow's tasks, on the preferred executor if one is set: the single place
  /// where the library starts tasks.
  ///
  /// - Parameters:
  ///   - priority: the task's priority; `nil` as `Task` and `Task.detached` read it.
  ///   - inheritingContext: whether the task inherits the caller's priority and task-local values
  ///     as `Task { }` does: for the tasks that app code asks for (`TaskSlots.run`), whose
  ///     operation may read the caller's task locals. An operator's internal task does not: it is
  ///     detached, as it serves whoever iterates, not whoever made the sequence. An `@isolated(any)`
  ///     operation awaited inside `operation` still runs on its own isolation.
  @usableFromInline
  package static func startTask(
    priority: TaskPriority? = nil, inheritingContext: Bool = false,
    _ operation: sending @escaping () async -> Void
  ) -> Task<Void, Never> {
    if let executor {
      // Task executor preferences are not inherited by unstructured tasks: set it on each one.
      return Task(executorPreference: executor, priority: priority, operation: operation)
    }
    if inheritingContext { return Task(priority: priority, operation: operation) }
    return Task.detached(priority: priority, operation: operation)
  }
}
