import ArgumentParser
import LookoutApp

/// Where state lives: the options every command that touches it shares.
struct StorageOptions: ParsableArguments {
    @Option(help: "Directory for state: the database and the signing key. [env: LOOKOUT_DATA_DIR, default: ./data]")
    var dataDir: String?

    @Option(
        help:
            "JSON data file: collections with their options, and users; imported on the first start. [env: LOOKOUT_DATA_FILE, default: the bundled demo data]"
    )
    var dataFile: String?

    @Option(
        help:
            "sqlite (lookout.sqlite in the data directory), memory (nothing survives a restart), or a postgres://user:password@host:port/database URL (several instances can share it). [env: LOOKOUT_DATABASE, default: sqlite]"
    )
    var database: String?

    @Option(
        help: "Size limit of the database file in bytes; writes past it get 503. [env: LOOKOUT_MAX_DATABASE_BYTES]")
    var maxDatabaseBytes: Int?

    func configuration(_ environment: Environment) throws -> AppConfiguration {
        var configuration = AppConfiguration()
        configuration.dataDirectory = dataDir ?? environment.string("LOOKOUT_DATA_DIR") ?? configuration.dataDirectory
        configuration.dataFile = dataFile ?? environment.string("LOOKOUT_DATA_FILE")
        if let name = database ?? environment.string("LOOKOUT_DATABASE") {
            if name.hasPrefix("postgres://") || name.hasPrefix("postgresql://") {
                configuration.database = .postgres
                configuration.databaseURL = name
            } else {
                guard let kind = AppConfiguration.Database(rawValue: name), kind != .postgres else {
                    throw ValidationError("--database must be sqlite, memory or a postgres:// URL, not '\(name)'")
                }
                configuration.database = kind
            }
        }
        if let bytes = try maxDatabaseBytes ?? environment.int("LOOKOUT_MAX_DATABASE_BYTES") {
            guard bytes >= 65536 else { throw ValidationError("--max-database-bytes must be at least 65536") }
            configuration.maxDatabaseBytes = bytes
        }
        return configuration
    }
}
