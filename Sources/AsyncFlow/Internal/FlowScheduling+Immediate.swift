extension FlowScheduling {
  /// Starts one of AsyncFlow's tasks as ``startTask(priority:inheritingContext:_:)`` does (detached,
  /// on the preferred executor if one is set), but runs it at once in the caller's thread until its
  /// first suspension, where the OS has `Task.immediate` (macOS 26, iOS 26 and their peers; always
  /// on Linux). Elsewhere the task is only started, as `startTask` starts it.
  ///
  /// For an operator that must know what an input has without waiting before it starts another:
  /// by the time this returns, the task has either suspended or gone past what was available at once.
  @usableFromInline
  package static func startTaskRunningAtOnce(_ operation: sending @escaping () async -> Void) -> Task<Void, Never> {
    if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
      // As `startTask`: with a preferred executor, a task that copies the task locals (so that the
      // tasks it starts prefer that executor too); without, a detached one.
      if let executor { return Task.immediate(executorPreference: executor, operation: operation) }
      return Task.immediateDetached(operation: operation)
    }
    return startTask(operation)
  }
}
