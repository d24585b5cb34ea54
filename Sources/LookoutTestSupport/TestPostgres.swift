import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A real PostgreSQL server for tests: its own cluster in a temporary directory, on
/// 127.0.0.1 at a free port (its socket in that directory too), trusting local users.
///
/// The binaries (`initdb`, `postgres`, `createdb`) are looked up in `LOOKOUT_PG_BIN`,
/// then `/usr/lib/postgresql/<version>/bin`, then `PATH`; a missing one is an error, so
/// a test needing PostgreSQL fails rather than being skipped. PostgreSQL refuses to run
/// as root: as root the server runs as `nobody` (through `setpriv`), owning its directory.
///
/// ``shared`` is started on first use and stopped when the test process exits; a test
/// that stops or restarts its server starts one of its own with ``init()`` and stops it.
public final class TestPostgres: Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// One server for every test that only needs a fresh database.
    public static var shared: TestPostgres {
        get throws {
            try sharedServer.withLock { server throws(Failure) in
                if let server { return server }
                let started = try TestPostgres()
                server = started
                atexit { try? TestPostgres.sharedServer.withLock { $0 }?.remove() }
                return started
            }
        }
    }
    private static let sharedServer = Mutex<TestPostgres?>(nil)

    /// A new, empty database on the shared server, as ``createDatabase(_:)`` gives, made
    /// off Swift's cooperative pool: starting the server and `createdb` block for seconds.
    public static func freshDatabase() async throws -> String {
        try await offPool { try shared.createDatabase() }
    }

    public let port: Int
    public let directory: String
    private let binaries: String
    private let process = Mutex<ChildProcess?>(nil)
    private let databases = Atomic<Int>(0)

    /// Creates a cluster and starts it.
    public init() throws(Failure) {
        binaries = try Self.findBinaries()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-pg-\(UUID())").path
        port = try Self.freePort()
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw Failure(description: "cannot create \(directory): \(error)")
        }
        try Self.giveToServerUser(directory)
        try run(
            binaries + "/initdb",
            ["-D", directory + "/data", "-U", "lookout", "--auth=trust", "-E", "UTF8", "--no-sync", "--no-locale"])
        try start()
    }

    /// A new, empty database, named `name` or else numbered, as a URL to give Lookout.
    public func createDatabase(_ name: String? = nil) throws(Failure) -> String {
        let name = name ?? "lookout_\(databases.add(1, ordering: .relaxed).newValue)"
        try run(binaries + "/createdb", ["-h", "127.0.0.1", "-p", String(port), "-U", "lookout", name])
        return url(name)
    }

    /// The URL of database `name`.
    public func url(_ name: String) -> String {
        "postgres://lookout@127.0.0.1:\(port)/\(name)"
    }

    /// Starts the server (again, after ``stop()``) and waits until it takes connections.
    public func start() throws(Failure) {
        let log = directory + "/server.log"
        FileManager.default.createFile(atPath: log, contents: nil)
        try? Self.giveToServerUser(log)
        let (executable, arguments) = Self.asServerUser(
            binaries + "/postgres",
            [
                "-D", directory + "/data", "-p", String(port), "-k", directory, "-c", "listen_addresses=127.0.0.1",
                "-c", "fsync=off", "-c", "max_connections=300", "-c", "shared_buffers=32MB",
            ])
        let process: ChildProcess
        do {
            process = try ChildProcess(executable, arguments, standardOutput: .file(log), standardError: .file(log))
        } catch {
            throw Failure(description: "cannot start postgres: \(error)")
        }
        self.process.withLock { $0 = process }
        for _ in 0..<300 {
            guard process.isRunning else { break }
            if isReady() { return }
            usleep(50_000)
        }
        let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        throw Failure(description: "postgres did not start on port \(port): \(text.suffix(2000))")
    }

    /// Stops the server (fast shutdown: sessions are cut) and waits until it has exited.
    public func stop() {
        guard let process = process.withLock({ $0.take() }) else { return }
        process.send(SIGINT)
        process.waitUntilExit()
    }

    /// Stops the server and removes its directory.
    public func remove() {
        stop()
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func run(_ executable: String, _ arguments: [String]) throws(Failure) {
        let (command, all) = Self.asServerUser(executable, arguments)
        let ending: ChildProcess.Ending
        let text: String
        do {
            (ending, text) = try ChildProcess.run(command, all)
        } catch {
            throw Failure(description: "cannot run \(executable): \(error)")
        }
        guard ending == .exited(0) else {
            throw Failure(description: "\(executable) \(arguments.joined(separator: " ")) failed: \(text)")
        }
    }

    private static var isRoot: Bool { getuid() == 0 }

    /// `executable` with `arguments`, run as `nobody` when this process is root.
    private static func asServerUser(_ executable: String, _ arguments: [String]) -> (String, [String]) {
        guard isRoot else { return (executable, arguments) }
        return ("/usr/bin/setpriv", ["--reuid=nobody", "--regid=nogroup", "--clear-groups", executable] + arguments)
    }

    private static func giveToServerUser(_ path: String) throws(Failure) {
        guard isRoot else { return }
        guard let user = getpwnam("nobody"), let group = getgrnam("nogroup") else {
            throw Failure(description: "running as root needs the user nobody and the group nogroup")
        }
        guard chown(path, user.pointee.pw_uid, group.pointee.gr_gid) == 0 else {
            throw Failure(description: "cannot give \(path) to nobody: \(String(cString: strerror(errno)))")
        }
    }

    private static func findBinaries() throws(Failure) -> String {
        var candidates: [String] = []
        if let given = ProcessInfo.processInfo.environment["LOOKOUT_PG_BIN"] { candidates.append(given) }
        let versions =
            (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql"))?
            .compactMap(Int.init).sorted(by: >) ?? []
        candidates += versions.map { "/usr/lib/postgresql/\($0)/bin" }
        candidates += (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map(String.init)
        for directory in candidates where FileManager.default.isExecutableFile(atPath: directory + "/initdb") {
            return directory
        }
        throw Failure(
            description: "PostgreSQL's initdb was not found (install postgresql, or set LOOKOUT_PG_BIN)")
    }

    /// A port nothing listens on now (the kernel's pick for port 0).
    private static func freePort() throws(Failure) -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0
                    && getsockname(socket, $0, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Whether the server takes connections (`pg_isready`).
    private func isReady() -> Bool {
        let arguments = ["-q", "-h", "127.0.0.1", "-p", String(port), "-U", "lookout"]
        return (try? ChildProcess.run(binaries + "/pg_isready", arguments))?.ending == .exited(0)
    }
}

/// Runs blocking work (sockets, child processes) on a thread of its own.
///
/// Blocking calls must stay off Swift's cooperative pool: it has one thread per core, the
/// server's deferred handlers (login, verify) run on it, and tests run in parallel on it;
/// a test blocking it for seconds stalls every other test's requests.
public func offPool<Value: Sendable>(_ work: @escaping @Sendable () throws -> Value) async throws -> Value {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(with: Result { try work() })
        }
    }
}
