// swift-tools-version:6.2
// The libFuzzer executable, in a package of its own so that a normal build never
// compiles it; `make fuzz` builds it with -sanitize=fuzzer into .build-fuzz/ and runs it
// (see the Makefile).
import PackageDescription

let package = Package(
    name: "LookoutFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Lookout", path: "..")
    ],
    targets: [
        // Declares libFuzzer's LLVMFuzzerRunDriver for Swift, and sets AddressSanitizer's defaults.
        .target(name: "CLibFuzzer"),
        .executableTarget(
            name: "lookout-fuzz",
            dependencies: ["CLibFuzzer", .product(name: "LookoutFuzzTargets", package: "Lookout")],
            // gold fails on libFuzzer's main() beside SwiftPM's (an internal error while
            // reporting it); lld, which ships with the toolchain, lets SwiftPM's win.
            linkerSettings: [.unsafeFlags(["-use-ld=lld"])]
        ),
    ]
)
