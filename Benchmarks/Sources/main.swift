import AsyncFlow
import Foundation

// flow-benchmarks: every hot path against an in-process baseline. Release builds only:
//   swift run -c release flow-benchmarks [--quick] [--scaling] [--filter NAME] [--json PATH]
//   swift run -c release flow-benchmarks --typecheck [--quick] [--guard SWIFTC-FLAG...]  (TypeCheck.swift)

let options = Options(arguments: CommandLine.arguments)
let scale = options.quick ? 100 : 1
let repetitions = options.quick ? 3 : 5

let benchmarks: [(size: Int, Benchmark)] = [
  (1_000_000, Benchmark(workload: "W0", implementation: "loop", isBaseline: true) { w0Loop($0) }),
  (1_000_000, Benchmark(workload: "W1", implementation: "stdlib", isBaseline: true) { await w1Stdlib($0) }),
  (
    1_000_000, Benchmark(workload: "W1", implementation: "flowSequence", isBaseline: false) { await w1FlowSequence($0) }
  ),
  (
    1_000_000,
    Benchmark(workload: "W1", implementation: "flowMainActor", isBaseline: false) { await w1FlowMainActor($0) }
  ),
  (
    1_000_000,
    Benchmark(workload: "W1", implementation: "mainActorFloor", isBaseline: false) { await w1MainActorFloor($0) }
  ),
  (1_000_000, Benchmark(workload: "W1", implementation: "flowBuilder", isBaseline: false) { await w1FlowBuilder($0) }),
  (1_000_000, Benchmark(workload: "W1", implementation: "asyncStream", isBaseline: false) { await w1AsyncStream($0) }),
  (
    1_000_000,
    Benchmark(workload: "W2", implementation: "asyncStream1", isBaseline: true) {
      await w2AsyncStream($0, subscribers: 1)
    }
  ),
  (
    1_000_000,
    Benchmark(workload: "W2", implementation: "passthrough1", isBaseline: false) {
      await w2Passthrough($0, subscribers: 1)
    }
  ),
  (
    1_000_000,
    Benchmark(workload: "W2", implementation: "asyncStream4", isBaseline: true) {
      await w2AsyncStream($0, subscribers: 4)
    }
  ),
  (
    1_000_000,
    Benchmark(workload: "W2", implementation: "passthrough4", isBaseline: false) {
      await w2Passthrough($0, subscribers: 4)
    }
  ),
  (
    1_000_000,
    Benchmark(workload: "W2", implementation: "sink1", isBaseline: false) { await w2Sink($0, subscribers: 1) }
  ),
  (
    1_000_000,
    Benchmark(workload: "W2", implementation: "sink4", isBaseline: false) { await w2Sink($0, subscribers: 4) }
  ),
  (
    1_000_000,
    Benchmark(workload: "W2", implementation: "currentValue1", isBaseline: false) { await w2CurrentValue($0) }
  ),
  (100_000, Benchmark(workload: "W3", implementation: "naive", isBaseline: true) { await w3Naive($0) }),
  (
    100_000,
    Benchmark(workload: "W3", implementation: "switchToLatest", isBaseline: false) { await w3SwitchToLatest($0) }
  ),
  (1_000_000, Benchmark(workload: "W4", implementation: "asyncStream", isBaseline: true) { await w4AsyncStream($0) }),
  (1_000_000, Benchmark(workload: "W4", implementation: "merge", isBaseline: false) { await w4Merge($0) }),
  (1_000_000, Benchmark(workload: "W7", implementation: "naive", isBaseline: true) { await w7Naive($0) }),
  (
    1_000_000,
    Benchmark(workload: "W7", implementation: "combineLatest", isBaseline: false) { await w7CombineLatest($0) }
  ),
  (1_000_000, Benchmark(workload: "W7", implementation: "zip", isBaseline: false) { await w7Zip($0) }),
  (
    1_000_000,
    Benchmark(workload: "W7", implementation: "withLatestFrom", isBaseline: false) { await w7WithLatestFrom($0) }
  ),
  (10_000, Benchmark(workload: "W8", implementation: "mainActorHop", isBaseline: true) { await w8MainActorHop($0) }),
  (
    10_000,
    Benchmark(workload: "W8", implementation: "runCurrentIdle", isBaseline: false) { await w8RunCurrentIdle($0) }
  ),
  (2_000, Benchmark(workload: "W8", implementation: "debounceStep", isBaseline: false) { await w8DebounceStep($0) }),
  (
    100_000,
    Benchmark(workload: "W9", implementation: "naiveLookups", isBaseline: true) {
      await w9Lookups($0, deduplicated: false)
    }
  ),
  (
    100_000,
    Benchmark(workload: "W9", implementation: "lookups", isBaseline: false) { await w9Lookups($0, deduplicated: true) }
  ),
  (
    1_950_000,
    Benchmark(workload: "W9", implementation: "feed195", isBaseline: false) { await w9Feed($0 / 195, subscribers: 195) }
  ),
]

