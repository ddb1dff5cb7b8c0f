import AsyncFlow

// What a task start costs now that every task AsyncFlow starts inherits its caller's task-local
// values and priority (issue 38): `FlowScheduling.startTask` (`Task(priority:)`) against the start
// it replaced (the same executor check, then `Task.detached`), with N task-local values bound in
// the caller, each of which an inheriting start copies into the new task.

/// Sixteen task-local keys, for binding N distinct values around the starts.
private let keys = (0..<16).map { _ in TaskLocal(wrappedValue: 0) }

/// Runs `body` with the first `count` keys bound.
private func withBound(_ count: Int, _ body: () async -> Double) async -> Double {
  guard count > 0 else { return await body() }
  return await keys[count - 1].withValue(count) { await withBound(count - 1, body) }
}

/// `FlowScheduling.startTask` as it was before issue 38: detached, unless a test clock's executor
/// is set. Both read the `executor` task-local first, whose lookup walks the bound values.
private func startDetachedTask(_ operation: sending @escaping () async -> Void) -> Task<Void, Never> {
  if let executor = FlowScheduling.executor { return Task(executorPreference: executor, operation: operation) }
  return Task.detached(operation: operation)
}

/// Nanoseconds per start of `total` tasks, started in rounds of 1,000 with `bound` task-local
/// values bound: only the starts are timed; the tasks wait for their round's end, then are awaited.
func taskStarts(total: Int, bound: Int, inheriting: Bool) async -> Double {
  let round = 1_000
  return await Task.detached {
    await withBound(bound) {
      var elapsed = 0.0
      var started: [Task<Void, Never>] = []
      started.reserveCapacity(round)
      for _ in 0..<max(total / round, 1) {
        let roundEnded = CompletionSignal()
        elapsed += await nanoseconds {
          for _ in 0..<round {
            if inheriting {
              started.append(FlowScheduling.startTask { await roundEnded.wait() })
            } else {
              started.append(startDetachedTask { await roundEnded.wait() })
            }
          }
        }
        roundEnded.fire()
        for task in started { await task.value }
        started.removeAll(keepingCapacity: true)
      }
      return elapsed / Double(max(total / round, 1) * round)
    }
  }.value
}

/// `start.inheriting.taskLocals` and `start.detached.taskLocals`: ns per task start with 0, 1, 4
/// and 16 task-local values bound, the two kinds in alternation at each size (a warm-up each,
/// then the repetitions, one of each kind per round), so that the machine's state moves both
/// alike. Not held to the 2 × target: an inheriting start copies each bound value, so its figure
/// grows with N by design; what the curves show is by how much.
func contextScalingCurves(options: Options, repetitions: Int) async -> [ScalingCurve] {
  let sizes = [0, 1, 4, 16]
  let total = options.quick ? 10_000 : 100_000
  let kinds = [("start.inheriting.taskLocals", true), ("start.detached.taskLocals", false)]
  var curves = kinds.map { key, inheriting in
    ScalingCurve(
      key: key, sizeName: "task-locals bound", unit: "ns/task start",
      description: (inheriting ? "`FlowScheduling.startTask` (`Task(priority:)`, inheriting)" : "`Task.detached`")
        + " with N task-local values bound in the caller, \(total.formatted()) starts in rounds of 1,000, "
        + "alternating with the other kind; only the starts timed")
  }
  let measured = curves.indices.filter { options.includes(curves[$0].key) }
  guard !measured.isEmpty else { return [] }
  for bound in sizes {
    var samples = curves.map { _ in [Double]() }
    for index in measured { _ = await taskStarts(total: total / 10, bound: bound, inheriting: kinds[index].1) }
    for _ in 0..<repetitions {
      for index in measured {
        samples[index].append(await taskStarts(total: total, bound: bound, inheriting: kinds[index].1))
      }
    }
    for index in measured {
      let sorted = samples[index].sorted()
      curves[index].points.append(
        ScalingPoint(size: bound, value: sorted[sorted.count / 2], min: sorted.first!, max: sorted.last!, note: nil))
    }
  }
  return measured.map { curves[$0] }
}
