import CoreMetrics
import Foundation
import LookoutJSON
import LookoutTestSupport
import Synchronization
import Testing

@testable import LookoutApp

@Suite("Operations: /healthz, /readyz, /metrics", .timeLimit(.minutes(2)))
struct OperationsTests {
    static let json = ("Content-Type", "application/json")

    @Test("healthz answers ok, with no checks")
    func health() async throws {
        try await withApp { app in
            let response = try await app.request("GET", "/healthz")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json; charset=utf-8")
            #expect(response.text == #"{"status":"ok"}"#)
        }
    }

    @Test("readyz is ready with the store loaded and the data directory writable, and leaves no file behind")
    func ready() async throws {
        try await withApp { app in
            let response = try await app.request("GET", "/readyz")
            #expect(response.status == 200)
            #expect(
                response.text == #"{"status":"ready","checks":{"store":"ok","storage":"ok","database":"ok"}}"#)
            let left = try FileManager.default.contentsOfDirectory(atPath: app.dataDirectory)
            #expect(
                Set(left) == [
                    "signing-keys.json", "lookout.sqlite", "lookout.sqlite-wal", "lookout.sqlite-shm",
                    "lookout.sqlite.lock",
                ])
        }
    }

    @Test("readyz is 503 while the data directory is a file, names the reason, and recovers")
    func notReadyWhenDataDirectoryIsAFile() async throws {
        try await withApp { app in
            #expect(try await app.request("GET", "/readyz").status == 200)
            let directory = app.dataDirectory
            let saved = directory + ".saved"
            try FileManager.default.moveItem(atPath: directory, toPath: saved)
            defer { try? FileManager.default.removeItem(atPath: saved) }
            #expect(FileManager.default.createFile(atPath: directory, contents: Data("x".utf8)))

            // The result is cached for a second: wait for the check to run again.
            let failing = try await readyz(app, until: 503)
            #expect(failing.status == 503)
            let body = try failing.json
            #expect(body["status"] == "not_ready")
            #expect(body["checks"]?["store"] == "ok")
            #expect(
                body["checks"]?["storage"] == .string("data directory \(directory) is not writable: Not a directory"))

            try FileManager.default.removeItem(atPath: directory)
            try FileManager.default.moveItem(atPath: saved, toPath: directory)
            #expect(try await readyz(app, until: 200).status == 200)
        }
    }

    @Test(
        "readyz is 503 while the data directory is read-only (unless running as root, where chmod cannot stop writes)")
    func notReadyWhenDataDirectoryIsReadOnly() async throws {
        try await withApp { app in
            let directory = app.dataDirectory
            #expect(chmod(directory, 0o500) == 0)
            defer { chmod(directory, 0o700) }
            guard geteuid() != 0 else {
                // Root writes anyway; the file test above covers a failing directory then.
                #expect(try await app.request("GET", "/readyz").status == 200)
                return
            }
            let failing = try await readyz(app, until: 503)
            #expect(
                try failing.json["checks"]?["storage"]
                    == .string("data directory \(directory) is not writable: Permission denied"))
        }
    }

    @Test("metrics: requests counted by method, route pattern and status; unmatched paths as one route")
    func requestCounters() async throws {
        try await withApp { app in
            let before = try await scrape(app)
            for _ in 0..<3 {
                #expect(try await app.request("GET", "/v1/galleries").status == 200)
            }
            #expect(try await app.request("GET", "/v1/galleries/9999").status == 404)
            #expect(try await app.request("GET", "/v1/pickup_feeds/1").status == 200)
            #expect(try await app.request("GET", "/v1/info_feed?page=1").status == 200)
            #expect(try await app.request("GET", "/v1/no/such/path").status == 404)
            #expect(try await app.request("GET", "/elsewhere-\(UUID())").status == 404)
            #expect(try await app.request("DELETE", "/v1/galleries").status == 405)
            #expect(try await app.request("BREW", "/v1/galleries").status == 405)
            let after = try await scrape(app)

            func requests(_ method: String, _ route: String, _ status: String) -> Double {
                after.delta(
                    from: before, "lookout_http_requests_total", ["method": method, "route": route, "status": status])
            }
            #expect(requests("GET", "/v1/{collection}", "200") == 4, "info_feed is a declared collection")
            #expect(requests("GET", "/v1/{collection}/{id}", "404") == 1)
            #expect(requests("GET", "/v1/{collection}/{id}", "200") == 1)
            #expect(requests("GET", "unmatched", "404") == 2)
            #expect(requests("DELETE", "unmatched", "405") == 1)
            #expect(requests("other", "unmatched", "405") == 1)
            // The scrape before this one, counted once it was answered.
            #expect(requests("GET", "/metrics", "200") == 1)
            let routes = Set(after.samples.keys.compactMap { $0.labels["route"] })
            #expect(routes.allSatisfy { $0 == "unmatched" || $0.hasPrefix("/") })
            #expect(!routes.contains { $0.contains("galleries") || $0.contains("elsewhere") })

            let count = after.delta(
                from: before, "lookout_http_request_duration_seconds_count", ["route": "/v1/{collection}"])
            #expect(count == 4)
            let infinite = after.delta(
                from: before, "lookout_http_request_duration_seconds_bucket",
                ["route": "/v1/{collection}", "le": "+Inf"])
            #expect(infinite == 4)
        }
    }

    @Test("metrics are served as Prometheus text, with HELP and TYPE for each family")
    func exposition() async throws {
        try await withApp { app in
            // The request counter of a (method, route, status) is made by its first request.
            #expect(try await app.request("GET", "/healthz").status == 200)
            let response = try await app.request("GET", "/metrics")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
            for (name, type) in [
                ("lookout_http_requests_total", "counter"), ("lookout_http_request_duration_seconds", "histogram"),
                ("lookout_held_sessions", "gauge"), ("lookout_wakes_total", "counter"),
                ("lookout_store_revision", "gauge"), ("lookout_storage_errors_total", "counter"),
                ("lookout_commits_total", "counter"), ("lookout_checkpoints_total", "counter"),
            ] {
                #expect(response.text.contains("# TYPE \(name) \(type)\n"), "\(name)")
                #expect(response.text.contains("# HELP \(name) "), "\(name)")
            }
            let scrape = try Scrape(response.text)
            let bounds = scrape.samples.keys
                .filter {
                    $0.name == "lookout_http_request_duration_seconds_bucket" && $0.labels["route"] == "/healthz"
                }
                .compactMap { $0.labels["le"] }
            #expect(Set(bounds).isSuperset(of: ["0.0001", "0.001", "1.0", "10.0", "+Inf"]))
        }
    }

    @Test("a held long-poll shows in held_sessions; the write that wakes it counts a wake and a revision")
    func heldWakesAndRevision() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let before = try await scrape(app)
            #expect(before.value("lookout_held_sessions") == 0)
            let cursor = try #require(try await app.request("GET", "/v1/galleries/3").header("ETag"))
            async let held = app.request(
                "GET", "/v1/galleries/3?wait=30", headers: [Self.json, ("If-None-Match", cursor)])
            try await app.waitUntilHeld(1)
            let holding = try await scrape(app)
            #expect(holding.value("lookout_held_sessions") == 1)
            #expect(holding.delta(from: before, "lookout_wakes_total") == 0)

            // A write nobody waits for moves the revision and wakes no one.
            let elsewhere = try await app.request(
                "PATCH", "/v1/galleries/4", headers: editor, body: #"{"title":"elsewhere"}"#)
            #expect(elsewhere.status == 200)
            let unwoken = try await scrape(app)
            #expect(unwoken.delta(from: holding, "lookout_store_revision") == 1)
            #expect(unwoken.delta(from: holding, "lookout_wakes_total") == 0)
            #expect(unwoken.value("lookout_held_sessions") == 1)

            let write = try await app.request("PATCH", "/v1/galleries/3", headers: editor, body: #"{"title":"woken"}"#)
            #expect(write.status == 200)
            #expect(try await held.status == 200)
            // The same value again changes nothing: no revision.
            let same = try await app.request("PATCH", "/v1/galleries/3", headers: editor, body: #"{"title":"woken"}"#)
            #expect(same.status == 200)
            let after = try await scrape(app)
            #expect(after.delta(from: unwoken, "lookout_wakes_total") == 1)
            #expect(after.delta(from: unwoken, "lookout_store_revision") == 1)
            #expect(after.value("lookout_held_sessions") == 0)
            let tag = try #require(write.header("ETag"))
            let revision = tag.split(separator: "-").last.map { $0.filter { $0.isNumber } }
            #expect(after.value("lookout_store_revision") == revision.flatMap { Double($0) })
        }
    }

    @Test("a held long-poll is timed until it is answered")
    func heldPollDuration() async throws {
        try await withApp { app in
            let tag = try #require(try await app.request("GET", "/v1/galleries").header("ETag"))
            let before = try await scrape(app)
            let since = tag.replacingOccurrences(of: "\"", with: "")
            #expect(try await app.request("GET", "/v1/galleries?wait=1&since=\(since)").status == 304)
            let after = try await scrape(app)
            let route = ["route": "/v1/{collection}"]
            #expect(after.delta(from: before, "lookout_http_request_duration_seconds_count", route) == 1)
            #expect(after.delta(from: before, "lookout_http_request_duration_seconds_sum", route) >= 0.95)
            var fast = route
            fast["le"] = "0.5"
            #expect(after.delta(from: before, "lookout_http_request_duration_seconds_bucket", fast) == 0)
            #expect(
                after.delta(
                    from: before, "lookout_http_requests_total",
                    ["method": "GET", "route": "/v1/{collection}", "status": "304"]) == 1)
        }
    }

    @Test("storage errors are counted when recorded (nothing records them before persistence)")
    func storageErrors() async throws {
        try await withApp { app in
            let before = try await scrape(app)
            #expect(before.value("lookout_storage_errors_total") == 0)
            app.application.metrics.recordStorageError()
            app.application.metrics.recordStorageError()
            #expect(try await scrape(app).value("lookout_storage_errors_total") == 2)
        }
    }

    @Test("each application has its own registry; swift-metrics instruments made with its factory land in it")
    func registryPerApplication() async throws {
        try await withApp { first in
            try await withApp { second in
                let counter = CoreMetrics.Counter(
                    label: "lookout_test_events_total", dimensions: [("kind", "probe")],
                    factory: first.application.metrics.factory)
                counter.increment(by: 2)
                #expect(try await scrape(first).value("lookout_test_events_total", ["kind": "probe"]) == 2)
                #expect(try await scrape(second).value("lookout_test_events_total", ["kind": "probe"]) == nil)
                _ = try await second.request("GET", "/v1/galleries")
                let firstCount = try await scrape(first).value(
                    "lookout_http_requests_total", ["method": "GET", "route": "/v1/{collection}", "status": "200"])
                #expect(firstCount == nil)
            }
        }
    }

    /// `GET /metrics`, parsed.
    func scrape(_ app: LiveApp) async throws -> Scrape {
        let response = try await app.request("GET", "/metrics")
        try #require(response.status == 200)
        return try Scrape(response.text)
    }

    /// `GET /readyz` until it answers `status`, for up to 5 s (the storage check's
    /// result is cached for a second).
    func readyz(_ app: LiveApp, until status: Int) async throws -> TestHTTPResponse {
        var response = try await app.request("GET", "/readyz")
        for _ in 0..<100 where response.status != status {
            try await Task.sleep(for: .milliseconds(50))
            response = try await app.request("GET", "/readyz")
        }
        return response
    }
}

