import Foundation

/// One measured implementation of a workload: returns how many units it processed (elements, outer
/// values, calls) and, optionally, a note such as a delivered count.
struct Benchmark {
  let workload: String
  let implementation: String
  let isBaseline: Bool
  let run: @Sendable (_ size: Int) async -> (units: Int, note: String?)
}

/// A memory benchmark: returns bytes per subscriber.
struct MemoryBenchmark {
  let workload: String
  let implementation: String
  let isBaseline: Bool
  /// What one of `count` is, for the row's note.
  var unitName = "idle subscriber"
  let run: @Sendable (_ count: Int) async -> Double
}

struct Options {
  var filter: String?
  var quick = false
  var jsonPath: String?
  /// `--scaling`: the curves of Scaling.swift instead of the rows.
  var scaling = false
  /// Set in a child process that measures one memory workload.
  var memoryChild: (key: String, count: Int)?
  /// `--typecheck`: the type-checking corpus instead of the rows (TypeCheck.swift).
  var typeCheck: TypeCheckOptions?

  init(arguments: [String]) {
    var iterator = arguments.dropFirst().makeIterator()
    while let argument = iterator.next() {
      switch argument {
      case "--quick": quick = true
      case "--filter": filter = iterator.next()
      case "--json": jsonPath = iterator.next()
      case "--scaling": scaling = true
      case "--memory-child": memoryChild = (iterator.next() ?? "", Int(iterator.next() ?? "") ?? 0)
      case "--typecheck": typeCheck = typeCheck ?? TypeCheckOptions()
      case "--modules": modules = iterator.next()
      case "--guard":
        // Every argument after it is a swiftc flag for the guarded chains.
        var flags: [String] = []
        while let flag = iterator.next() { flags.append(flag) }
        typeCheck = typeCheck ?? TypeCheckOptions()
        typeCheck?.guardFlags = flags
      case "--help", "-h":
        print(Self.usage)
        exit(0)
      default:
        FileHandle.standardError.write("flow-benchmarks: unknown option \(argument)\n".data(using: .utf8)!)
        print(Self.usage)
        exit(2)
      }
    }
    typeCheck?.quick = quick
    typeCheck?.filter = filter
    typeCheck?.jsonPath = jsonPath
    typeCheck?.modules = modules
  }

  static let usage = """
    usage: flow-benchmarks [--quick] [--scaling] [--filter NAME] [--json PATH]
           flow-benchmarks --typecheck [--quick] [--filter NAME] [--json PATH] [--modules DIR] [--guard SWIFTC-FLAG...]
    """
  private var modules: String?

  func includes(_ key: String) -> Bool {
    guard let filter else { return true }
    return key.localizedCaseInsensitiveContains(filter)
  }
}

struct Row {
  var key: String
  var median: Double
  var min: Double
  var max: Double
  var unit: String
  var note: String?
  var ratio: Double?
  var baseline: String?
  var target: Double?
}

/// Median of `repetitions` runs after one warm-up, in nanoseconds per unit.
func measure(_ benchmark: Benchmark, size: Int, repetitions: Int) async -> Row {
  _ = await benchmark.run(max(size / 10, 1))  // warm-up
  var samples: [Double] = []
  var note: String?
  for _ in 0..<repetitions {
    let clock = ContinuousClock()
    var result: (units: Int, note: String?) = (0, nil)
    let elapsed = await clock.measure { result = await benchmark.run(size) }
    note = result.note
    let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
    samples.append(nanoseconds / Double(max(result.units, 1)))
  }
  samples.sort()
  return Row(
    key: "\(benchmark.workload).\(benchmark.implementation)", median: samples[samples.count / 2], min: samples.first!,
    max: samples.last!, unit: "ns", note: note)
}

