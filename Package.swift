// swift-tools-version: 6.2
import PackageDescription

let package = Package(
  name: "AsyncFlow",
  platforms: [.macOS(.v15), .iOS(.v18), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  products: [
    .library(name: "AsyncFlow", targets: ["AsyncFlow"]),
    .library(name: "AsyncFlowTesting", targets: ["AsyncFlowTesting"]),
    .executable(name: "search-demo", targets: ["search-demo"]),
    .executable(name: "race-demo", targets: ["race-demo"]),
    .executable(name: "flow-benchmarks", targets: ["flow-benchmarks"]),
  ],
  targets: [
    .target(name: "AsyncFlow", exclude: ["Internal/README.md"]),
    .target(name: "AsyncFlowTesting", dependencies: ["AsyncFlow"], exclude: ["README.md"]),
    .executableTarget(name: "search-demo", dependencies: ["AsyncFlow", "AsyncFlowTesting", "GuideExamples"]),
    .executableTarget(name: "race-demo", dependencies: ["AsyncFlowTesting", "GuideExamples"]),
    .executableTarget(
      name: "flow-benchmarks", dependencies: ["AsyncFlow", "AsyncFlowTesting"], path: "Benchmarks/Sources"),
    .target(name: "GuideExamples", dependencies: ["AsyncFlow", "AsyncFlowTesting"], path: "Guides/Examples"),
    .testTarget(name: "AsyncFlowTests", dependencies: ["AsyncFlow", "AsyncFlowTesting"]),
    .testTarget(name: "GuideExamplesTests", dependencies: ["GuideExamples", "AsyncFlow", "AsyncFlowTesting"]),
    .testTarget(name: "AsyncFlowTestingTests", dependencies: ["AsyncFlowTesting", "AsyncFlow"]),
  ],
  swiftLanguageModes: [.v6]
)
