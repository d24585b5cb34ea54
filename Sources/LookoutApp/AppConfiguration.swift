import Logging
import LookoutHTTP

/// Everything the service needs to start, gathered from flags and environment by the
/// executable (or written directly by tests).
public struct AppConfiguration: Sendable {
    public var http: HTTPServerConfiguration
    /// Where state lives (the signing key, and later the database). Created if missing.
    public var dataDirectory: String
    /// The JSON data file to load; nil loads the demo data shipped with Lookout.
    public var dataFile: String?
    /// How long an access token stays valid.
    public var tokenLifetime: Duration
    /// The token signing key as base64 (at least 32 bytes); nil keeps one in the data directory.
    public var signingKey: String?
    public var logLevel: Logger.Level
    /// The longest long-poll a client may ask for with `?wait=`, in seconds.
    public var maxWaitSeconds: Double

    public init(
        http: HTTPServerConfiguration = HTTPServerConfiguration(),
        dataDirectory: String = "./data",
        dataFile: String? = nil,
        tokenLifetime: Duration = .seconds(3600),
        signingKey: String? = nil,
        logLevel: Logger.Level = .info,
        maxWaitSeconds: Double = 300
    ) {
        self.http = http
        self.dataDirectory = dataDirectory
        self.dataFile = dataFile
        self.tokenLifetime = tokenLifetime
        self.signingKey = signingKey
        self.logLevel = logLevel
        self.maxWaitSeconds = maxWaitSeconds
    }
}
