import AsyncFlow
import Foundation

// `--scaling`: how the cost per unit of work changes as the work grows (more subscribers, more
// inputs, longer inners, more idle subscribers). Each curve holds the total work constant where it
// can, so that a flat curve means the cost is linear in the work; the target is that no curve's
// figure at its largest size is more than 2 × its figure at its smallest.

/// One size of a curve and its figure (ns or bytes per unit of work).
struct ScalingPoint {
  var size: Int
  var value: Double
  var min: Double
  var max: Double
  var note: String?
}

struct ScalingCurve {
  /// `W2.subscribers`: the JSON keys are `scaling.<key>.<size>`.
  var key: String
  /// What the size is, for the table's header: `subscribers`.
  var sizeName: String
  /// What the figure is per: `ns/send/subscriber`.
  var unit: String
  var description: String
  var points: [ScalingPoint] = []

  /// The figure at the largest size over the figure at the smallest: the issue's growth measure.
  var growth: Double {
    guard let first = points.first, let last = points.last, first.value > 0 else { return .nan }
    return last.value / first.value
  }

  /// The largest figure over the smallest, whichever sizes they are at.
  var spread: Double {
    let values = points.map(\.value)
    guard let low = values.min(), let high = values.max(), low > 0 else { return .nan }
    return high / low
  }
}

/// The sizes and totals of each curve: the full run and the `--quick` smoke run.
struct ScalingPlan {
  var subscribers: [Int]
  /// Deliveries (sends × subscribers) per W2 run, the same at every size.
  var w2Deliveries: Int
  var inputs: [Int]
  /// Elements per W4 run, split evenly across the inputs.
  var w4Elements: Int
  var innerSizes: [Int]
  /// Inner elements offered (outer values × inner size) per W3 run.
  var w3Offered: Int
  var idleSubscribers: [Int]
  /// Backlog sizes of the queue curves (`Q.*`): elements waiting in one operator's queue at once.
  var backlogs: [Int]
  var repetitions: Int

  static let full = ScalingPlan(
    subscribers: [1, 4, 16, 64, 256], w2Deliveries: 2_048_000, inputs: [2, 8, 64, 512], w4Elements: 1_024_000,
    innerSizes: [1, 3, 30], w3Offered: 300_000, idleSubscribers: [1_000, 10_000, 100_000, 1_000_000],
    backlogs: [1_000, 10_000, 100_000, 1_000_000], repetitions: 5)

  static let quick = ScalingPlan(
    subscribers: [1, 4, 16, 64, 256], w2Deliveries: 204_800, inputs: [2, 8, 64, 512], w4Elements: 102_400,
    innerSizes: [1, 3, 30], w3Offered: 30_000, idleSubscribers: [1_000, 10_000, 100_000],
    backlogs: [1_000, 10_000, 100_000], repetitions: 3)
}

// MARK: The workloads

func w4MergeFlowInputs(_ total: Int, inputs: Int) async -> (Int, String?) {
  let each = total / inputs
  let task = Task.detached {
    var count = 0
    let sources = (0..<inputs).map { _ in Flow.sequence(0..<each) }
    for await _ in Flow.sequence(sources).mergeFlow({ $0 }) { count += 1 }
    return count
  }
  let count = await task.value
  return (each * inputs, "merged \(count)")
}

func w4MergeInputs(_ total: Int, inputs: Int) async -> (Int, String?) {
  let each = total / inputs
  let task = Task.detached {
    var count = 0
    for await _ in Flow.merge((0..<inputs).map { _ in Flow.sequence(0..<each) }) { count += 1 }
    return count
  }
  let count = await task.value
  return (each * inputs, "merged \(count)")
}

/// `outer` values as fast as the outer can go, each switched to an inner of `innerSize` elements,
/// per outer value (as the W3 row): most inners are superseded before they start, so this shows
/// that an inner that never runs costs nothing per element.
func w3SwitchToLatestInner(_ outer: Int, innerSize: Int) async -> (Int, String?) {
  let task = Task.detached {
    var delivered = 0
    for await _ in Flow.sequence(0..<outer).switchToLatestFlow({ value in
      Flow.sequence(repeatElement(value, count: innerSize))
    }) {
      delivered += 1
    }
    return delivered
  }
  let delivered = await task.value
  return (outer, "delivered \(delivered) of \(outer * innerSize)")
}

