import AsyncFlow
import Foundation

// W9: the shapes a service puts the library in. A profile lookup behind `SingleFlight`: many
// concurrent callers over a few identities, one upstream call per identity in flight. A live feed:
// one `shareFlow` upstream fanned out to many subscriber tasks, a few of them slow, each with a
// bounded buffer. Rows for the default sizes, curves over the callers and the subscribers in
// `--scaling`, and the memory each caller and subscriber keeps while it waits.

/// Counts the stub upstream's calls, from any task.
final class CallCounter: @unchecked Sendable {
  private let lock = NSLock()
  private var count = 0

  func add() { lock.withLock { count += 1 } }
  var value: Int { lock.withLock { count } }
}

/// The lookup's sizes: a round is `callers` lookups at once spread over `identities` ids.
enum LookupShape {
  static let identities = 100
  static let callersPerRound = 10_000
}

/// `lookups` profile lookups through one `SingleFlight`, in rounds of `callersPerRound` concurrent
/// callers spread evenly over `identities` ids. Every caller of a round starts (and joins its id's
/// flight) before the stub upstream, which waits for the round's end, answers: so each round makes
/// exactly one upstream call per id, as a service's burst of requests for a few hot profiles does.
/// `flight == nil` is the reference without the library: each caller calls the upstream itself in a
/// task of its own (one call per lookup). Per lookup.
func w9Lookups(
  _ lookups: Int, callersPerRound: Int = LookupShape.callersPerRound, identities: Int = LookupShape.identities,
  deduplicated: Bool
) async -> (Int, String?) {
  let perRound = max(callersPerRound, identities)
  let rounds = max(lookups / perRound, 1)
  let calls = CallCounter()
  let flight = deduplicated ? SingleFlight<Int, Int, Never>() : nil
  var callers: [Task<Int, Never>] = []
  callers.reserveCapacity(perRound)
  for _ in 0..<rounds {
    let roundEnded = CompletionSignal()
    let upstream = { @Sendable (id: Int) async -> Int in
      calls.add()
      await roundEnded.wait()
      return id
    }
    for caller in 0..<perRound {
      let id = caller % identities
      callers.append(
        startCaller {
          guard let flight else { return await Task { await upstream(id) }.value }
          return await flight.run(id, trigger: "lookup") { await upstream(id) } ?? -1
        })
    }
    roundEnded.fire()
    for caller in callers { _ = await caller.value }
    callers.removeAll(keepingCapacity: true)
  }
  return (
    rounds * perRound,
    "\(calls.value.formatted()) upstream calls for \((rounds * perRound).formatted()) lookups over \(identities) ids"
  )
}

/// Bytes per lookup in flight: `count` callers parked in `SingleFlight.run` over `identities` ids,
/// their upstream calls waiting. Each caller is a task of its own, as a request handler is.
func w9LookupInFlight(_ count: Int) async -> Double {
  let flight = SingleFlight<Int, Int, Never>()
  let answered = CompletionSignal()
  var callers: [Task<Int, Never>] = []
  callers.reserveCapacity(count)
  let before = residentBytes()
  for caller in 0..<count {
    let id = caller % LookupShape.identities
    callers.append(
      Task {
        await flight.run(id, trigger: "lookup") {
          await answered.wait()
          return id
        } ?? -1
      })
  }
  let after = await settledResidentBytes()
  answered.fire()
  for caller in callers { _ = await caller.value }
  return (after - before) / Double(count)
}

/// The feed's sizes: one slow subscriber in `slowEvery`, each subscriber keeping at most
/// `bufferedPerSubscriber` events it has not taken yet (the newest; older ones are dropped).
enum FeedShape {
  static let slowEvery = 40
  static let bufferedPerSubscriber = 256
  /// The work a slow subscriber does per event: this many yields to the other tasks.
  static let slowYields = 8
}