@Suite("Readiness check cache")
struct ReadinessCacheTests {
    @Test("a cached check runs at most once per interval and keeps its last result in between")
    func cachedForAnInterval() {
        let start = ContinuousClock.now
        let offset = Mutex(Duration.zero)
        let runs = Mutex(0)
        let answer = Mutex(ReadinessCheck.Status.ok)
        let check = ReadinessCheck(name: "probe") {
            runs.withLock { $0 += 1 }
            return answer.withLock { $0 }
        }.cached(for: .seconds(1), now: { start + offset.withLock { $0 } })

        #expect(check.name == "probe")
        #expect(check.run() == .ok)
        answer.withLock { $0 = .failing("down") }
        offset.withLock { $0 = .milliseconds(999) }
        #expect(check.run() == .ok)
        #expect(runs.withLock { $0 } == 1)
        offset.withLock { $0 = .seconds(1) }
        #expect(check.run() == .failing("down"))
        #expect(check.run() == .failing("down"))
        #expect(runs.withLock { $0 } == 2)
    }

    @Test("the storage check fails with the reason for a missing directory and leaves no file when it passes")
    func storageCheck() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-ready-\(UUID())").path
        let check = ReadinessCheck.storage(dataDirectory: directory)
        #expect(check.name == "storage")
        #expect(check.run() == .failing("data directory \(directory) is not writable: No such file or directory"))
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(check.run() == .ok)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).isEmpty)
    }
}