/// `outer` values, each sent once the consumer has received every element of the previous inner,
/// so that every inner runs to its end: per inner element delivered.
func w3PacedSwitchToLatestInner(_ outer: Int, innerSize: Int) async -> (Int, String?) {
  let task = Task.detached {
    let outerValues = CurrentValueFlow(0)
    var delivered = 0
    var position = 0
    for await value in outerValues.switchToLatestFlow({ value in
      Flow.sequence(repeatElement(value, count: innerSize))
    }) {
      delivered += 1
      position += 1
      if position == innerSize {
        position = 0
        if value + 1 < outer { outerValues.send(value + 1) } else { outerValues.finish() }
      }
    }
    return delivered
  }
  let delivered = await task.value
  return (delivered, "\(outer) outer values")
}

// MARK: Queue curves: one backlog built up behind a held consumer, then drained

/// A source of `0..<count` that fires `ended` when it is asked past its last element: the point
/// at which everything it made is in the operator's queue (or dropped by it).
struct BacklogSource: AsyncSequence, Sendable {
  let count: Int
  let ended: CompletionSignal

  struct AsyncIterator: AsyncIteratorProtocol {
    let source: BacklogSource
    var next = 0

    mutating func next() async -> Int? {
      guard next < source.count else {
        source.ended.fire()
        return nil
      }
      defer { next += 1 }
      return next
    }
  }

  func makeAsyncIterator() -> AsyncIterator { AsyncIterator(source: self) }
}

/// `bufferFlow(policy:)` holding a backlog of `backlog`: the consumer takes one element, waits
/// until the source has ended (all `total` elements pulled into the buffer or dropped by the
/// policy), then drains. Per element pulled.
func queueBufferFlow(_ backlog: Int, total: Int, policy: FlowBufferingPolicy) async -> (Int, String?) {
  let task = Task.detached {
    let ended = CompletionSignal()
    var iterator = BacklogSource(count: total, ended: ended).bufferFlow(policy: policy).makeAsyncIterator()
    var received = await iterator.next() == nil ? 0 : 1
    await ended.wait()
    while await iterator.next() != nil { received += 1 }
    return received
  }
  let received = await task.value
  return (total, "received \(received) of \(total)")
}

/// `delayFlow` with `backlog` elements in flight at once: they all arrive at the same instant of
/// a manual clock, then one advance makes them all due; the consumer drains them. Per element.
func queueDelayFlow(_ backlog: Int) async -> (Int, String?) {
  let clock = BacklogClock()
  let task = Task.detached {
    let ended = CompletionSignal()
    let delayed = BacklogSource(count: backlog, ended: ended).delayFlow(for: .seconds(1), clock: clock)
    let consumer = Task {
      var received = 0
      for await _ in delayed { received += 1 }
      return received
    }
    await ended.wait()
    clock.advance(by: .seconds(2))
    return await consumer.value
  }
  let received = await task.value
  return (backlog, "received \(received)")
}

/// A `PassthroughFlow(.bufferingNewest(backlog))` into one `sink` whose first delivery waits until
/// `backlog` more values were sent: they wait in the sink's mailbox, then drain. Per value sent.
func queuePassthroughSink(_ backlog: Int) async -> (Int, String?) {
  let subject = PassthroughFlow<Int, Never>(bufferingPolicy: .bufferingNewest(backlog))
  let sent = CompletionSignal()
  let completed = Countdown(1)
  let count = SinkCount()
  let subscription = subject.sink { _ in
    completed.tick()
  } receiveValue: { value in
    if value == 0 { await sent.wait() }
    count.add()
  }
  for value in 0...backlog { subject.send(value) }
  sent.fire()
  subject.finish()
  await completed.wait()
  withExtendedLifetime(subscription) {}
  return (backlog + 1, "delivered \(count.value)")
}

