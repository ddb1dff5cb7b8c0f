import AsyncFlow

// A placeholder until the benchmark workloads land.
let sum = await Flow.sequence(0..<1000).map { $0 * 2 }.filter { $0 % 3 != 0 }.reduce(0, +)
print("flow-benchmarks: no workloads yet (checksum \(sum))")
