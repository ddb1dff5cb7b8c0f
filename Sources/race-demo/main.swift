import AsyncFlowTesting
import GuideExamples

// race-demo: the explorer of AsyncFlowTesting on the two races of the seeds, naive and fixed.

func milliseconds(_ duration: Duration) -> String {
  let tenths = duration.components.seconds * 10_000 + duration.components.attoseconds / 100_000_000_000_000
  return "\(tenths / 10).\(tenths % 10) ms"
}

func show(_ report: ExplorationReport, _ story: String) {
  print("== \(report.scenario)")
  print("   \(story)")
  guard let failure = report.failure else {
    let orders = report.isExhaustive ? "every order (\(report.orders))" : "\(report.orders) orders"
    print("   passed: \(orders) and \(report.cancellationPoints) cancellation points, \(report.runs) runs in \(milliseconds(report.duration))\n")
    return
  }
  print("   FAILED: order \(report.orders) of the exploration broke it (\(report.runs) runs in \(milliseconds(report.duration)))")
  for problem in failure.problems { print("   problem: \(problem)") }
  print("   the failing order, as a timeline (a point is a quiescent moment: the clock settled, calls parked):")
  for event in failure.timeline { print("     \(event)") }
  print("   replay: \(failure.replay)\n")
}

print("race-demo: every answer order and every cancellation point, on a virtual clock\n")
show(
  await articlesExploration(NaiveArticlesModel.self).explore(),
  "seed 000: five entry points, each starting its own Task; the last answer to arrive wins")
show(
  await articlesExploration(ArticlesModel.self).explore(),
  "fixed: one reload, TaskSlots latest wins, the query frozen and checked before writing")
show(
  await naiveHistoryExploration().explore(),
  "seed 001: loadMore suspends, a refresh completes, the old page is appended to the new list")
show(
  await historyExploration().explore(),
  "fixed: refresh cancels the load-more in flight, a cancelled run writes nothing")
