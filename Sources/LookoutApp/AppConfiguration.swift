import Logging
import LookoutAuth
import LookoutHTTP

/// Everything the service needs to start, gathered from flags and environment by the
/// executable (or written directly by tests).
public struct AppConfiguration: Sendable {
    public var http: HTTPServerConfiguration
    /// Where state lives: the database and the signing key. Created if missing.
    public var dataDirectory: String
    /// The JSON data file to load; nil loads the demo data shipped with Lookout.
    public var dataFile: String?
    /// How long an access token stays valid.
    public var tokenLifetime: Duration
    /// How long a refresh token stays usable; each use gives a new one.
    public var refreshTokenLifetime: Duration
    /// The token signing key as base64 (at least 32 bytes); nil keeps one in the data directory.
    public var signingKey: String?
    /// The algorithm of the first key made in the data directory; `lookout keys rotate`
    /// changes it later.
    public var signingAlgorithm: SigningKey.Algorithm
    public var logLevel: Logger.Level
    /// The longest long-poll a client may ask for with `?wait=`, in seconds.
    public var maxWaitSeconds: Double
    /// Origins whose web pages may call the API (CORS): a comma-separated list, or `*`.
    /// Nil or empty: CORS is off.
    public var corsOrigins: String?
    /// How often an idle event stream sends a comment line, so proxies keep it open.
    public var eventStreamHeartbeat: Duration = .seconds(15)
    /// Where the store's state is kept.
    public var database: Database
    /// A size limit for the database file; writes past it fail with 503. Nil: the disk's.
    public var maxDatabaseBytes: Int?
    /// With SQLite, a write that finds no commit under way or queued is committed on the
    /// event loop that read it while commits have averaged under this lately, and on the
    /// writer thread otherwise; zero: always on the writer thread. The default is a few
    /// fsyncs of a slow SSD: on a spinning disk, a loop's other connections would wait
    /// for every write.
    public var loopCommitLimit: Duration = .milliseconds(2)
    /// The PostgreSQL database (`postgres://user:password@host:port/database`) when
    /// ``database`` is ``Database/postgres``.
    public var databaseURL: String?

    /// Where state is kept.
    public enum Database: String, Sendable, CaseIterable {
        /// `lookout.sqlite` in the data directory: the embedded default.
        case sqlite
        /// Process memory: nothing survives a restart.
        case memory
        /// A PostgreSQL database at ``AppConfiguration/databaseURL``, which several
        /// instances can share.
        case postgres
    }

    /// The SQLite database file in the data directory.
    public var databasePath: String { dataDirectory + "/lookout.sqlite" }

    public init(
        http: HTTPServerConfiguration = HTTPServerConfiguration(),
        dataDirectory: String = "./data",
        dataFile: String? = nil,
        tokenLifetime: Duration = .seconds(3600),
        refreshTokenLifetime: Duration = .seconds(30 * 86400),
        signingKey: String? = nil,
        signingAlgorithm: SigningKey.Algorithm = .hs256,
        logLevel: Logger.Level = .info,
        maxWaitSeconds: Double = 300,
        database: Database = .sqlite,
        maxDatabaseBytes: Int? = nil
    ) {
        self.database = database
        self.maxDatabaseBytes = maxDatabaseBytes
        self.http = http
        self.dataDirectory = dataDirectory
        self.dataFile = dataFile
        self.tokenLifetime = tokenLifetime
        self.refreshTokenLifetime = refreshTokenLifetime
        self.signingKey = signingKey
        self.signingAlgorithm = signingAlgorithm
        self.logLevel = logLevel
        self.maxWaitSeconds = maxWaitSeconds
    }
}
