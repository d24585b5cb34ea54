import LookoutAuth
import LookoutDataFile
import LookoutJSON
import LookoutPersistence
import LookoutStore

#if canImport(Foundation)
    import Foundation
#endif

/// What `lookout export`, `import` and `backup` do to a data directory.
public enum DataCommands {
    /// The stored state as a data file (the `--data-file` format): each collection with
    /// its options as declared in `configuration.dataFile` and its documents as stored,
    /// and the users with their password hashes.
    /// - Throws: ``StartupError`` when there is no stored state or it cannot be read.
    public static func export(_ configuration: AppConfiguration) throws -> [UInt8] {
        let persistence = try openExisting(configuration)
        guard let image = try persistence.load() else {
            throw StartupError("\(configuration.databasePath) holds no state yet")
        }
        let declared = try DataFile.load(path: configuration.dataFile).collections
        var options: [String: DocumentCollection.Options] = [:]
        for collection in declared { options[collection.name] = collection.options }
        let users = try UserRecords(persistence: persistence).all()
        let file = DataFile.encode(
            collections: image.collections.map { ($0.name, options[$0.name] ?? .init(), $0.documents.map(\.fields)) },
            users: users)
        return JSONWriter.encode(file) + [UInt8(ascii: "\n")]
    }

    /// Imports the data file at `path` as a new history (a new epoch): into an empty data
    /// directory, or, with `replace`, in place of what it holds. The server must be
    /// stopped: an import is refused while one serves the database (``ServingLock``),
    /// and a server is refused while an import runs.
    /// - Returns: how many collections, documents and users were imported.
    public static func importFile(_ path: String, into configuration: AppConfiguration, replace: Bool) throws -> (
        collections: Int, documents: Int, users: Int
    ) {
        guard configuration.database == .sqlite else {
            throw StartupError(
                "import works on SQLite only; on PostgreSQL, start a server with --data-file on an empty database")
        }
        let data = try DataFile.load(path: path)
        let lock = try ServiceState.lockDatabase(configuration)
        defer { lock?.release() }
        if try holdsState(configuration) {
            guard replace else {
                throw StartupError("\(configuration.databasePath) already holds state; pass --replace to replace it")
            }
            for suffix in ["", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: configuration.databasePath + suffix)
            }
        }
        let state = try ServiceState.open(configuration, data: data, lock: lock)
        let image = state.store.image()
        return (image.collections.count, image.collections.reduce(0) { $0 + $1.documents.count }, state.users.count)
    }

    /// Copies the database to a new file at `destination` while the server may keep
    /// serving and writing; the copy is consistent at one revision.
    public static func backup(_ configuration: AppConfiguration, to destination: String) throws {
        guard let sqlite = try openExisting(configuration) as? SQLitePersistence else {
            throw StartupError("only the SQLite database can be backed up")
        }
        do {
            try sqlite.backup(to: destination)
        } catch {
            throw StartupError("backup to \(destination): \(error)")
        }
    }

    /// Whether the database exists and holds state. Its connections are closed when this
    /// returns, before anything removes its files: SQLite closing a connection later would
    /// remove the WAL file by name, which by then could be a new database's.
    private static func holdsState(_ configuration: AppConfiguration) throws -> Bool {
        guard FileManager.default.fileExists(atPath: configuration.databasePath) else { return false }
        return try openExisting(configuration).load() != nil
    }

    /// The stored database, which must exist and hold state: these commands never start
    /// a history. SQLite and PostgreSQL; process memory holds nothing to work on.
    static func openExisting(_ configuration: AppConfiguration) throws -> any Persistence {
        switch configuration.database {
        case .memory:
            throw StartupError("in-memory storage holds nothing outside a running server")
        case .sqlite:
            guard FileManager.default.fileExists(atPath: configuration.databasePath) else {
                throw StartupError("no database at \(configuration.databasePath)")
            }
            return try ServiceState.openPersistence(configuration)
        case .postgres:
            let persistence = try ServiceState.openPersistence(configuration)
            guard try persistence.load() != nil else {
                throw StartupError(
                    "\(ServiceState.describe(configuration)) holds no state yet: start a server on it first")
            }
            return persistence
        }
    }
}
