import Foundation
import LookoutTestSupport
import Testing

/// The `lookout` binary as users run it: flags, environment, signals.
@Suite("The lookout executable", .timeLimit(.minutes(2)))
struct ExecutableTests {
    /// `swift build` puts the executable beside the test bundle.
    static let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("lookout")

    /// A running `lookout serve`, with its standard error collected.
    final class RunningLookout: Sendable {
        let process: ChildProcess

        init(arguments: [String], environment: [String: String] = [:]) throws {
            process = try ChildProcess(
                ExecutableTests.binary.path, arguments,
                environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
                standardError: .collect)
        }

        var text: String { process.output }

        /// Waits for the "listening" line and returns the port it names.
        func port() async throws -> Int {
            for _ in 0..<1_000 {
                if let range = text.range(of: #"port=(\d+)"#, options: .regularExpression) {
                    return Int(text[range].dropFirst("port=".count))!
                }
                guard process.isRunning else { break }
                try await Task.sleep(for: .milliseconds(10))
            }
            throw StartFailed(log: text)
        }

        /// Waits up to 30 s for the process to end and returns its exit status (128 plus the
        /// signal when a signal ended it).
        func waitForExit() async throws -> Int32 {
            for _ in 0..<3_000 where process.isRunning {
                try await Task.sleep(for: .milliseconds(10))
            }
            guard !process.isRunning else { throw StillRunning() }
            return process.waitUntilExit().status
        }

        func send(_ signal: Int32) { process.send(signal) }
    }

    struct StillRunning: Error {}

    struct StartFailed: Error {
        let log: String
    }

    @Test("--help lists the options with their environment variables")
    func help() async throws {
        let (ending, output) = try ChildProcess.run(Self.binary.path, ["serve", "--help"])
        #expect(ending == .exited(0))
        for name in [
            "--port", "LOOKOUT_PORT", "--data-dir", "LOOKOUT_DATA_DIR", "--bind", "--token-lifetime",
            "--max-body-bytes",
        ] {
            #expect(output.contains(name), "\(name)")
        }
    }

