// swift-tools-version: 6.2
import PackageDescription

let package = Package(
  name: "MyApp",
  // AsyncFlow's own minimums: its sequences use the typed-throws `AsyncSequence` (`Failure`,
  // `next(isolation:)`) of the Swift 6 runtime, which these OS versions ship.
  platforms: [.iOS(.v18), .macOS(.v15), .tvOS(.v18), .watchOS(.v11), .visionOS(.v2)],
  dependencies: [
    .package(path: "../AsyncFlow")  // a local checkout, next to this package
  ],
  targets: [
    // The app's code uses the library...
    .target(name: "MyApp", dependencies: [.product(name: "AsyncFlow", package: "AsyncFlow")]),
    // ...and only its tests use the test clock, gates and the explorer.
    .testTarget(
      name: "MyAppTests",
      dependencies: ["MyApp", .product(name: "AsyncFlowTesting", package: "AsyncFlow")]
    ),
  ],
  swiftLanguageModes: [.v6]
)
