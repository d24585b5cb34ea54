// swift-tools-version:6.2
import PackageDescription

let package = Package(
    name: "Lookout",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "lookout", targets: ["lookout"]),
        // For the fuzzing package in Fuzz/.
        .library(name: "LookoutFuzzTargets", targets: ["LookoutFuzzTargets"]),
        // For the benchmark package in Benchmarks/.
        .library(name: "LookoutStore", targets: ["LookoutStore", "LookoutJSON"]),
        .library(name: "LookoutAuth", targets: ["LookoutAuth"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        // The OpenAPI document (LookoutOpenAPI); without its default trait, whose external
        // reference loading Lookout does not need and which builds notably slower.
        .package(url: "https://github.com/mattpolzin/OpenAPIKit.git", from: "6.4.0", traits: []),
    ],
    targets: [
        // The HTTP server: the only code that includes <microhttpd.h>.
        .target(
            name: "CMicroHTTPD",
            linkerSettings: [.linkedLibrary("microhttpd")]
        ),
        // Stage timestamps for the latency budget; off unless LOOKOUT_TRACE_WAKES is set.
        .target(name: "LookoutTrace"),
        .target(
            name: "LookoutHTTP",
            dependencies: [
                "CMicroHTTPD", "LookoutTrace",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "LookoutJSON"),
        .target(name: "LookoutStore", dependencies: ["LookoutJSON", "LookoutTrace"]),
        .target(
            name: "LookoutAuth",
            dependencies: [
                "LookoutJSON",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(name: "LookoutFeeds", dependencies: ["LookoutStore", "LookoutJSON"]),
        // Reading a data file (`--data-file`, `lookout import`) from its parsed JSON.
        .target(name: "LookoutDataFile", dependencies: ["LookoutJSON", "LookoutStore", "LookoutAuth"]),
        // One property-checking harness per parser of client bytes, for the libFuzzer
        // executable in Fuzz/ and the corpus replay in the tests; no LookoutApp, so that a
        // fuzz build is quick.
        .target(
            name: "LookoutFuzzTargets",
            dependencies: [
                "LookoutJSON", "LookoutHTTP", "LookoutFeeds", "LookoutStore", "LookoutAuth", "LookoutDataFile",
            ]
        ),
        .target(
            name: "LookoutPersistence",
            dependencies: [
                "LookoutStore", "LookoutJSON",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ]
        ),
        // The OpenAPI 3.1 description of what a configured server serves; no HTTP types.
        .target(
            name: "LookoutOpenAPI",
            dependencies: [
                "LookoutJSON", "LookoutStore",
                .product(name: "OpenAPIKit", package: "OpenAPIKit"),
            ]
        ),
        .target(
            name: "LookoutApp",
            dependencies: [
                "LookoutHTTP", "LookoutJSON", "LookoutStore", "LookoutAuth", "LookoutFeeds", "LookoutPersistence",
                "LookoutTrace", "LookoutDataFile", "LookoutOpenAPI",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            resources: [.copy("Resources/demo-data.json")]
        ),
        .executableTarget(
            name: "lookout",
            dependencies: [
                "LookoutApp", "LookoutAuth",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A real HTTP/1.1 client over sockets, shared by the end-to-end tests.
        .target(name: "LookoutTestSupport"),
        .testTarget(name: "LookoutHTTPTests", dependencies: ["LookoutHTTP", "LookoutTestSupport"]),
        .testTarget(name: "LookoutJSONTests", dependencies: ["LookoutJSON", "LookoutTestSupport"]),
        .testTarget(name: "LookoutStoreTests", dependencies: ["LookoutStore", "LookoutTestSupport"]),
        .testTarget(name: "LookoutTraceTests", dependencies: ["LookoutTrace", "LookoutTestSupport"]),
        .testTarget(name: "LookoutAuthTests", dependencies: ["LookoutAuth", "LookoutTestSupport"]),
        .testTarget(name: "LookoutFeedsTests", dependencies: ["LookoutFeeds", "LookoutStore", "LookoutJSON"]),
        .testTarget(name: "LookoutFuzzTargetsTests", dependencies: ["LookoutFuzzTargets"]),
        .testTarget(
            name: "LookoutOpenAPITests", dependencies: ["LookoutOpenAPI", "LookoutStore", "LookoutJSON"]),
        .testTarget(
            name: "LookoutPersistenceTests",
            dependencies: ["LookoutPersistence", "LookoutStore", "LookoutJSON", "LookoutTestSupport"]),
        .testTarget(
            name: "LookoutAppTests",
            dependencies: [
                "LookoutApp", "LookoutAuth", "LookoutDataFile", "LookoutHTTP", "LookoutJSON", "LookoutTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)
