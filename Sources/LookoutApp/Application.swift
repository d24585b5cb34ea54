import Logging
import LookoutAuth
import LookoutDataFile
import LookoutFeeds
import LookoutHTTP
import LookoutOpenAPI
import LookoutPersistence
import LookoutStore
import LookoutTrace

#if canImport(Foundation)
    import Foundation
#endif

/// A built, not yet started Lookout: its server and everything it serves.
public final class Application: Sendable {
    private let server: HTTPServer
    private let deadlines: DeadlineTimer
    /// Stops what follows a shared database, after the server.
    private let stopFollowing: @Sendable () -> Void
    /// The SQLite database's lock, let go once the server has stopped (``shutdown(timeout:)``).
    private let databaseLock: ServingLock?
    public let logger: Logger
    /// What `GET /metrics` serves; this application's own registry.
    public let metrics: ServiceMetrics

    init(
        server: HTTPServer,
        deadlines: DeadlineTimer,
        logger: Logger,
        metrics: ServiceMetrics,
        databaseLock: ServingLock?,
        stopFollowing: @escaping @Sendable () -> Void = {}
    ) {
        self.server = server
        self.deadlines = deadlines
        self.databaseLock = databaseLock
        self.stopFollowing = stopFollowing
        self.logger = logger
        self.metrics = metrics
    }

    /// The request header fields Lookout reads; the server keeps no other.
    public static var requestHeaders: [String] { LookoutResponder.requestHeaders }

    /// The port it listens on, once started.
    public var port: Int { server.port }

    /// Requests held right now (long-polls, and logins or verifications in progress).
    public var heldRequests: Int { server.suspendedCount }
    /// Writes queued for a commit and not yet answered, with the polls they woke (0 with
    /// in-memory storage, whose writes run on the loop that read them).
    public var writesAwaited: Int { server.awaitedAnswers }
    /// Event streams open (EventSource clients).
    public var openStreams: Int { server.streamCount }

    /// Starts listening on every configured address.
    public func start() throws {
        try server.start()
    }

    /// Answers every held request, then stops. The SQLite database's lock is let go once
    /// every held request is answered: a write waiting for its commit is one of them, so
    /// none is left to commit.
    /// - Returns: false if some answers were still being sent after the timeout; the
    ///   process should exit then, which closes their connections and lets the lock go.
    @discardableResult
    public func shutdown(timeout: Duration = .seconds(10)) -> Bool {
        defer {
            deadlines.stop()
            stopFollowing()
            WakeTrace.write()
        }
        let answered = server.shutdown(timeout: timeout)
        if answered { databaseLock?.release() }
        return answered
    }
}

