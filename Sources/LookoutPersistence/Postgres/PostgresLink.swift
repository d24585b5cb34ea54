import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization

/// One connection to PostgreSQL, used from blocking code: each call waits for its
/// answer on the calling thread, so it must never run on a thread of Swift's
/// cooperative pool or of NIO's event loops.
///
/// The connection is opened on first use and again after it is lost. After a failed
/// attempt the next one waits (50 ms, doubling up to `maxBackoff`); until then a call
/// fails at once as ``PersistenceError/unavailable(_:)``. One call at a time holds the
/// connection, so a transaction is never interleaved with another statement.
final class PostgresLink: Sendable {
    private struct State {
        var connection: PostgresConnection?
        var failures = 0
        var retryAt: ContinuousClock.Instant?
        var nextID = 1
    }

    private let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let maxBackoff: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    /// Runs on each new connection before anything else uses it (e.g. `LISTEN`).
    private let prepare: @Sendable (PostgresConnection) throws -> Void
    private let state = Mutex(State())

    init(
        configuration: PostgresConnection.Configuration,
        logger: Logger,
        maxBackoff: Duration = .seconds(2),
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now },
        prepare: @escaping @Sendable (PostgresConnection) throws -> Void = { _ in }
    ) {
        self.configuration = configuration
        self.logger = logger
        self.maxBackoff = maxBackoff
        self.now = now
        self.prepare = prepare
    }

    deinit {
        if let connection = state.withLock({ $0.connection }) {
            // PostgresNIO requires a connection to be closed before it is released.
            let closing: EventLoopFuture<Void> = connection.close()
            _ = try? closing.wait()
        }
    }

    /// Whether the connection is open now (it may still be lost at the next call).
    var isConnected: Bool {
        state.withLock { $0.connection.map { !$0.isClosed } ?? false }
    }

    /// Runs `body` with the open connection (opened first if needed). A failure that is
    /// not the server refusing a statement closes the connection: the next call opens a
    /// new one.
    @discardableResult
    func withConnection<Value>(
        _ body: (Session) throws -> Value
    ) throws(PersistenceError) -> Value {
        let result: Result<Value, PersistenceError> = state.withLock { state in
            let connection: PostgresConnection
            do throws(PersistenceError) {
                connection = try open(&state)
            } catch {
                return .failure(error)
            }
            do {
                return .success(try body(Session(connection: connection, logger: logger)))
            } catch let error as PersistenceError {
                if connection.isClosed { state.connection = nil }
                return .failure(error)
            } catch {
                if !Self.isStatementError(error) || connection.isClosed {
                    let closing: EventLoopFuture<Void> = connection.close()
                    _ = try? closing.wait()
                    state.connection = nil
                }
                return .failure(Self.classify(error))
            }
        }
        return try result.get()
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it throws.
    @discardableResult
    func transaction<Value>(_ body: (Session) throws -> Value) throws(PersistenceError) -> Value {
        try withConnection { session in
            try session.run("BEGIN")
            do {
                let value = try body(session)
                try session.run("COMMIT")
                return value
            } catch {
                _ = try? session.run("ROLLBACK")
                throw error
            }
        }
    }

    /// Closes the connection; the next call opens a new one.
    func close() {
        let connection = state.withLock { state in
            defer { state.connection = nil }
            return state.connection
        }
        if let connection {
            let closing: EventLoopFuture<Void> = connection.close()
            _ = try? closing.wait()
        }
    }

    private func open(_ state: inout State) throws(PersistenceError) -> PostgresConnection {
        if let connection = state.connection, !connection.isClosed { return connection }
        state.connection = nil
        if let retryAt = state.retryAt, now() < retryAt {
            throw .unavailable("PostgreSQL is unreachable; trying again shortly")
        }
        do {
            let id = state.nextID
            state.nextID += 1
            let connection = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: id,
                logger: logger
            ).wait()
            do {
                try prepare(connection)
            } catch {
                let closing: EventLoopFuture<Void> = connection.close()
                _ = try? closing.wait()
                throw error
            }
            state.connection = connection
            state.failures = 0
            state.retryAt = nil
            return connection
        } catch {
            state.failures += 1
            let backoff = min(.milliseconds(50) * (1 << min(state.failures - 1, 16)), maxBackoff)
            state.retryAt = now().advanced(by: backoff)
            throw .unavailable("cannot connect to PostgreSQL: \(Self.describe(error))")
        }
    }

    /// Whether the server refused a statement (the connection is still good).
    private static func isStatementError(_ error: any Error) -> Bool {
        (error as? PSQLError)?.code == .server
    }

    static func classify(_ error: any Error) -> PersistenceError {
        if let error = error as? PersistenceError { return error }
        guard let error = error as? PSQLError else { return .failed(describe(error)) }
        if error.code != .server { return .unavailable("PostgreSQL: \(describe(error))") }
        switch error.serverInfo?[.sqlState] ?? "" {
        case "53100": return .full(describe(error))
        case let state where state.hasPrefix("08") || state.hasPrefix("57"): return .unavailable(describe(error))
        default: return .failed(describe(error))
        }
    }

    /// The server's message, else the error's code: never the query's bound values.
    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return String(describing: error) }
        if let message = error.serverInfo?[.message] { return message }
        return error.code.description
    }
}

/// The open connection, lent to one call of ``PostgresLink/withConnection(_:)``.
struct Session {
    let connection: PostgresConnection
    let logger: Logger

    /// Runs one statement and returns its rows.
    @discardableResult
    func run(_ query: PostgresQuery) throws -> [PostgresRow] {
        try connection.query(query, logger: logger).wait().rows
    }
}