/// A live feed: one upstream of `events` events shared by `subscribers` subscriber tasks through
/// `shareFlow(bufferingPolicy: .bufferingNewest(256))`, one in 40 of them slow (it yields eight
/// times per event). The upstream starts once every subscriber has subscribed. Per event delivered
/// (to any subscriber); the note gives what the fast and the slow subscribers received of what was
/// sent, the rest being what their bounded buffers dropped.
func w9Feed(_ events: Int, subscribers: Int) async -> (Int, String?) {
  let everyoneIn = CompletionSignal()
  let feed = Flow<Int, Never> { emitter in
    await everyoneIn.wait()
    for event in 0..<events { await emitter.emit(event) }
  }
  .shareFlow(bufferingPolicy: .bufferingNewest(FeedShape.bufferedPerSubscriber))
  var tasks: [(slow: Bool, task: Task<Int, Never>)] = []
  tasks.reserveCapacity(subscribers)
  for index in 0..<subscribers {
    let slow = index % FeedShape.slowEvery == FeedShape.slowEvery - 1
    tasks.append(
      (
        slow,
        Task {
          var received = 0
          for await _ in feed {
            received += 1
            if slow { for _ in 0..<FeedShape.slowYields { await Task.yield() } }
          }
          return received
        }
      ))
  }
  await feed.subscribers(count: subscribers)
  everyoneIn.fire()
  var fast = (count: 0, received: 0)
  var slow = (count: 0, received: 0)
  for (isSlow, task) in tasks {
    let received = await task.value
    if isSlow {
      slow.count += 1
      slow.received += received
    } else {
      fast.count += 1
      fast.received += received
    }
  }
  func share(_ group: (count: Int, received: Int)) -> String {
    guard group.count > 0 else { return "none" }
    return String(format: "%.1f %%", 100 * Double(group.received) / Double(group.count * events))
  }
  return (
    fast.received + slow.received,
    "\(fast.count) fast received \(share(fast)), \(slow.count) slow \(share(slow)) of \(events.formatted()) sent"
  )
}

/// Bytes per idle feed subscriber: `count` subscriber tasks parked in a `shareFlow`'s `next()`
/// before its upstream sends anything.
func w9FeedSubscriber(_ count: Int) async -> Double {
  let finish = CompletionSignal()
  let feed = Flow<Int, Never> { _ in await finish.wait() }
    .shareFlow(bufferingPolicy: .bufferingNewest(FeedShape.bufferedPerSubscriber))
  var tasks: [Task<Void, Never>] = []
  tasks.reserveCapacity(count)
  let before = residentBytes()
  for _ in 0..<count {
    tasks.append(Task { for await _ in feed {} })
  }
  let after = await settledResidentBytes()
  finish.fire()
  for task in tasks { await task.value }
  return (after - before) / Double(count)
}

/// The service curves (registered in `runScaling`): lookups as the concurrent callers grow over
/// the same 100 ids, and the feed as its subscribers grow, the same deliveries at every size.
func serviceScalingCurves(options: Options, repetitions: Int) async -> [ScalingCurve] {
  var curves: [ScalingCurve] = []
  let lookups = options.quick ? 10_000 : 100_000
  var lookupCurve = ScalingCurve(
    key: "W9.lookups.callers", sizeName: "callers at once", unit: "ns/lookup",
    description:
      "`SingleFlight.run` with N concurrent callers over \(LookupShape.identities) ids (one upstream call per id "
      + "per round), \(lookups.formatted()) lookups per run")
  if options.includes(lookupCurve.key) {
    for callers in [100, 1_000, 10_000] {
      let benchmark = Benchmark(workload: lookupCurve.key, implementation: String(callers), isBaseline: false) {
        await w9Lookups($0, callersPerRound: callers, deduplicated: true)
      }
      let row = await measure(benchmark, size: lookups, repetitions: repetitions)
      lookupCurve.points.append(
        ScalingPoint(size: callers, value: row.median, min: row.min, max: row.max, note: row.note))
    }
    curves.append(lookupCurve)
  }
  let deliveries = options.quick ? 204_800 : 2_048_000
  var feedCurve = ScalingCurve(
    key: "W9.feed.subscribers", sizeName: "subscribers", unit: "ns/event delivered",
    description:
      "one `shareFlow(bufferingPolicy: .bufferingNewest(\(FeedShape.bufferedPerSubscriber)))` upstream to N "
      + "subscriber tasks, one in \(FeedShape.slowEvery) slow, \(deliveries.formatted()) events × subscribers per run")
  if options.includes(feedCurve.key) {
    for subscribers in [1, 16, 64, 256] {
      let benchmark = Benchmark(workload: feedCurve.key, implementation: String(subscribers), isBaseline: false) {
        await w9Feed($0 / subscribers, subscribers: subscribers)
      }
      let row = await measure(benchmark, size: deliveries, repetitions: repetitions)
      feedCurve.points.append(
        ScalingPoint(size: subscribers, value: row.median, min: row.min, max: row.max, note: row.note))
    }
    curves.append(feedCurve)
  }
  return curves
}