/// Measured in alternation (`measureInterleaved`): the baseline is a bare task, which the machine's
/// state moves more than the difference measured.
let w6Benchmarks: [Benchmark] = [
  Benchmark(workload: "W6", implementation: "naive", isBaseline: true) { await w6Naive($0) },
  Benchmark(workload: "W6", implementation: "taskSlotsLatest", isBaseline: false) { await w6TaskSlots($0) },
  Benchmark(workload: "W6", implementation: "taskSlotsLatestLogged", isBaseline: false) { await w6TaskSlotsLogged($0) },
]

let memoryBenchmarks: [MemoryBenchmark] = [
  MemoryBenchmark(workload: "W5", implementation: "asyncStream", isBaseline: true) { await w5AsyncStream($0) },
  MemoryBenchmark(workload: "W5", implementation: "passthrough", isBaseline: false) { await w5Passthrough($0) },
  MemoryBenchmark(workload: "W5", implementation: "parkedTask", isBaseline: false) { await w5ParkedTasks($0) },
  MemoryBenchmark(workload: "W5", implementation: "passthroughIterator", isBaseline: false) {
    await w5PassthroughIterators($0)
  },
  MemoryBenchmark(workload: "W5", implementation: "sink", isBaseline: false) { await w5Sink($0) },
  MemoryBenchmark(workload: "W5", implementation: "sinkInTask", isBaseline: false) { await w5SinkInTask($0) },
  MemoryBenchmark(workload: "W9", implementation: "lookupInFlight", isBaseline: false, unitName: "waiting caller") {
    await w9LookupInFlight($0)
  },
  MemoryBenchmark(workload: "W9", implementation: "feedSubscriber", isBaseline: false) { await w9FeedSubscriber($0) },
]

/// The baseline each workload's ratios are taken against (W2 pairs subscriber counts). The main-actor
/// rows compare with the same chain consumed off any actor, as their target does.
func baselineKey(for key: String) -> String? {
  switch key {
  case "W1.flowSequence": "W1.stdlib"
  case "W1.flowMainActor", "W1.mainActorFloor": "W1.flowSequence"
  case "W1.flowBuilder": "W1.asyncStream"
  case "W1.asyncStream": "W1.stdlib"
  case "W2.passthrough1", "W2.currentValue1": "W2.asyncStream1"
  case "W2.passthrough4": "W2.asyncStream4"
  case "W2.sink1": "W2.passthrough1"
  case "W2.sink4": "W2.passthrough4"
  case "W3.switchToLatest": "W3.naive"
  case "W4.merge": "W4.asyncStream"
  case "W5.passthrough", "W5.passthroughIterator", "W5.parkedTask", "W5.sink", "W5.sinkInTask": "W5.asyncStream"
  case "W6.taskSlotsLatest": "W6.naive"
  case "W6.taskSlotsLatestLogged": "W6.naive"
  case "W7.combineLatest", "W7.zip", "W7.withLatestFrom": "W7.naive"
  case "W8.runCurrentIdle", "W8.debounceStep": "W8.mainActorHop"
  case "W9.lookups": "W9.naiveLookups"
  case "W9.lookupInFlight", "W9.feedSubscriber": "W5.parkedTask"
  default: nil
  }
}