/// Rows measured in alternation, for workloads whose baseline is so small that the machine's
/// state moves it (W6: a task created and cancelled, bound by the allocator's arena lock between
/// the thread that creates tasks and the one that runs and frees them). Row by row, a row's five
/// samples fall in one stretch of a few seconds and its baseline's in another: a load change between
/// the two stretches, or a different pattern of thread wake-ups, moved the ratio from 1.25 to 3.20
/// from run to run. Here each round takes one sample of every row, in an order rotated each round
/// (the heap a sample leaves behind is the next one's start), and each row's ratio is the median
/// of its per-round ratios against the baseline's sample of the same round: a round that the load
/// slowed is slowed for both.
func measureInterleaved(_ benchmarks: [Benchmark], baseline: String, size: Int, rounds: Int) async -> [Row] {
  for benchmark in benchmarks { _ = await benchmark.run(max(size / 10, 1)) }  // warm-up
  var samples = [[Double]](repeating: [], count: benchmarks.count)
  var notes = [String?](repeating: nil, count: benchmarks.count)
  for round in 0..<rounds {
    for step in benchmarks.indices {
      let index = (step + round) % benchmarks.count
      let clock = ContinuousClock()
      var result: (units: Int, note: String?) = (0, nil)
      let elapsed = await clock.measure { result = await benchmarks[index].run(size) }
      notes[index] = result.note
      let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
      samples[index].append(nanoseconds / Double(max(result.units, 1)))
    }
  }
  let keys = benchmarks.map { "\($0.workload).\($0.implementation)" }
  let base = keys.firstIndex(of: baseline).map { samples[$0] }
  func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
  return benchmarks.indices.map { index in
    let sorted = samples[index].sorted()
    var row = Row(
      key: keys[index], median: median(sorted), min: sorted.first!, max: sorted.last!, unit: "ns", note: notes[index])
    if let base, keys[index] != baseline {
      row.ratio = median(zip(samples[index], base).map { $0 / $1 })
      row.baseline = baseline
    }
    return row
  }
}

/// Runs `body` with every thread of the process on the CPUs in `cpus` (Linux: each thread's
/// affinity, from `/proc/self/task`; threads started meanwhile inherit it from the thread that
/// starts them), then gives each thread back the affinity it had. For W6, whose figure otherwise
/// depends on whether the machine has a second core free at the time: with one, the tasks run on
/// it while the loop makes the next ones, and both rows pay glibc's arena lock between the two
/// threads (the naive row 3,100 ns a run instead of 390, so the ratio says more about that lock
/// than about TaskSlots); without, they run after the loop and the rows pay their own work.
func withThreads<T>(onCPUs cpus: [Int], _ body: () async -> T) async -> T {
  // GNU extensions, which the Glibc module does not import.
  typealias Affinity = @convention(c) (pid_t, Int, UnsafeMutableRawPointer) -> Int32
  let libc = dlopen(nil, RTLD_NOW)
  guard let get = dlsym(libc, "sched_getaffinity"), let set = dlsym(libc, "sched_setaffinity") else { return await body() }
  let sched_getaffinity = unsafeBitCast(get, to: Affinity.self)
  let sched_setaffinity = unsafeBitCast(set, to: Affinity.self)
  let size = MemoryLayout<cpu_set_t>.size
  func threads() -> [pid_t] {
    ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []).compactMap { pid_t($0) }
  }
  var saved: [(pid_t, cpu_set_t)] = []
  var pinned = cpu_set_t()
  withUnsafeMutableBytes(of: &pinned) { bytes in
    for cpu in cpus { bytes[cpu / 8] |= UInt8(1 << (cpu % 8)) }
  }
  for thread in threads() {
    var old = cpu_set_t()
    guard sched_getaffinity(thread, size, &old) == 0 else { continue }
    saved.append((thread, old))
    _ = sched_setaffinity(thread, size, &pinned)
  }
  let result = await body()
  for (thread, var old) in saved { _ = sched_setaffinity(thread, size, &old) }
  // Threads started during `body` keep the pinned set unless given the set of the main thread.
  if let all = saved.first?.1 {
    var all = all
    for thread in threads() where !saved.contains(where: { $0.0 == thread }) { _ = sched_setaffinity(thread, size, &all) }
  }
  return result
}

