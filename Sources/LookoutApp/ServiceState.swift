import LookoutAuth
import LookoutDataFile
import LookoutJSON
import LookoutPersistence
import LookoutStore

#if canImport(Foundation)
    import Foundation
#endif

/// The service's state at start: storage opened, the store restored from it (on the
/// first start, imported from the data file), and the users who can log in.
///
/// The first start imports in steps that are each safe to repeat, so a start cut short
/// (a crash, a full disk) is finished by the next one: users, then a new epoch, then the
/// collections. Later starts read everything from storage and never import over edits;
/// a collection declared in the data file but not yet stored is added then.
struct ServiceState {
    let persistence: any Persistence
    let store: Store
    let users: [User]

    /// - Parameter lock: the SQLite database's lock, which the caller holds
    ///   (``lockDatabase(_:)``).
    static func open(
        _ configuration: AppConfiguration, data: DataFile, lock: ServingLock?
    ) throws(StartupError) -> ServiceState {
        let persistence = try openPersistence(configuration, lock: lock)
        do {
            let image: StoreImage
            if let stored = try persistence.load() {
                image = stored
            } else {
                for user in data.users { try UserRecords(persistence: persistence).put(user) }
                let epoch = randomEpoch()
                try persistence.create(epoch: epoch)
                // A shared database may have been given another instance's epoch first.
                image = try persistence.load() ?? StoreImage(epoch: epoch, revision: 0, collections: [])
            }
            // In memory the store records its writes nowhere: nothing would read them back
            // (the store is the only copy, and it ends with the process), and recording them
            // kept a second copy of every document and cost each write its update.
            let journal: (any StoreJournal)? = configuration.database == .memory ? nil : persistence
            let store = try Store(restoring: image, declarations: data.collections, journal: journal)
            let users = try UserRecords(persistence: persistence).all()
            return ServiceState(persistence: persistence, store: store, users: users)
        } catch let error as StartupError {
            throw error
        } catch {
            throw StartupError("\(describe(configuration)): \(error)")
        }
    }

    /// - Parameter lock: the SQLite database's lock, when the caller holds it: the
    ///   storage then trusts that it alone records revisions (``SQLitePersistence``).
    static func openPersistence(
        _ configuration: AppConfiguration, lock: ServingLock? = nil
    ) throws(StartupError) -> any Persistence {
        switch configuration.database {
        case .memory:
            return MemoryPersistence()
        case .sqlite:
            try createDataDirectory(configuration)
            do {
                return try SQLitePersistence(
                    path: configuration.databasePath, maxBytes: configuration.maxDatabaseBytes, lock: lock)
            } catch {
                throw StartupError("\(describe(configuration)): \(error)")
            }
        case .postgres:
            guard let url = configuration.databaseURL else {
                throw StartupError("the postgres database needs a postgres:// URL")
            }
            do {
                return try PostgresPersistence(url: url)
            } catch {
                throw StartupError("\(describe(configuration)): \(error)")
            }
        }
    }

    /// Takes the SQLite database's ``ServingLock`` (nil for the other databases: memory
    /// is the process's own, and several instances may share a PostgreSQL database).
    /// Taken before the database is opened, so that a second server, or an import, is
    /// refused before it reads or removes anything.
    static func lockDatabase(_ configuration: AppConfiguration) throws(StartupError) -> ServingLock? {
        guard configuration.database == .sqlite else { return nil }
        try createDataDirectory(configuration)
        do {
            return try ServingLock(database: configuration.databasePath)
        } catch {
            throw StartupError("\(describe(configuration)): \(error)")
        }
    }

    /// Creates the data directory (mode 0700) if it is missing. It holds the database,
    /// the signing key and the readiness probe, so it exists whichever database is used.
    static func createDataDirectory(_ configuration: AppConfiguration) throws(StartupError) {
        do {
            try FileManager.default.createDirectory(
                atPath: configuration.dataDirectory, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw StartupError(
                "cannot create data directory \(configuration.dataDirectory): \(error.localizedDescription)")
        }
    }

    static func describe(_ configuration: AppConfiguration) -> String {
        switch configuration.database {
        case .memory: "in-memory storage"
        case .sqlite: "database \(configuration.databasePath)"
        case .postgres:
            "database \(configuration.databaseURL.flatMap(PostgresPersistence.location(of:)) ?? "postgres")"
        }
    }
}

/// Eight random bytes in hex: a new history's epoch.
func randomEpoch() -> String {
    var generator = SystemRandomNumberGenerator()
    let value = generator.next() as UInt64
    let hex = String(value, radix: 16)
    return String(repeating: "0", count: 16 - hex.count) + hex
}