/// The target for a ratio: at most this many times its baseline.
func target(for key: String) -> Double? {
  switch key {
  case "W1.flowSequence": 0.05
  case "W1.flowMainActor": 2
  case "W1.flowBuilder", "W2.passthrough1", "W2.passthrough4": 0.1
  case "W3.switchToLatest", "W5.passthrough": 0.5
  case "W4.merge": 0.15
  case "W2.sink1", "W2.sink4": 1.2
  case "W6.taskSlotsLatest": 1.5
  case "W6.taskSlotsLatestLogged": 1.65
  case "W9.feedSubscriber": 1.15
  case "W7.combineLatest", "W7.zip": 0.3
  default: nil
  }
}

if let typeCheck = options.typeCheck {
  exit(runTypeCheckCommand(typeCheck))
}

if let child = options.memoryChild {
  let benchmark = memoryBenchmarks.first { "\($0.workload).\($0.implementation)" == child.key }!
  await spinUpWorkers()
  print(await benchmark.run(child.count))
  exit(0)
}

if options.scaling {
  await runScalingCommand(options: options, memoryBenchmarks: memoryBenchmarks)
  exit(0)
}

var rows: [Row] = []
for (size, benchmark) in benchmarks where options.includes("\(benchmark.workload).\(benchmark.implementation)") {
  rows.append(await measure(benchmark, size: max(size / scale, 10), repetitions: repetitions))
}
let w6Included = w6Benchmarks.filter { options.includes("\($0.workload).\($0.implementation)") }
if !w6Included.isEmpty {
  // The baseline is measured with whichever W6 row is asked for: the ratio needs its rounds.
  let w6 = w6Included.contains { $0.isBaseline } ? w6Included : [w6Benchmarks[0]] + w6Included
  // On one CPU: whether a second core is free decides otherwise (see `withThreads(onCPUs:_:)`).
  let w6Rows = await withThreads(onCPUs: [0]) {
    await measureInterleaved(w6, baseline: "W6.naive", size: max(100_000 / scale, 10), rounds: options.quick ? 3 : 11)
  }
  let w6Kept = w6Rows.filter { row in w6Included.contains { "\($0.workload).\($0.implementation)" == row.key } }
  rows.insert(contentsOf: w6Kept, at: rows.firstIndex { $0.key.hasPrefix("W7.") } ?? rows.endIndex)
}
for benchmark in memoryBenchmarks where options.includes("\(benchmark.workload).\(benchmark.implementation)") {
  let count = options.quick ? 1_000 : 100_000
  var samples: [Double] = []
  for _ in 0..<(options.quick ? 1 : 3) {
    samples.append(measureInChild("\(benchmark.workload).\(benchmark.implementation)", count: count))
  }
  samples.sort()
  rows.append(
    Row(
      key: "\(benchmark.workload).\(benchmark.implementation)", median: samples[samples.count / 2], min: samples.first!,
      max: samples.last!, unit: "B", note: "bytes per \(benchmark.unitName), \(count.formatted()) of them"))
}
for index in rows.indices {
  // A ratio taken round by round (W6) is kept; its target is still the issue's.
  if rows[index].ratio != nil {
    rows[index].target = target(for: rows[index].key)
    continue
  }
  guard let baseline = baselineKey(for: rows[index].key), let base = rows.first(where: { $0.key == baseline }) else {
    continue
  }
  rows[index].ratio = rows[index].median / base.median
  rows[index].baseline = baseline
  rows[index].target = target(for: rows[index].key)
}
printTable(rows)
if let path = options.jsonPath { writeJSON(rows, to: path) }