/// Anonymous resident memory of this process (heap and stacks), in bytes (Linux: /proc/self/statm,
/// resident minus file-backed pages). Pages of code that a workload runs for the first time are
/// file-backed and left out: counted, they charged about 330 B to each of 1,000 subscribers and
/// 3 B to each of 100,000. Memory workloads run in a fresh child process each: in a process that
/// already ran other workloads the allocator reuses freed pages and resident memory barely moves
/// (measured: 0 B per subscriber).
func residentBytes() -> Double {
  guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
  let fields = text.split(separator: " ")
  guard fields.count > 2, let resident = Double(fields[1]), let shared = Double(fields[2]) else { return 0 }
  return (resident - shared) * Double(sysconf(Int32(_SC_PAGESIZE)))
}

/// Resident memory once it has stopped growing: polls `residentBytes()` every `interval` until
/// `stableReadings` readings in a row are equal, or `limit` has passed. The memory workloads wait
/// this way for their subscriber tasks to start and park instead of having each task signal that
/// it has started: the signal would cost memory of its own and be charged to the subscriber.
func settledResidentBytes(
  stableReadings: Int = 5, interval: Duration = .milliseconds(10), limit: Duration = .seconds(60)
) async -> Double {
  let clock = ContinuousClock()
  let deadline = clock.now.advanced(by: limit)
  var last = residentBytes()
  var unchanged = 0
  while unchanged < stableReadings, clock.now < deadline {
    await Task.yield()
    try? await Task.sleep(for: interval)
    let reading = residentBytes()
    unchanged = reading == last ? unchanged + 1 : 0
    last = reading
  }
  return last
}

/// Makes the concurrency pool start all its threads, each with its allocator arena, before a
/// memory workload reads resident memory: otherwise the workload's first tasks start the second
/// thread and its arena, and small counts charge that to each subscriber (measured: about 600 B
/// more per parked task at 1,000 tasks).
func spinUpWorkers() async {
  let width = ProcessInfo.processInfo.activeProcessorCount
  let started = NSLock()
  nonisolated(unsafe) var running = 0
  await withTaskGroup(of: Void.self) { group in
    for _ in 0..<width {
      group.addTask {
        started.withLock { running += 1 }
        // Hold this thread until every worker holds one (bounded), so that the pool runs them at once.
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(200))
        while started.withLock({ running }) < width, clock.now < deadline {
          blackHole([Int](repeating: 0, count: 64))
        }
      }
    }
  }
  // The first sleep starts the timer machinery `settledResidentBytes` polls with.
  _ = await settledResidentBytes(stableReadings: 2, interval: .milliseconds(1))
}

/// Runs `--memory-child KEY COUNT` in a new process of this executable and reads its figure.
func measureInChild(_ key: String, count: Int) -> Double {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
  process.arguments = ["--memory-child", key, String(count)]
  let pipe = Pipe()
  process.standardOutput = pipe
  do { try process.run() } catch { return .nan }
  let data = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return Double(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? .nan
}

func printTable(_ rows: [Row]) {
  func pad(_ text: String, _ width: Int) -> String {
    text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0)
  }
  print(
    pad("workload.implementation", 28) + pad("median", 14) + pad("min–max", 24) + pad("ratio", 8)
      + pad("vs", 18) + pad("target", 16) + "note")
  for row in rows {
    let median = String(format: "%.2f %@", row.median, row.unit)
    let range = String(format: "%.2f–%.2f", row.min, row.max)
    let ratio = row.ratio.map { String(format: "%.3f", $0) } ?? "baseline"
    let target = row.target.map { limit in
      String(format: "≤ %g %@", limit, (row.ratio ?? .infinity) <= limit ? "met" : "missed")
    }
    print(
      pad(row.key, 28) + pad(median, 14) + pad(range, 24) + pad(ratio, 8) + pad(row.baseline ?? "", 18)
        + pad(target ?? "", 16) + (row.note ?? ""))
  }
}

func writeJSON(_ rows: [Row], extra: [String: Double] = [:], to path: String) {
  var object = extra
  for row in rows { object[row.key] = row.median }
  let data = try! JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys])
  _ = FileManager.default.createFile(atPath: path, contents: data)
}