/// One scrape of `/metrics`: every sample by name and labels.
struct Scrape {
    struct Key: Hashable {
        let name: String
        let labels: [String: String]
    }

    struct ParseError: Error, CustomStringConvertible {
        let line: String
        var description: String { "cannot parse metrics line: \(line)" }
    }

    private(set) var samples: [Key: Double] = [:]

    /// Parses the text format: `# …` comments, and `name{label="value",…} value` lines
    /// (label values here need no unescaping).
    init(_ text: String) throws {
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                throw ParseError(line: String(line))
            }
            let series = line[..<space]
            var labels: [String: String] = [:]
            let name: Substring
            if let brace = series.firstIndex(of: "{") {
                name = series[..<brace]
                guard series.last == "}" else { throw ParseError(line: String(line)) }
                let inner = series[series.index(after: brace)..<series.index(before: series.endIndex)]
                for pair in inner.split(separator: "\",") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2, parts[1].hasPrefix("\"") else { throw ParseError(line: String(line)) }
                    labels[String(parts[0])] = String(parts[1].dropFirst().trimmingSuffix("\""))
                }
            } else {
                name = series
            }
            let key = Key(name: String(name), labels: labels)
            guard samples.updateValue(value, forKey: key) == nil else { throw ParseError(line: String(line)) }
        }
    }

    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples[Key(name: name, labels: labels)]
    }

    /// How much a sample grew since `earlier` (a sample not yet there counts as 0).
    func delta(from earlier: Scrape, _ name: String, _ labels: [String: String] = [:]) -> Double {
        (value(name, labels) ?? 0) - (earlier.value(name, labels) ?? 0)
    }
}

extension Substring {
    fileprivate func trimmingSuffix(_ suffix: Character) -> Substring {
        last == suffix ? dropLast() : self
    }
}