/// `shareFlow(replay: backlog)` over `2 × backlog` elements with one subscriber: once the replay
/// buffer is full every element displaces its oldest. Per element.
func queueShareReplay(_ backlog: Int) async -> (Int, String?) {
  let task = Task.detached {
    var received = 0
    for await _ in Flow.sequence(0..<(2 * backlog)).shareFlow(replay: backlog) { received += 1 }
    return received
  }
  let received = await task.value
  return (2 * backlog, "received \(received)")
}

/// A clock that stands still until `advance(by:)`, so that `delayFlow`'s backlog builds up at one
/// instant; from then on it jumps to each deadline slept for. (The upstream's end is stamped just
/// after the source reports it, maybe after the advance: it must still come due.)
final class BacklogClock: Clock, @unchecked Sendable {
  struct Instant: InstantProtocol {
    var offset: Duration
    func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
    func duration(to other: Instant) -> Duration { other.offset - offset }
    static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
  }

  private let lock = NSLock()
  private var current = Instant(offset: .zero)
  private var running = false
  private var sleepers: [(deadline: Instant, continuation: CheckedContinuation<Void, any Error>)] = []

  var now: Instant { lock.withLock { current } }
  var minimumResolution: Duration { .zero }

  func sleep(until deadline: Instant, tolerance: Duration?) async throws {
    // Not cancellable: the benchmark's sleepers are all woken by `advance`, or end with the run.
    try await withCheckedThrowingContinuation { continuation in
      let due = lock.withLock { () -> Bool in
        if running { current = Swift.max(current, deadline) }
        if deadline <= current { return true }
        sleepers.append((deadline, continuation))
        return false
      }
      if due { continuation.resume() }
    }
  }

  func advance(by duration: Duration) {
    let due = lock.withLock { () -> [CheckedContinuation<Void, any Error>] in
      current = current.advanced(by: duration)
      running = true
      let due = sleepers.filter { $0.deadline <= current }.map(\.continuation)
      sleepers.removeAll { $0.deadline <= current }
      return due
    }
    for continuation in due { continuation.resume() }
  }
}

// MARK: Running the curves

