// swift-tools-version: 6.2
import PackageDescription

let package = Package(
  name: "MyService",
  // Linux needs no platforms line; this one lets the service build on a Mac with macOS 15,
  // AsyncFlow's minimum (the typed-throws `AsyncSequence` of the Swift 6 runtime).
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(path: "../AsyncFlow")  // a local checkout, next to this package
  ],
  targets: [
    .executableTarget(name: "MyService", dependencies: [.product(name: "AsyncFlow", package: "AsyncFlow")]),
    .testTarget(
      name: "MyServiceTests",
      dependencies: ["MyService", .product(name: "AsyncFlowTesting", package: "AsyncFlow")]
    ),
  ],
  swiftLanguageModes: [.v6]
)
