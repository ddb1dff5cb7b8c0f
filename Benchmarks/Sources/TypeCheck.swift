import Foundation

// `--typecheck`: the type-checking time of the pipelines users write (Benchmarks/TypeCheck), each
// against its baseline, the same text with every AsyncFlow operator renamed to a stand-in of one
// signature (Benchmarks/TypeCheck/StandIns.swift). The ratio is the cost of the overloads the type
// checker weighs at each step (AsyncFlow's and the standard library's beside them), not of the
// closures the user wrote, which both files share.
//
// Each pipeline is type-checked in a file of its own, with `swiftc -typecheck` against the
// AsyncFlow module this executable was built with (or `--modules DIR`), and measured twice:
// - the CPU milliseconds of its function bodies (`-debug-time-function-bodies`), median of 3 runs
//   (1 with `--quick`), each run alternating the pipeline and its baseline so a load change falls
//   on both;
// - the solver's scopes (`-stats-output-dir`, `Sema.NumConstraintScopes`): how many partial
//   solutions the type checker tried. The same on every run and every machine, so a change of the
//   API shows there without noise.

/// One `// pipeline: name (N steps)` section of a corpus file.
struct CorpusPipeline {
  let name: String
  let steps: Int
  /// In Chains.swift: checked by `--guard` against the 150 ms limit.
  let guarded: Bool
  let imports: [String]
  let text: String
  /// From the section's `// baseline: operator=standIn ...` line.
  let standIns: [String: String]
}

struct TypeCheckOptions {
  var quick = false
  var filter: String?
  var jsonPath: String?
  /// `--modules DIR`: another build's AsyncFlow module (to compare two versions of the API).
  var modules: String?
  /// `--guard FLAG...`: type-check the guarded chains once, with these swiftc flags, and fail on
  /// any warning (`.ci/run` passes `-warn-long-function-bodies=150` and its expression twin).
  var guardFlags: [String]?
}

/// The operators every baseline renames, to the stand-in of the same one signature. The flattening
/// operators, whose stand-in depends on the pipeline's failure types, are named by its section.
let defaultStandIns: [String: String] = [
  "map": "oneMap", "filter": "oneFilter", "compactMap": "oneCompactMap",
  "removeDuplicatesFlow": "oneRemoveDuplicates", "scanFlow": "oneScan", "debounceFlow": "oneDebounce",
  "retryWithBackoff": "oneRetry", "asLoadState": "oneAsLoadState", "prependState": "onePrependState",
  "catchInner": "oneCatchInner", "assignFlow": "oneAssign", "setFailureType": "oneSetFailureType", "sink": "oneSink",
]
let sectionStandIns: Set<String> = ["switchToLatestFlow", "mergeFlow", "concatFlow", "exhaustFlow"]