func runScaling(
  plan: ScalingPlan, options: Options, memoryKeys: [String]
) async -> [ScalingCurve] {
  var curves: [ScalingCurve] = []

  func timed(
    _ curve: inout ScalingCurve, size: Int, units: Int, _ run: @escaping @Sendable (Int) async -> (Int, String?)
  ) async {
    let benchmark = Benchmark(workload: curve.key, implementation: String(size), isBaseline: false) { units in
      let (done, note) = await run(units)
      return (done, note)
    }
    let row = await measure(benchmark, size: units, repetitions: plan.repetitions)
    curve.points.append(ScalingPoint(size: size, value: row.median, min: row.min, max: row.max, note: row.note))
  }

  var w2 = ScalingCurve(
    key: "W2.subscribers", sizeName: "subscribers", unit: "ns/send/subscriber",
    description:
      "`PassthroughFlow` sending to N subscriber tasks, \(plan.w2Deliveries.formatted()) deliveries (sends × N) per run"
  )
  if options.includes(w2.key) {
    for subscribers in plan.subscribers {
      let sends = plan.w2Deliveries / subscribers
      // `measure` divides by the units a run reports: report deliveries, not sends.
      await timed(&w2, size: subscribers, units: sends) { sends in
        let (_, note) = await w2Passthrough(sends, subscribers: subscribers)
        return (sends * subscribers, note)
      }
    }
    curves.append(w2)
  }

  var w4 = ScalingCurve(
    key: "W4.mergeFlow.inputs", sizeName: "inputs", unit: "ns/element",
    description:
      "`Flow.sequence(inputs).mergeFlow { $0 }`, \(plan.w4Elements.formatted()) elements split across N inputs")
  if options.includes(w4.key) {
    for inputs in plan.inputs {
      await timed(&w4, size: inputs, units: plan.w4Elements) { await w4MergeFlowInputs($0, inputs: inputs) }
    }
    curves.append(w4)
  }

  var merge = ScalingCurve(
    key: "W4.merge.inputs", sizeName: "inputs", unit: "ns/element",
    description: "`Flow.merge(inputs)`, \(plan.w4Elements.formatted()) elements split across N inputs")
  if options.includes(merge.key) {
    for inputs in plan.inputs {
      await timed(&merge, size: inputs, units: plan.w4Elements) { await w4MergeInputs($0, inputs: inputs) }
    }
    curves.append(merge)
  }

  var w3 = ScalingCurve(
    key: "W3.innerSize", sizeName: "inner size", unit: "ns/inner element delivered",
    description:
      "`switchToLatestFlow` over a `CurrentValueFlow` that sends the next outer value once the consumer has received "
      + "the previous inner's N elements (every inner runs to its end), \(plan.w3Offered.formatted()) inner elements "
      + "per run")
  if options.includes(w3.key) {
    for innerSize in plan.innerSizes {
      await timed(&w3, size: innerSize, units: plan.w3Offered / innerSize) { outer in
        await w3PacedSwitchToLatestInner(outer, innerSize: innerSize)
      }
    }
    curves.append(w3)
  }

  var superseded = ScalingCurve(
    key: "W3.superseded.innerSize", sizeName: "inner size", unit: "ns/outer value",
    description:
      "`switchToLatestFlow` over `Flow.sequence` of outer values (as fast as it goes: most inners are superseded "
      + "before they start, as in the W3 row), each mapped to an inner of N elements, "
      + "\(plan.w3Offered.formatted()) inner elements offered (outer values × N) per run")
  if options.includes(superseded.key) {
    for innerSize in plan.innerSizes {
      await timed(&superseded, size: innerSize, units: plan.w3Offered / innerSize) { outer in
        await w3SwitchToLatestInner(outer, innerSize: innerSize)
      }
    }
    curves.append(superseded)
  }

  // The queue curves: the size is the backlog; the figure, per element through the operator. A
  // queue that shifts an `Array` per element costs O(backlog) per element: its curve climbs.
  var unbounded = ScalingCurve(
    key: "Q.bufferFlow.unbounded", sizeName: "backlog", unit: "ns/element",
    description: "`bufferFlow(policy: .unbounded)`: N elements pulled while the consumer holds, then drained")
  if options.includes(unbounded.key) {
    for backlog in plan.backlogs {
      await timed(&unbounded, size: backlog, units: backlog) {
        await queueBufferFlow($0, total: $0, policy: .unbounded)
      }
    }
    curves.append(unbounded)
  }

  var newest = ScalingCurve(
    key: "Q.bufferFlow.newestOverflow", sizeName: "backlog", unit: "ns/element",
    description:
      "`bufferFlow(policy: .bufferingNewest(N))`: 2 × N elements pulled while the consumer holds (the second N each "
      + "drop the oldest), then the newest N drained")
  if options.includes(newest.key) {
    for backlog in plan.backlogs {
      await timed(&newest, size: backlog, units: backlog) {
        await queueBufferFlow($0, total: 2 * $0, policy: .bufferingNewest($0))
      }
    }
    curves.append(newest)
  }

  var delay = ScalingCurve(
    key: "Q.delayFlow", sizeName: "backlog", unit: "ns/element",
    description:
      "`delayFlow(for: 1 s)` on a manual clock: N elements in flight at one instant, all due at once, drained")
  if options.includes(delay.key) {
    for backlog in plan.backlogs {
      await timed(&delay, size: backlog, units: backlog) { await queueDelayFlow($0) }
    }
    curves.append(delay)
  }

  var passthroughSink = ScalingCurve(
    key: "Q.passthroughSink", sizeName: "backlog", unit: "ns/value",
    description:
      "`PassthroughFlow(bufferingPolicy: .bufferingNewest(N))` into one `sink` held on its first value while N more "
      + "are sent, then drained")
  if options.includes(passthroughSink.key) {
    for backlog in plan.backlogs {
      await timed(&passthroughSink, size: backlog, units: backlog) { await queuePassthroughSink($0) }
    }
    curves.append(passthroughSink)
  }

  var shareReplay = ScalingCurve(
    key: "Q.shareReplay", sizeName: "replay", unit: "ns/element",
    description: "`shareFlow(replay: N)` over 2 × N elements, one subscriber: the second N each displace the oldest")
  if options.includes(shareReplay.key) {
    for backlog in plan.backlogs {
      await timed(&shareReplay, size: backlog, units: backlog) { await queueShareReplay($0) }
    }
    curves.append(shareReplay)
  }

  curves += await coordinationCurves(options: options)
  curves += await combiningScalingCurves(options: options, repetitions: plan.repetitions)
  curves += await contextScalingCurves(options: options, repetitions: plan.repetitions)
  curves += await serviceScalingCurves(options: options, repetitions: plan.repetitions)

  for memoryKey in memoryKeys {
    var w5 = ScalingCurve(
      key: "\(memoryKey).idle", sizeName: "idle subscribers", unit: "B/subscriber",
      description: "`\(memoryKey)` with N idle subscribers, each count in a fresh process")
    guard options.includes(w5.key) else { continue }
    for count in plan.idleSubscribers {
      let value = measureInChild(memoryKey, count: count)
      w5.points.append(ScalingPoint(size: count, value: value, min: value, max: value, note: nil))
    }
    curves.append(w5)
  }
  return curves
}

