// swift-tools-version:6.2
// Benchmarks live in their own package, so a normal build of Lookout never compiles them.
import PackageDescription

let package = Package(
    name: "LookoutBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Lookout", path: "..")
    ],
    targets: [
        .executableTarget(
            name: "registrar-bench",
            dependencies: [.product(name: "LookoutStore", package: "Lookout")],
            swiftSettings: [.unsafeFlags(["-Ounchecked"])]
        ),
        .executableTarget(
            name: "token-bench",
            dependencies: [.product(name: "LookoutAuth", package: "Lookout")]
        ),
    ]
)