/// Builds the service from its configuration: loads the data file, opens the data
/// directory and its signing key, and wires the routes. Used by `main` and by the tests.
///
/// - Parameter now: the wall clock, injected so token expiry can be tested.
/// - Throws: ``StartupError`` naming what is wrong; nothing is listening then.
public func buildApplication(
    configuration: AppConfiguration,
    logger: Logger = Logger(label: "lookout"),
    now: @escaping @Sendable () -> Date = Date.init
) async throws -> Application {
    let data = try DataFile.load(path: configuration.dataFile)
    let databaseLock = try ServiceState.lockDatabase(configuration)
    // Opening storage blocks (a disk, a database server): off the task threads.
    let state = try await BlockingQueue(label: "lookout.start").run {
        try ServiceState.open(configuration, data: data, lock: databaseLock)
    }
    let store = state.store
    // Several instances on one PostgreSQL database: apply the others' commits here.
    let feed = (state.persistence as? PostgresPersistence).map { database in
        PostgresChangeFeed(store: store, database: database, logger: logger) { apply in
            SuspendedRequest.resumingTogether(apply)
        }
    }
    // Looked up at each login, so `lookout user` changes count while the server runs.
    let records = UserRecords(persistence: state.persistence)
    let users = UserDirectory(decoyCost: state.users.first?.passwordHash) { try records.user($0) }
    try ServiceState.createDataDirectory(configuration)
    let tokens = TokenService(
        keys: try signingKeys(configuration, now: now()), lifetime: configuration.tokenLifetime, now: now)
    let metrics = ServiceMetrics()
    let readiness =
        [
            ReadinessCheck.store(store),
            ReadinessCheck.storage(dataDirectory: configuration.dataDirectory).cached(for: .seconds(1)),
            ReadinessCheck.database(state.persistence).cached(for: .seconds(1)),
        ] + (feed.map { [ReadinessCheck.changes($0)] } ?? [])

    var router = Router()
    let login = PasswordLogin(users: users, throttle: LoginThrottle(now: now))
    SeedRoutes(login: login, tokens: tokens).register(in: &router)
    let sessions = RefreshSessions(
        persistence: state.persistence, tokens: tokens, lifetime: configuration.refreshTokenLifetime, now: now)
    try sessions.restore()
    TokenRoutes(login: login, tokens: tokens, sessions: sessions, users: users, now: now, logger: logger).register(
        in: &router)
    // Described and checked against the documents held at start (see APIDescription).
    let description = APIDescription(store: store, maxWaitSeconds: configuration.maxWaitSeconds)
    let shapes = Dictionary(uniqueKeysWithValues: description.collections.map { ($0.name, $0.shape) })
    CollectionRoutes(store: store, tokens: tokens, shapes: shapes).register(in: &router)
    do {
        OpenAPIRoutes(document: try description.json()).register(in: &router)
    } catch {
        throw StartupError("the OpenAPI document: \(error)")
    }
    WatchRoutes(access: ReadAccess(tokens: tokens)).register(in: &router)
    OperationsRoutes(checks: readiness, metrics: metrics).register(in: &router)
    let deadlines = DeadlineTimer(coalescing: DeadlineTimer.longPollCoalescing)
    let crossOrigin = try configuration.corsOrigins.flatMap { origins throws(StartupError) in
        try CrossOrigin.parse(origins)
    }
    let writes = WriteExecutor(store: store, placement: configuration.writePlacement)
    let responder = LookoutResponder(
        router: router, longPoll: LongPoll(store: store, maxWait: configuration.maxWaitSeconds, deadlines: deadlines),
        events: ServerSentEvents(
            store: store, deadlines: deadlines, tokens: tokens, heartbeat: configuration.eventStreamHeartbeat),
        crossOrigin: crossOrigin,
        writes: writes,
        maxBodyBytes: configuration.http.maxBodyBytes, logger: logger, metrics: metrics)
    var http = configuration.http
    http.requestHeaders = LookoutResponder.requestHeaders
    http.awaitedAnswers = writes.awaited
    let server = HTTPServer(configuration: http, responder: responder)
    // Weak: the server holds the routes, which hold the metrics.
    metrics.beforeEachScrape { [weak server] metrics in
        metrics.heldSessions.set(to: Double(server?.suspendedCount ?? 0))
    }
    let sqlite = state.persistence as? SQLitePersistence
    metrics.beforeEachScrape { metrics in
        metrics.storeRevision.set(to: Double(store.snapshot().revision))
        metrics.exportWakes(total: store.wokenCount)
        let commits = writes.commits
        metrics.exportCommits(onLoops: commits.onLoops, byWriter: commits.byWriter)
        if let sqlite {
            let checkpoints = sqlite.checkpoints
            metrics.exportCheckpoints(inQueue: checkpoints.inQueue, byCommits: checkpoints.byCommits)
        }
    }
    if let feed {
        feed.start()
        // Other instances' revocations count here within a second. A failed read is
        // tried again at the next; the feed's readiness check reports a lost database.
        let revocations = RepeatingTask(name: "lookout.revocations", every: .seconds(1)) {
            try? sessions.followRevocations()
        }
        // Started after loading and stopped after the server: a feed cannot miss a commit
        // in between, since it reads every change after the store's revision.
        return Application(
            server: server, deadlines: deadlines, logger: logger, metrics: metrics, databaseLock: databaseLock
        ) {
            revocations.stop()
            feed.stop()
        }
    }
    return Application(
        server: server, deadlines: deadlines, logger: logger, metrics: metrics, databaseLock: databaseLock)
}

/// The key given in configuration, else the data directory's key ring, made on first start.
private func signingKeys(_ configuration: AppConfiguration, now: Date) throws -> SigningKeys {
    do {
        if let given = configuration.signingKey {
            return SigningKeys(fixed: KeyRing(try SigningKey(base64: given)))
        }
        let file = KeyRingFile(directory: configuration.dataDirectory)
        return SigningKeys(file: file, ring: try file.loadOrCreate(algorithm: configuration.signingAlgorithm, now: now))
    } catch {
        if case .invalidConfiguration(let reason) = error { throw StartupError(reason) }
        throw StartupError("signing key: \(error)")
    }
}