// MARK: Printing

/// The curves as Markdown: a summary table (one row per curve), a text chart of every curve
/// against its smallest size, then each curve's details (min–max of the runs, notes). A text chart
/// rather than an SVG: it reads the same in a terminal, in a diff and on any Markdown renderer, and
/// the summary and chart paste into `Benchmarks/README.md` as they are.
func scalingMarkdown(_ curves: [ScalingCurve]) -> String {
  var lines: [String] = []
  lines.append("| curve | unit | figure at each size | largest/smallest | ≤ 2 × |")
  lines.append("|---|---|---|---:|---|")
  for curve in curves {
    let figures = curve.points.map { "\($0.size.formatted()): \(figure($0.value))" }.joined(separator: " · ")
    lines.append(
      "| `\(curve.key)` | \(curve.unit) | \(figures) | " + String(format: "%.2f ×", curve.growth) + " | "
        + (curve.growth <= 2 ? "yes" : "no") + " |")
  }
  lines.append("")
  lines.append("```text")
  lines.append(contentsOf: scalingChart(curves))
  lines.append("```")
  lines.append("")
  for curve in curves {
    lines.append("**`\(curve.key)`**: \(curve.description); \(curve.unit).")
    lines.append("")
    lines.append("| \(curve.sizeName) | \(curve.unit) | min–max | × smallest | note |")
    lines.append("|---:|---:|---|---:|---|")
    let base = curve.points.first?.value ?? .nan
    for point in curve.points {
      lines.append(
        "| \(point.size.formatted()) | \(figure(point.value)) | \(figure(point.min))–\(figure(point.max)) | "
          + String(format: "%.2f", point.value / base) + " | \(point.note ?? "") |")
    }
    lines.append("")
    lines.append(
      "largest/smallest: " + String(format: "%.2f", curve.growth) + " ×; max/min: "
        + String(format: "%.2f", curve.spread) + " ×")
    lines.append("")
  }
  return lines.joined(separator: "\n")
}

/// Each curve's figures as bars relative to its smallest size: 20 columns for 1 ×, `|` marks 2 ×.
func scalingChart(_ curves: [ScalingCurve]) -> [String] {
  let unitWidth = 20
  let limitColumn = 2 * unitWidth
  let labelWidth = (curves.flatMap { $0.points.map { $0.size.formatted().count } }.max() ?? 1) + 2
  var lines: [String] = []
  for curve in curves {
    lines.append("\(curve.key) (\(curve.unit); growth " + String(format: "%.2f", curve.growth) + " ×)")
    let base = curve.points.first?.value ?? .nan
    for point in curve.points {
      let relative = point.value / base
      let length = relative.isFinite ? Int((relative * Double(unitWidth)).rounded()) : 0
      var bar = ""
      for column in 0..<max(length, limitColumn + 1) {
        if column == limitColumn {
          bar += "|"
        } else {
          bar += column < length ? "#" : " "
        }
      }
      let label = point.size.formatted()
      lines.append(
        String(repeating: " ", count: labelWidth - label.count) + label + " " + bar + " "
          + String(format: "%.2f ×  ", relative) + figure(point.value))
    }
    lines.append("")
  }
  lines.append("one # = 0.05 × the figure at the smallest size; | = 2 ×")
  return lines
}

