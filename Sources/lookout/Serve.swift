import ArgumentParser
import Dispatch
import Logging
import LookoutApp
import LookoutAuth
import LookoutHTTP
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `lookout serve`: runs the service until SIGTERM or SIGINT.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve HTTP until SIGTERM or SIGINT (the default command).")

    @Option(help: "TCP port. [env: LOOKOUT_PORT, default: 3001]")
    var port: Int?

    @Option(
        help:
            "Comma-separated numeric addresses to listen on; '::' means all. [env: LOOKOUT_BIND, default: 127.0.0.1,::1]"
    )
    var bind: String?

    @OptionGroup var storage: StorageOptions

    @Option(help: "Seconds an access token stays valid. [env: LOOKOUT_TOKEN_LIFETIME, default: 3600]")
    var tokenLifetime: Int?

    @Option(
        help:
            "Seconds a refresh token stays usable; each use gives a new one. [env: LOOKOUT_REFRESH_TOKEN_LIFETIME, default: 2592000]"
    )
    var refreshTokenLifetime: Int?

    @Option(
        help:
            "Token signing key, base64 of at least 32 bytes. [env: LOOKOUT_TOKEN_KEY, default: generated into the data directory]"
    )
    var tokenKey: String?

    @Option(
        help:
            "HS256 or EdDSA: the algorithm of the first key generated into the data directory; `lookout keys rotate` changes it later. [env: LOOKOUT_TOKEN_ALGORITHM, default: HS256]"
    )
    var tokenAlgorithm: String?

    @Option(help: "Server threads per address. [env: LOOKOUT_THREADS, default: 2]")
    var threads: Int?

    @Option(help: "Most open connections per address. [env: LOOKOUT_MAX_CONNECTIONS, default: 16000]")
    var maxConnections: Int?

    @Option(
        help:
            "Most open connections from one client address; 0 = no limit. [env: LOOKOUT_MAX_CONNECTIONS_PER_CLIENT, default: 1000]"
    )
    var maxConnectionsPerClient: Int?

    @Option(help: "Seconds before an idle connection is closed. [env: LOOKOUT_IDLE_TIMEOUT, default: 60]")
    var idleTimeout: Int?

    @Option(help: "Largest request body in bytes; larger ones get 413. [env: LOOKOUT_MAX_BODY_BYTES, default: 1048576]")
    var maxBodyBytes: Int?

    @Option(
        help:
            "Largest request head (request line and headers) in bytes; larger ones get 431. [env: LOOKOUT_MAX_HEADER_BYTES, default: 16384]"
    )
    var maxHeaderBytes: Int?

    @Option(
        help:
            "Seconds a request's head may take to arrive (then 408); a body must then average 1 KiB/s. [env: LOOKOUT_REQUEST_TIMEOUT, default: 20]"
    )
    var requestTimeout: Int?

    @Option(
        help:
            "Microseconds an idle server thread polls for the next request before it sleeps, after a short wait (up to 20 times this while a commit it awaits is under way); 0 = never, at most 1000; paused for 100 ms when other work takes its CPU. [env: LOOKOUT_SPIN_MICROSECONDS, default: 50]"
    )
    var spinMicroseconds: Int?

    @Option(
        help: "Longest long-poll a client may ask for with ?wait=, in seconds. [env: LOOKOUT_MAX_WAIT, default: 300]")
    var maxWait: Int?

    @Option(
        help:
            "trace, debug, info, notice, warning, error or critical; debug logs every request. [env: LOOKOUT_LOG_LEVEL, default: info]"
    )
    var logLevel: String?

    @Option(
        help:
            "Origins whose web pages may call the API (CORS), comma-separated, or * for any. [env: LOOKOUT_CORS_ORIGINS, default: none, CORS off]"
    )
    var corsOrigins: String?

    @Option(
        help:
            "Seconds between the comment lines an idle event stream sends so proxies keep it open. [env: LOOKOUT_SSE_HEARTBEAT, default: 15]"
    )
    var sseHeartbeat: Int?

    func run() async throws {
        let environment = Environment()
        var http = HTTPServerConfiguration()
        http.port = try port ?? environment.int("LOOKOUT_PORT") ?? http.port
        if let addresses = bind ?? environment.string("LOOKOUT_BIND") {
            http.bindAddresses = addresses.split(separator: ",").map { String($0.filter { $0 != " " }) }
        }
        http.threadCount = try threads ?? environment.int("LOOKOUT_THREADS") ?? http.threadCount
        http.maxConnections = try maxConnections ?? environment.int("LOOKOUT_MAX_CONNECTIONS") ?? http.maxConnections
        http.maxConnectionsPerClient =
            try maxConnectionsPerClient ?? environment.int("LOOKOUT_MAX_CONNECTIONS_PER_CLIENT")
            ?? http.maxConnectionsPerClient
        http.idleTimeoutSeconds = try idleTimeout ?? environment.int("LOOKOUT_IDLE_TIMEOUT") ?? http.idleTimeoutSeconds
        http.maxBodyBytes = try maxBodyBytes ?? environment.int("LOOKOUT_MAX_BODY_BYTES") ?? http.maxBodyBytes
        http.maxHeadBytes = try maxHeaderBytes ?? environment.int("LOOKOUT_MAX_HEADER_BYTES") ?? http.maxHeadBytes
        http.requestTimeoutSeconds =
            try requestTimeout ?? environment.int("LOOKOUT_REQUEST_TIMEOUT") ?? http.requestTimeoutSeconds
        http.spinMicroseconds =
            try spinMicroseconds ?? environment.int("LOOKOUT_SPIN_MICROSECONDS") ?? http.spinMicroseconds

        var configuration = try storage.configuration(environment)
        configuration.http = http
        if let seconds = try tokenLifetime ?? environment.int("LOOKOUT_TOKEN_LIFETIME") {
            guard seconds > 0 else { throw ValidationError("--token-lifetime must be positive") }
            configuration.tokenLifetime = .seconds(seconds)
        }
        if let seconds = try refreshTokenLifetime ?? environment.int("LOOKOUT_REFRESH_TOKEN_LIFETIME") {
            guard seconds > 0 else { throw ValidationError("--refresh-token-lifetime must be positive") }
            configuration.refreshTokenLifetime = .seconds(seconds)
        }
        configuration.signingKey = tokenKey ?? environment.string("LOOKOUT_TOKEN_KEY")
        if let name = tokenAlgorithm ?? environment.string("LOOKOUT_TOKEN_ALGORITHM") {
            configuration.signingAlgorithm = try SigningKey.Algorithm(argument: name)
        }
        if let seconds = try maxWait ?? environment.int("LOOKOUT_MAX_WAIT") {
            guard seconds > 0 else { throw ValidationError("--max-wait must be positive") }
            configuration.maxWaitSeconds = Double(seconds)
        }
        configuration.corsOrigins = corsOrigins ?? environment.string("LOOKOUT_CORS_ORIGINS")
        if let seconds = try sseHeartbeat ?? environment.int("LOOKOUT_SSE_HEARTBEAT") {
            guard seconds > 0 else { throw ValidationError("--sse-heartbeat must be positive") }
            configuration.eventStreamHeartbeat = .seconds(seconds)
        }
        let levelName = logLevel ?? environment.string("LOOKOUT_LOG_LEVEL") ?? "info"
        guard let level = Logger.Level(rawValue: levelName) else {
            throw ValidationError("unknown log level '\(levelName)'")
        }
        configuration.logLevel = level

        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let logger = Logger(label: "lookout")
        // Caught from here on: a signal sent while the server starts stops it once started.
        let shutdown = ShutdownSignal(catching: [SIGTERM, SIGINT])
        let application: Application
        do {
            application = try await buildApplication(configuration: configuration, logger: logger)
            try application.start()
        } catch {
            logger.critical("cannot start: \(error)")
            throw ExitCode.failure
        }
        logger.info(
            "listening",
            metadata: ["port": "\(application.port)", "addresses": "\(http.bindAddresses.joined(separator: ","))"])
        let signal = await shutdown.next()
        logger.info("shutting down", metadata: ["signal": "\(signal)"])
        if application.shutdown() {
            logger.info("stopped")
        } else {
            logger.warning("stopped with answers still unsent after 10 s; their connections close on exit")
        }
    }
}