func loadCorpus(_ directory: URL) -> [CorpusPipeline] {
  var pipelines: [CorpusPipeline] = []
  for file in ["Chains.swift", "Pipelines.swift"] {
    let source = try! String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
    let lines = source.components(separatedBy: "\n")
    let imports = lines.filter { $0.hasPrefix("import ") }
    let header = try! NSRegularExpression(pattern: #"^// pipeline: (\w+) \((\d+) steps?\)"#)
    var starts: [(index: Int, name: String, steps: Int)] = []
    for (index, line) in lines.enumerated() {
      let range = NSRange(line.startIndex..., in: line)
      guard let match = header.firstMatch(in: line, range: range) else { continue }
      let name = String(line[Range(match.range(at: 1), in: line)!])
      starts.append((index, name, Int(line[Range(match.range(at: 2), in: line)!])!))
    }
    for (position, start) in starts.enumerated() {
      let end = position + 1 < starts.count ? starts[position + 1].index : lines.count
      let section = Array(lines[start.index..<end])
      var standIns: [String: String] = [:]
      for line in section where line.hasPrefix("// baseline:") {
        for pair in line.dropFirst("// baseline:".count).split(separator: " ") {
          let parts = pair.split(separator: "=")
          standIns[String(parts[0])] = String(parts[1])
        }
      }
      pipelines.append(
        CorpusPipeline(
          name: start.name, steps: start.steps, guarded: file == "Chains.swift", imports: imports,
          text: section.joined(separator: "\n"), standIns: standIns))
    }
  }
  return pipelines
}

/// The pipeline's text with every AsyncFlow operator renamed to its stand-in.
func baselineText(_ pipeline: CorpusPipeline) -> String {
  var text = pipeline.text.components(separatedBy: "\n").filter { !$0.hasPrefix("//") }.joined(separator: "\n")
  var renames = defaultStandIns
  for name in sectionStandIns {
    if let standIn = pipeline.standIns[name] {
      renames[name] = standIn
    } else if text.contains(".\(name)") {
      fatalError("flow-benchmarks: pipeline \(pipeline.name) uses \(name) but its section has no `// baseline:` line")
    }
  }
  for (name, standIn) in renames {
    let pattern = try! NSRegularExpression(pattern: #"(?<!\\)\."# + name + #"(?![\w])"#)
    text = pattern.stringByReplacingMatches(
      in: text, range: NSRange(text.startIndex..., in: text), withTemplate: "." + standIn)
  }
  return text.replacingOccurrences(of: "Flow.combineLatest(", with: "oneCombineLatest(")
}

struct TypeCheckResult {
  var milliseconds: Double
  var scopes: Int
  var output: String
  var status: Int32
}

func runSwiftc(_ arguments: [String]) -> (status: Int32, output: String) {
  let process = Process()
  process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
  process.arguments = ["swiftc"] + arguments
  let pipe = Pipe()
  process.standardOutput = pipe
  process.standardError = pipe
  do { try process.run() } catch { return (-1, "flow-benchmarks: cannot run swiftc: \(error)") }
  let data = pipe.fileHandleForReading.readDataToEndOfFile()
  process.waitUntilExit()
  return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

func typeCheck(_ file: URL, includes: [String], flags: [String] = [], scratch: URL) -> TypeCheckResult {
  let stats = scratch.appendingPathComponent("stats-\(UUID().uuidString)")
  try! FileManager.default.createDirectory(at: stats, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: stats) }
  let (status, output) = runSwiftc(
    ["-typecheck", "-swift-version", "6", "-parse-as-library"] + includes.flatMap { ["-I", $0] }
      + ["-Xfrontend", "-debug-time-function-bodies", "-stats-output-dir", stats.path] + flags + [file.path])
  // "12.34ms\t<file>:<line>:<column>\t<kind> <name>": every body of the file (the pipeline's
  // function, or its type's members).
  var milliseconds = 0.0
  for line in output.components(separatedBy: "\n") {
    guard let tab = line.firstIndex(of: "\t"), line[..<tab].hasSuffix("ms"), line.contains(file.lastPathComponent)
    else { continue }
    milliseconds += Double(line[..<tab].dropLast(2)) ?? 0
  }
  var scopes = 0
  if let name = try? FileManager.default.contentsOfDirectory(atPath: stats.path).first(where: { $0.hasSuffix(".json") }
  ),
    let data = FileManager.default.contents(atPath: stats.appendingPathComponent(name).path),
    let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
  {
    scopes = (object["Sema.NumConstraintScopes"] as? Int) ?? 0
  }
  return TypeCheckResult(milliseconds: milliseconds, scopes: scopes, output: output, status: status)
}

func loadAverage() -> String {
  (try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8))
    .map { $0.split(separator: " ").prefix(3).joined(separator: " ") } ?? "?"
}

func runTypeCheckCommand(_ options: TypeCheckOptions) -> Int32 {
  let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
  let corpusDirectory = root.appendingPathComponent("TypeCheck")
  let executable = Bundle.main.executableURL ?? URL(fileURLWithPath: CommandLine.arguments[0])
  let modules = options.modules ?? executable.deletingLastPathComponent().appendingPathComponent("Modules").path
  guard FileManager.default.fileExists(atPath: modules + "/AsyncFlow.swiftmodule") else {
    print("flow-benchmarks: no AsyncFlow.swiftmodule in \(modules) (pass --modules DIR)")
    return 2
  }
  let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("flow-typecheck-\(UUID().uuidString)")
  try! FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
  defer { try? FileManager.default.removeItem(at: scratch) }

  // The corpus's own types and the baseline's stand-ins, each a module built once per run.
  let corpusModules = scratch.appendingPathComponent("Modules")
  try! FileManager.default.createDirectory(at: corpusModules, withIntermediateDirectories: true)
  for (module, file) in [("TypeCheckSupport", "Support.swift"), ("TypeCheckStandIns", "StandIns.swift")] {
    let (status, output) = runSwiftc([
      "-emit-module", "-module-name", module, "-swift-version", "6", "-parse-as-library", "-I", modules, "-I",
      corpusModules.path, "-emit-module-path", corpusModules.appendingPathComponent("\(module).swiftmodule").path,
      corpusDirectory.appendingPathComponent(file).path,
    ])
    guard status == 0 else {
      print(output)
      print("flow-benchmarks: Benchmarks/TypeCheck/\(file) does not compile")
      return 1
    }
  }
  let includes = [modules, corpusModules.path]
  let pipelines = loadCorpus(corpusDirectory).filter { pipeline in
    options.filter.map { pipeline.name.localizedCaseInsensitiveContains($0) } ?? true
  }
  func write(_ name: String, _ text: String) -> URL {
    let file = scratch.appendingPathComponent("\(name).swift")
    try! text.write(to: file, atomically: true, encoding: .utf8)
    return file
  }

  if let flags = options.guardFlags {
    // One file for all guarded chains, as a target would compile them.
    let guarded = pipelines.filter(\.guarded)
    let text =
      (guarded.first?.imports ?? []).joined(separator: "\n") + "\n\n"
      + guarded.map(\.text).joined(separator: "\n\n")
    let file = write("Chains", text)
    func check() -> (result: TypeCheckResult, problems: [String]) {
      let result = typeCheck(file, includes: includes, flags: flags, scratch: scratch)
      let problems = result.output.components(separatedBy: "\n").filter {
        $0.contains("warning:") || $0.contains("error:")
      }
      return (result, problems)
    }
    print(
      "type-checking guard: \(guarded.count) chains of Benchmarks/TypeCheck/Chains.swift, flags \(flags.joined(separator: " "))"
    )
    var (result, problems) = check()
    if result.status == 0, !problems.isEmpty {
      // A time over the limit must hold twice in a row: on a fresh clone, once, the first chain
      // took 154 ms where it takes a few, the module's loading charged to its body.
      print("over the limit once, checked again:\n" + problems.joined(separator: "\n"))
      (result, problems) = check()
    }
    if result.status != 0 || !problems.isEmpty {
      print(problems.isEmpty ? result.output : problems.joined(separator: "\n"))
      print("error: a guarded chain passed the limit (or did not compile); see Benchmarks/README.md")
      return 1
    }
    print("no warning (\(String(format: "%.0f", result.milliseconds)) ms in all)")
    return 0
  }

  let rounds = options.quick ? 1 : 3
  var samples: [String: (flow: [Double], baseline: [Double], flowScopes: Int, baselineScopes: Int)] = [:]
  print("type-checking \(pipelines.count) pipelines and their baselines, \(rounds) run(s) each; load \(loadAverage())")
  for pipeline in pipelines {
    let flowFile = write(pipeline.name, pipeline.imports.joined(separator: "\n") + "\n\n" + pipeline.text)
    let baselineFile = write(
      pipeline.name + "Baseline",
      (pipeline.imports + ["import TypeCheckStandIns"]).joined(separator: "\n") + "\n\n" + baselineText(pipeline))
    var entry = (flow: [Double](), baseline: [Double](), flowScopes: 0, baselineScopes: 0)
    for _ in 0..<rounds {
      for (file, isBaseline) in [(flowFile, false), (baselineFile, true)] {
        let result = typeCheck(file, includes: includes, scratch: scratch)
        guard result.status == 0 else {
          print(result.output)
          print("flow-benchmarks: the \(isBaseline ? "baseline of " : "")pipeline \(pipeline.name) does not type-check")
          return 1
        }
        if isBaseline {
          entry.baseline.append(result.milliseconds)
          entry.baselineScopes = result.scopes
        } else {
          entry.flow.append(result.milliseconds)
          entry.flowScopes = result.scopes
        }
      }
    }
    samples[pipeline.name] = entry
  }

  func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
  func pad(_ text: String, _ width: Int) -> String {
    text.padding(toLength: max(width, text.count), withPad: " ", startingAt: 0)
  }
  print(
    pad("pipeline", 22) + pad("steps", 7) + pad("AsyncFlow ms", 14) + pad("baseline ms", 13) + pad("ratio", 8)
      + pad("targets", 32) + "solver scopes (baseline, ratio)")
  var json: [String: Double] = [:]
  for pipeline in pipelines {
    let entry = samples[pipeline.name]!
    let flow = median(entry.flow)
    let baseline = median(entry.baseline)
    let ratio = flow / max(baseline, 0.01)
    var targets = String(format: "≤ 1.3 %@", ratio <= 1.3 ? "met" : "missed")
    if pipeline.guarded || pipeline.name.hasPrefix("guide") {
      targets += String(format: ", < 150 ms %@", flow < 150 ? "met" : "missed")
    }
    let scopeRatio = Double(entry.flowScopes) / Double(max(entry.baselineScopes, 1))
    print(
      pad("T." + pipeline.name, 22) + pad("\(pipeline.steps)", 7) + pad(String(format: "%.1f", flow), 14)
        + pad(String(format: "%.1f", baseline), 13) + pad(String(format: "%.2f", ratio), 8) + pad(targets, 32)
        + "\(entry.flowScopes) (\(entry.baselineScopes), \(String(format: "%.2f", scopeRatio)))")
    json["typecheck.\(pipeline.name).ms"] = flow
    json["typecheck.\(pipeline.name).baselineMs"] = baseline
    json["typecheck.\(pipeline.name).ratio"] = ratio
    json["typecheck.\(pipeline.name).scopes"] = Double(entry.flowScopes)
    json["typecheck.\(pipeline.name).baselineScopes"] = Double(entry.baselineScopes)
  }
  print("load at the end \(loadAverage())")
  if let path = options.jsonPath { writeJSON([], extra: json, to: path) }
  return 0
}