func figure(_ value: Double) -> String {
  guard value.isFinite else { return "n/a" }
  return value >= 100 ? value.rounded().formatted() : String(format: "%.1f", value)
}

/// `scaling.<curve>.<size>` for `--json`.
func scalingJSON(_ curves: [ScalingCurve]) -> [String: Double] {
  var object: [String: Double] = [:]
  for curve in curves {
    for point in curve.points { object["scaling.\(curve.key).\(point.size)"] = point.value }
    object["scaling.\(curve.key).growth"] = curve.growth
  }
  return object
}

/// `--scaling`: runs the curves instead of the rows, prints them as Markdown and writes them to
/// `--json` if asked. W5 curves run for the idle-subscriber rows that exist, in this order.
func runScalingCommand(options: Options, memoryBenchmarks: [MemoryBenchmark]) async {
  let available = Set(memoryBenchmarks.map { "\($0.workload).\($0.implementation)" })
  let memoryKeys = ["W5.passthrough", "W5.sink", "W5.parkedTask"].filter(available.contains)
  let curves = await runScaling(plan: options.quick ? .quick : .full, options: options, memoryKeys: memoryKeys)
  print(scalingMarkdown(curves))
  if let path = options.jsonPath { writeJSON([], extra: scalingJSON(curves), to: path) }
}

// MARK: Coordination curves: TaskSlots and SingleFlight with many identities and callers

/// The sizes of the coordination curves, kept apart from `ScalingPlan` so that each family of
/// curves changes its own sizes. Every size does the same work: `total` runs (or callers) per
/// measurement, in rounds of `size`.
struct CoordinationPlan {
  var identities: [Int]
  var callers: [Int]
  var total: Int
  var repetitions: Int

  static let full = CoordinationPlan(
    identities: [1, 10, 100, 1_000, 10_000, 100_000], callers: [1, 10, 100, 1_000], total: 100_000, repetitions: 5)
  static let quick = CoordinationPlan(
    identities: [1, 100, 10_000], callers: [1, 10, 100, 1_000], total: 10_000, repetitions: 3)
}

/// The nanoseconds `body` takes.
func nanoseconds(_ body: () async -> Void) async -> Double {
  let elapsed = await ContinuousClock().measure { await body() }
  return Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
}

/// `TaskSlots` with `size` live identities: each round runs an operation that waits for the round's
/// end under each of `size` identities, then cancels each identity, then lets the tasks end.
/// Nanoseconds per run and per cancel; `slots == nil` is the naive reference, a dictionary of
/// plain tasks (each replacing one cancels it) that does the same.
func coordinationIdentities(_ size: Int, total: Int, slots: TaskSlots<Int>?) async -> [Double] {
  let rounds = max(total / size, 1)
  var runs = 0.0
  var cancels = 0.0
  var tasks: [Int: Task<Void, Never>] = [:]
  var started: [Task<Void, Never>] = []
  started.reserveCapacity(size)
  for _ in 0..<rounds {
    let roundEnded = CompletionSignal()
    runs += await nanoseconds {
      for id in 0..<size {
        if let slots {
          started.append(slots.run(id, trigger: "row") { await roundEnded.wait() }!)
        } else {
          let task = Task { await roundEnded.wait() }
          tasks.updateValue(task, forKey: id)?.cancel()
          started.append(task)
        }
      }
    }
    cancels += await nanoseconds {
      for id in 0..<size {
        if let slots { slots.cancel(id) } else { tasks.removeValue(forKey: id)?.cancel() }
      }
    }
    roundEnded.fire()
    for task in started { await task.value }
    started.removeAll(keepingCapacity: true)
  }
  let units = Double(rounds * size)
  return [runs / units, cancels / units]
}

