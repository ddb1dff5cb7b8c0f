/// Where AsyncFlow's operators run the tasks they start.
///
/// By default nowhere in particular (the global concurrent executor). `AsyncFlowTesting`'s
/// `TestClock` sets a serial executor here, so that every task an operator starts runs on it and
/// `advance(by:)` can run them all until they suspend again: a deterministic schedule.
@usableFromInline
package enum FlowScheduling {
  /// The executor preference of the tasks that operators start; inherited by tasks they start.
  @TaskLocal package static var executor: (any TaskExecutor)?

  /// Starts one of an operator's internal tasks, on the preferred executor if one is set.
  @usableFromInline
  package static func startTask(_ operation: sending @escaping () async -> Void) -> Task<Void, Never> {
    guard let executor else { return Task.detached(operation: operation) }
    return Task(executorPreference: executor, operation: operation)
  }
}