/// Reads configuration from environment variables.
struct Environment {
    private let values: [String: String]

    init() {
        var values: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                values[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        self.values = values
    }

    func string(_ name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    func int(_ name: String) throws -> Int? {
        guard let text = string(name) else { return nil }
        guard let value = Int(text) else { throw ValidationError("\(name) must be an integer, not '\(text)'") }
        return value
    }
}

/// Catches termination signals from when it is made, and hands the first to ``next()``,
/// without a thread blocked on it.
///
/// Made before the server starts, and made only once libdispatch has registered its
/// sources. The handlers used to be set up after "listening" was logged, so a SIGTERM
/// sent on seeing that line could meet the default action and end the process at once,
/// or come after `SIG_IGN` but before libdispatch, on its own thread, had registered the
/// source, and be lost: the server kept running (Benchmarks/README.md, stop 49).
final class ShutdownSignal: @unchecked Sendable {
    // @unchecked Sendable: `sources` is written only in init; `state` is a Mutex.
    private struct State {
        var caught: Int32?
        var waiter: CheckedContinuation<Int32, Never>?
    }

    private let state = Mutex(State())
    private var sources: [any DispatchSourceSignal] = []

    init(catching signals: [Int32]) {
        let queue = DispatchQueue(label: "lookout.signals")
        let registered = DispatchSemaphore(value: 0)
        sources = signals.map { number in
            // Ignore the default action (termination) so the dispatch source sees the signal.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [weak self] in self?.caught(number) }
            source.setRegistrationHandler { registered.signal() }
            source.resume()
            return source
        }
        // A signal in between would be ignored, not caught. Bounded, so that a libdispatch
        // that never reports a registration cannot keep the server from starting.
        for _ in signals { _ = registered.wait(timeout: .now() + .seconds(5)) }
    }

    /// The first signal caught: at once if one was, else when one is.
    func next() async -> Int32 {
        await withCheckedContinuation { continuation in
            let caught = state.withLock { state in
                if state.caught == nil { state.waiter = continuation }
                return state.caught
            }
            if let caught { continuation.resume(returning: caught) }
        }
    }

    private func caught(_ number: Int32) {
        let waiter = state.withLock { state -> CheckedContinuation<Int32, Never>? in
            guard state.caught == nil else { return nil }
            state.caught = number
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: number)
    }
}