/// Starts a caller that runs at once until it first waits (where the OS has `Task.immediate`,
/// always on Linux), so that by the time this returns the caller has joined its flight.
func startCaller(_ call: sending @escaping () async -> Int) -> Task<Int, Never> {
  if #available(macOS 26.0, iOS 26.0, tvOS 26.0, watchOS 26.0, visionOS 26.0, *) {
    return Task.immediate(operation: call)
  }
  return Task(operation: call)
}

/// `SingleFlight`: each round starts `callers` caller tasks for each of `identities` identities,
/// all of them joined before the runs, which wait for the round's end, may return. Nanoseconds per
/// caller (one identity) or per run (one caller each). `flight == nil` is the naive reference:
/// each caller starts a plain task and awaits it, the two tasks a run of one caller costs.
func singleFlightRound(callers: Int, identities: Int, total: Int, flight: SingleFlight<Int, Int, Never>?) async
  -> [Double]
{
  let perRound = callers * identities
  let rounds = max(total / perRound, 1)
  var elapsed = 0.0
  var started: [Task<Int, Never>] = []
  started.reserveCapacity(perRound)
  for _ in 0..<rounds {
    let roundEnded = CompletionSignal()
    elapsed += await nanoseconds {
      for id in 0..<identities {
        for _ in 0..<callers {
          started.append(
            startCaller {
              let operation = { @Sendable () async -> Int in
                await roundEnded.wait()
                return id
              }
              guard let flight else { return await Task(operation: operation).value }
              return await flight.run(id, trigger: "401", operation: operation) ?? -1
            })
        }
      }
      roundEnded.fire()
      for caller in started { _ = await caller.value }
    }
    started.removeAll(keepingCapacity: true)
  }
  return [elapsed / Double(rounds * perRound)]
}

/// The coordination curves (registered in `runScaling`): what an app with many rows or many
/// callers pays per run, per cancel and per caller, with the request log off and on.
func coordinationCurves(options: Options) async -> [ScalingCurve] {
  let plan = options.quick ? CoordinationPlan.quick : .full
  var curves: [ScalingCurve] = []
  /// Measures `workload` at each size (a warm-up, then the median of the repetitions) for the curves
  /// it feeds, one figure each, if the filter asks for any of them.
  func measureCurves(
    _ keys: [(key: String, unit: String, description: String)], sizeName: String, sizes: [Int],
    _ workload: (Int) async -> [Double]
  ) async {
    var group = keys.map { ScalingCurve(key: $0.key, sizeName: sizeName, unit: $0.unit, description: $0.description) }
    guard group.contains(where: { options.includes($0.key) }) else { return }
    for size in sizes {
      _ = await workload(size)
      var samples: [[Double]] = []
      for _ in 0..<plan.repetitions { samples.append(await workload(size)) }
      for index in group.indices {
        let values = samples.map { $0[index] }.sorted()
        group[index].points.append(
          ScalingPoint(size: size, value: values[values.count / 2], min: values.first!, max: values.last!, note: nil))
      }
    }
    curves += group.filter { options.includes($0.key) }
  }

  let each = "\(plan.total.formatted()) runs per measurement, in rounds of N"
  func log(_ on: Bool) -> RequestLog<Int>? { on ? RequestLog() : nil }
  for (suffix, state) in [("", "off"), (".logged", "on")] {
    await measureCurves(
      [
        ("TaskSlots.run.identities\(suffix)", "ns/run", "`run` under each of N live identities, log \(state); \(each)"),
        ("TaskSlots.cancel.identities\(suffix)", "ns/cancel", "`cancel` of each live identity, log \(state); \(each)"),
      ], sizeName: "identities", sizes: plan.identities
    ) { size in
      await coordinationIdentities(size, total: plan.total, slots: TaskSlots(log: log(!suffix.isEmpty)))
    }
  }
  await measureCurves(
    [
      ("naive.run.identities", "ns/run", "the reference: a `[Int: Task]` whose new task cancels the old one; \(each)"),
      ("naive.cancel.identities", "ns/cancel", "the reference: removing and cancelling each of N plain tasks; \(each)"),
    ], sizeName: "identities", sizes: plan.identities
  ) { await coordinationIdentities($0, total: plan.total, slots: nil) }
  for (suffix, logged) in [("", false), (".logged", true)] {
    let state = logged ? "on" : "off"
    await measureCurves(
      [
        (
          "SingleFlight.callers\(suffix)", "ns/caller",
          "N callers of `SingleFlight.run` joining one run, log \(state); \(plan.total.formatted()) callers in all"
        )
      ], sizeName: "callers", sizes: plan.callers
    ) { await singleFlightRound(callers: $0, identities: 1, total: plan.total, flight: SingleFlight(log: log(logged))) }
    await measureCurves(
      [
        (
          "SingleFlight.identities\(suffix)", "ns/run",
          "`SingleFlight.run` with N identities in flight at once, one caller each, log \(state); \(each)"
        )
      ], sizeName: "identities", sizes: plan.identities
    ) { await singleFlightRound(callers: 1, identities: $0, total: plan.total, flight: SingleFlight(log: log(logged))) }
  }
  await measureCurves(
    [("naive.flight.identities", "ns/run", "the reference: a caller task awaiting a plain task it started; \(each)")],
    sizeName: "identities", sizes: plan.identities
  ) { await singleFlightRound(callers: 1, identities: $0, total: plan.total, flight: nil) }
  return curves
}