    @Test("serves with no subcommand, takes configuration from the environment, and exits 0 on SIGTERM and SIGINT")
    func signals() async throws {
        for signal in [SIGTERM, SIGINT] {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-exec-\(UUID())").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let lookout = try RunningLookout(
                arguments: ["--port", "0"], environment: ["LOOKOUT_BIND": "127.0.0.1", "LOOKOUT_DATA_DIR": directory])
            let port = try await lookout.port()
            let response = try await offPool { try TestHTTP.request(port: port, "GET", "/v1/galleries") }
            #expect(response.status == 200)
            #expect(FileManager.default.fileExists(atPath: directory + "/signing-keys.json"))
            lookout.send(signal)
            #expect(try await lookout.waitForExit() == 0)
            #expect(lookout.text.contains("stopped"))
        }
    }

    @Test("its threads are named for top -H and perf: the event loops and, on SQLite, the writer")
    func threadNames() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-exec-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lookout = try RunningLookout(arguments: ["--port", "0", "--bind", "127.0.0.1", "--data-dir", directory])
        _ = try await lookout.port()
        let tasks = "/proc/\(lookout.process.pid)/task"
        let names = try FileManager.default.contentsOfDirectory(atPath: tasks).compactMap {
            try? String(contentsOfFile: "\(tasks)/\($0)/comm", encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(names.contains("lookout-http"), "\(names)")
        #expect(names.contains("lookout-writes"), "\(names)")
        lookout.send(SIGTERM)
        #expect(try await lookout.waitForExit() == 0)
    }

    @Test("at debug level every request is logged with its request id")
    func requestLog() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-log-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lookout = try RunningLookout(
            arguments: ["--port", "0", "--bind", "127.0.0.1", "--data-dir", directory, "--log-level", "debug"])
        defer { lookout.send(SIGTERM) }
        let port = try await lookout.port()
        let response = try await offPool {
            try TestHTTP.request(port: port, "GET", "/v1/nothing", headers: [("X-Request-Id", "trace-me-42")])
        }
        #expect(response.status == 404)
        for _ in 0..<200 where !lookout.text.contains("trace-me-42") {
            try await Task.sleep(for: .milliseconds(10))
        }
        let line = lookout.text.split(separator: "\n").first { $0.contains("trace-me-42") }
        #expect(line?.contains("/v1/nothing 404") == true, "\(lookout.text)")
    }

    @Test("SIGTERM answers a held long-poll (304, same ETag) before the process exits 0")
    func sigtermAnswersHeldPolls() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-term-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lookout = try RunningLookout(arguments: ["--port", "0", "--bind", "127.0.0.1", "--data-dir", directory])
        let port = try await lookout.port()
        let tag = try #require(
            try await offPool { try TestHTTP.request(port: port, "GET", "/v1/galleries") }.header("ETag"))
        async let held = offPool {
            try TestHTTP.request(port: port, "GET", "/v1/galleries?wait=120", headers: [("If-None-Match", tag)])
        }
        // SIGTERM once the poll is held: the process says so on /metrics.
        for _ in 0..<1_000 {
            let metrics = try await offPool { try TestHTTP.request(port: port, "GET", "/metrics") }.text
            if metrics.contains("\nlookout_held_sessions 1.0") { break }
            try await Task.sleep(for: .milliseconds(10))
        }
        lookout.send(SIGTERM)
        let response = try await held
        #expect(response.status == 304)
        #expect(response.header("ETag") == tag)
        #expect(try await lookout.waitForExit() == 0)
    }

    @Test("SIGTERM sent the moment the server says it listens stops it with status 0, every time")
    func sigtermOnListening() async throws {
        // Before the signal handlers were set up ahead of the start, such a SIGTERM ended
        // the process at once, or was lost and left it running, in 14 of 20 tries.
        for attempt in 1...10 {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-up-\(UUID())").path
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let lookout = try RunningLookout(arguments: [
                "--port", "0", "--bind", "127.0.0.1", "--data-dir", directory, "--database", "memory",
            ])
            defer {
                lookout.send(SIGKILL)  // one that lost the SIGTERM (nothing once it has been reaped)
                lookout.process.waitUntilExit()
            }
            let listening = try await offPool {
                lookout.process.waitForOutput(containing: "port=", timeout: .seconds(60))
            }
            lookout.send(SIGTERM)
            #expect(listening, "\(lookout.text)")
            let status = try await lookout.waitForExit()
            #expect(status == 0, "try \(attempt): \(lookout.text)")
            if status != 0 { break }
        }
    }

    @Test("a second server on the same SQLite database is refused at start; once the first stops, one may start")
    func secondServerRefused() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-two-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let arguments = ["--port", "0", "--bind", "127.0.0.1", "--data-dir", directory]
        let first = try RunningLookout(arguments: arguments)
        let port = try await first.port()
        let second = try RunningLookout(arguments: arguments)
        #expect(try await second.waitForExit() != 0)
        #expect(second.text.contains("is in use"), "\(second.text)")
        #expect(!second.text.contains("port="))
        let response = try await offPool { try TestHTTP.request(port: port, "GET", "/v1/galleries") }
        #expect(response.status == 200)
        first.send(SIGTERM)
        #expect(try await first.waitForExit() == 0, "\(first.text)")
        let third = try RunningLookout(arguments: arguments)
        _ = try await third.port()
        third.send(SIGTERM)
        #expect(try await third.waitForExit() == 0, "\(third.text)")
    }

    @Test("a bad setting stops start-up with a message and a failure status")
    func badConfiguration() async throws {
        let busy = try RunningLookout(arguments: [
            "--port", "0", "--bind", "127.0.0.1", "--data-dir", "/proc/lookout-cannot",
        ])
        #expect(try await busy.waitForExit() != 0)
        #expect(busy.text.contains("cannot"))
        let badEnvironment = try RunningLookout(arguments: [], environment: ["LOOKOUT_PORT": "abc"])
        #expect(try await badEnvironment.waitForExit() != 0)
        #expect(badEnvironment.text.contains("LOOKOUT_PORT"))
    }
}

/// The tests' own way of running programs, which every test above and TestPostgres use.
@Suite("Child processes started by the tests", .timeLimit(.minutes(1)))
struct ChildProcessTests {
    @Test("a child's output is collected whole, and its exit status or signal reported")
    func endings() throws {
        let many = try ChildProcess.run("/bin/sh", ["-c", "seq 1 20000; echo to-stderr >&2; exit 3"])
        #expect(many.ending == .exited(3))
        let lines = many.output.split(separator: "\n")
        #expect(lines.count == 20_001)
        #expect(lines.first == "1")
        #expect(lines.contains("to-stderr"))
        let child = try ChildProcess("/bin/sleep", ["60"])
        #expect(child.isRunning)
        child.send(SIGKILL)
        #expect(child.waitUntilExit() == .signalled(SIGKILL))
        #expect(child.waitUntilExit().status == 128 + SIGKILL)
        #expect(!child.isRunning)
        #expect(throws: ChildProcess.Failure.self) { try ChildProcess("/nonexistent/program", []) }
    }

    @Test("a child gets only the three standard streams, not this process's open descriptors")
    func descriptors() throws {
        // A pipe without close-on-exec, as a test's socket may be.
        var ends: [Int32] = [-1, -1]
        #expect(pipe(&ends) == 0)
        defer { ends.forEach { close($0) } }
        let listed = try ChildProcess.run("/bin/sh", ["-c", "ls /proc/$$/fd"])
        #expect(listed.ending == .exited(0))
        let open = Set(listed.output.split(separator: "\n").compactMap { Int32($0) })
        #expect(!open.contains(ends[0]) && !open.contains(ends[1]), "\(open.sorted())")
        #expect(open.isSuperset(of: [0, 1, 2]), "\(open.sorted())")
    }
}