// MARK: Combining curves: `Flow.combineLatest` / `Flow.zip` with 2…64 inputs

/// `Flow.combineLatest(inputs)` over `inputs` `Flow.sequence`s of `each` elements: per output
/// element (outputs × inputs, since each output copies one element per input).
func combineLatestInputs(_ each: Int, inputs: Int) async -> (Int, String?) {
  let task = Task.detached {
    var outputs = 0
    for await _ in Flow.combineLatest((0..<inputs).map { _ in Flow.sequence(0..<each) }) { outputs += 1 }
    return outputs
  }
  let outputs = await task.value
  return (outputs * inputs, "outputs \(outputs)")
}

/// `Flow.zip(inputs)` over `inputs` `Flow.sequence`s of `each` elements: per output element.
func zipInputs(_ each: Int, inputs: Int) async -> (Int, String?) {
  let task = Task.detached {
    var outputs = 0
    for await _ in Flow.zip((0..<inputs).map { _ in Flow.sequence(0..<each) }) { outputs += 1 }
    return outputs
  }
  let outputs = await task.value
  return (outputs * inputs, "outputs \(outputs)")
}

/// The combiners' curves: N inputs, about the same number of output elements (outputs × N) at every
/// size. combineLatest makes about one output per input element (N × each outputs of N elements),
/// zip one per row (each outputs of N elements).
func combiningScalingCurves(options: Options, repetitions: Int) async -> [ScalingCurve] {
  let sizes = [2, 4, 16, 64]
  let outputElements = options.quick ? 204_800 : 2_048_000
  var curves: [ScalingCurve] = []
  // Elements per input for `units` output elements over N inputs.
  let combineLatestEach: @Sendable (Int, Int) -> Int = { units, inputs in units / (inputs * inputs) }
  let zipEach: @Sendable (Int, Int) -> Int = { units, inputs in units / inputs }
  let runs = [
    ("W7.combineLatest.inputs", "Flow.combineLatest", combineLatestEach, combineLatestInputs),
    ("W7.zip.inputs", "Flow.zip", zipEach, zipInputs),
  ]
  for (key, name, each, run) in runs {
    var curve = ScalingCurve(
      key: key, sizeName: "inputs", unit: "ns/output element",
      description:
        "`\(name)([inputs])` over N `Flow.sequence`s, about \(outputElements.formatted()) output elements "
        + "(outputs × N) per run")
    guard options.includes(curve.key) else { continue }
    for inputs in sizes {
      let benchmark = Benchmark(workload: curve.key, implementation: String(inputs), isBaseline: false) { units in
        await run(max(each(units, inputs), 1), inputs)
      }
      let row = await measure(benchmark, size: outputElements, repetitions: repetitions)
      curve.points.append(ScalingPoint(size: inputs, value: row.median, min: row.min, max: row.max, note: row.note))
    }
    curves.append(curve)
  }
  return curves
}
