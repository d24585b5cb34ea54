import GRDB
import LookoutJSON
import LookoutStore
import Synchronization

#if canImport(Foundation)
    import Foundation
#endif

/// The embedded default: one SQLite database file in the data directory, in WAL mode with
/// `synchronous = FULL`, so a recorded write has reached the disk before it returns and
/// a `kill -9` (or a power cut) loses nothing acknowledged.
///
/// Opening checks the file before anything writes to it: a file that is not a Lookout
/// database, or is damaged, is refused and left untouched.
public final class SQLitePersistence: Persistence {
    /// `PRAGMA application_id`: marks the file as Lookout's ("LKOT").
    static let applicationID: Int32 = 0x4C4B_4F54
    static let schemaVersion = 2

    public let path: String
    private let pool: DatabasePool
    /// Checkpoints the log off the committing thread (``Checkpointer``).
    let checkpointer: Checkpointer
    /// The last revision recorded, as this connection last knew it; nil when it must be
    /// read from the rows again (``RecordedRevision``).
    private let recorded = Mutex<RecordedRevision?>(nil)
    /// The lock that makes this connection the file's only writer of revisions, if it
    /// holds one (``init(path:maxBytes:lock:)``).
    private let lock: ServingLock?
    /// How many times a commit read the stored revision in SQL, not from ``recorded``.
    let revisionReads = Atomic<Int>(0)
    /// `PRAGMA synchronous = FULL`: in WAL mode, the log is synced at every commit.
    static let full = 2

    /// Opens (or creates) the database at `path`.
    /// - Parameters:
    ///   - maxBytes: a size limit; writes past it fail as ``PersistenceError/full(_:)``.
    ///   - lock: the file's ``ServingLock``, when the caller holds it (a server, an
    ///     import). No other connection records revisions then: of the commands that
    ///     work beside a server, only `lookout user` writes, and it writes users, which
    ///     moves `PRAGMA data_version` but records no revision. So while the lock is held
    ///     a commit trusts the revision this connection recorded last and does not read
    ///     `data_version`, and a `lookout user` command no longer makes the server's next
    ///     commit read the stored revision in SQL: that took ~50 ms with 100,000
    ///     one-field documents (Benchmarks/README.md, stop 49), and writes waited behind it.
    /// - Throws: ``PersistenceError/corrupt(_:)`` for a file that is not a Lookout
    ///   database or is damaged, ``PersistenceError/unavailable(_:)`` when it cannot be opened.
    public convenience init(path: String, maxBytes: Int? = nil, lock: ServingLock? = nil) throws(PersistenceError) {
        try self.init(path: path, maxBytes: maxBytes, lock: lock, checkpointFrames: (1000, 10_000))
    }

    /// As ``init(path:maxBytes:lock:)``, with the log's frames at which a checkpoint is
    /// asked for, and at which the commit runs one itself (``Checkpointer``).
    init(
        path: String, maxBytes: Int? = nil, lock: ServingLock? = nil, checkpointFrames: (request: Int32, inline: Int32)
    ) throws(PersistenceError) {
        self.path = path
        self.lock = lock
        if FileManager.default.fileExists(atPath: path) {
            try Self.checkExisting(path)
        } else {
            try Self.createPrivate(path)
        }
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            if let maxBytes {
                let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
                try db.execute(sql: "PRAGMA max_page_count = \(max(1, maxBytes / pageSize))")
            }
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            // On the writer, after the pool is made: GRDB's `DatabasePool` sets
            // `synchronous = NORMAL` on its writer after `prepareDatabase`, and in WAL mode
            // NORMAL syncs the log only at checkpoints, so a commit acknowledged since the
            // last one would be lost to a power cut (Benchmarks/README.md, stop 43).
            try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            try pool.write { db in try Self.migrate(db) }
            checkpointer = try Checkpointer(
                path: path, requestFrames: checkpointFrames.request, inlineFrames: checkpointFrames.inline)
            pool.writeWithoutTransaction { [checkpointer] db in checkpointer.install(on: db) }
        } catch {
            throw Self.classify(error, opening: true)
        }
        guard (try? synchronous) == Self.full else {
            throw .unavailable("\(path): SQLite did not take synchronous = FULL, so commits would not be durable")
        }
        // A database made by an earlier Lookout may be readable by others; it holds the
        // users' password hashes. SQLite gives its -wal and -shm files the database's mode.
        for file in [path, path + "-wal", path + "-shm"] { Self.makePrivate(file) }
    }

    deinit {
        // The hook holds the checkpointer unretained.
        pool.writeWithoutTransaction { [checkpointer] db in checkpointer.uninstall(from: db) }
    }

    /// Creates an empty file at `path` that only its owner may read or write (0600): the
    /// database holds password hashes and refresh-token hashes.
    private static func createPrivate(_ path: String) throws(PersistenceError) {
        let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .unavailable("\(path) cannot be created: \(String(cString: strerror(errno)))")
        }
        close(descriptor)
    }

    /// Takes away group and other permissions from an existing file.
    private static func makePrivate(_ path: String) {
        var status = stat()
        guard stat(path, &status) == 0, status.st_mode & 0o077 != 0 else { return }
        _ = chmod(path, status.st_mode & 0o700)
    }

    /// Refuses, without writing to it, a file that is not a SQLite database, not
    /// Lookout's, from a newer Lookout, or that SQLite finds damaged.
    private static func checkExisting(_ path: String) throws(PersistenceError) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .unavailable("\(path) cannot be read")
        }
        let header = (try? handle.read(upToCount: 16)) ?? Data()
        try? handle.close()
        if header.isEmpty { return }  // an empty file: SQLite treats it as a new database
        guard header == Data("SQLite format 3\u{0}".utf8) else {
            throw .corrupt("\(path) is not a SQLite database")
        }
        var configuration = Configuration()
        configuration.readonly = true
        do {
            let queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.read { db in
                let id = try Int32.fetchOne(db, sql: "PRAGMA application_id") ?? 0
                let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
                guard id == applicationID || (id == 0 && version == 0) else {
                    throw PersistenceError.corrupt("\(path) is a SQLite database, but not Lookout's")
                }
                guard version <= schemaVersion else {
                    throw PersistenceError.corrupt(
                        "\(path) has schema \(version), newer than this Lookout's \(schemaVersion)")
                }
                let check = try String.fetchAll(db, sql: "PRAGMA quick_check")
                guard check == ["ok"] else {
                    throw PersistenceError.corrupt("\(path): \(check.prefix(3).joined(separator: "; "))")
                }
            }
            try queue.close()
        } catch let error as PersistenceError {
            throw error
        } catch {
            throw classify(error, opening: true)
        }
    }

    private static func migrate(_ db: Database) throws {
        let version = try Int.fetchOne(db, sql: "PRAGMA user_version") ?? 0
        if version == 0 {
            try db.execute(
                sql: """
                    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
                    CREATE TABLE collections (name TEXT PRIMARY KEY, membership_revision INTEGER NOT NULL) WITHOUT ROWID;
                    CREATE TABLE documents (
                        collection TEXT NOT NULL,
                        id INTEGER NOT NULL,
                        fields TEXT NOT NULL,
                        revisions TEXT NOT NULL,
                        created INTEGER NOT NULL,
                        field_names_revision INTEGER NOT NULL,
                        PRIMARY KEY (collection, id)
                    ) WITHOUT ROWID;
                    CREATE TABLE records (
                        kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (kind, key)
                    ) WITHOUT ROWID;
                    PRAGMA application_id = \(applicationID);
                    """)
        }
        // Schema 2 has schema 1's tables; only where the last revision is kept changed
        // (``RecordedRevision``). The number keeps a Lookout that reads the revision from
        // `meta` alone from opening a file this one wrote.
        if version < schemaVersion { try db.execute(sql: "PRAGMA user_version = \(schemaVersion)") }
    }

    public func load() throws(PersistenceError) -> StoreImage? {
        do {
            // Read before the image: a commit by another connection in between changes
            // it, and the next record looks at the rows again.
            let version = try pool.writeWithoutTransaction { db in try dataVersion(db) }
            let image = try pool.read { db in try Self.image(db) }
            recorded.withLock { $0 = image.map { RecordedRevision(revision: $0.revision, dataVersion: version) } }
            return image
        } catch {
            throw Self.classify(error)
        }
    }

    private static func image(_ db: Database) throws -> StoreImage? {
        guard let epoch = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'epoch'"),
            let revisionText = try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'revision'"),
            let revision = UInt64(revisionText)
        else { return nil }
        var collections: [CollectionImage] = []
        let rows = try Row.fetchCursor(db, sql: "SELECT name, membership_revision FROM collections ORDER BY name")
        while let row = try rows.next() {
            collections.append(
                CollectionImage(name: row[0], membershipRevision: UInt64(row[1] as Int64), documents: []))
        }
        var index: [String: Int] = [:]
        for (position, collection) in collections.enumerated() { index[collection.name] = position }
        let documents = try Row.fetchCursor(
            db,
            sql: """
                SELECT collection, id, fields, revisions, created, field_names_revision
                FROM documents ORDER BY collection, id
                """)
        while let row = try documents.next() {
            let name: String = row[0]
            guard let position = index[name] else {
                throw PersistenceError.corrupt("document \(row[1] as Int64) of unknown collection \(name)")
            }
            collections[position].documents.append(
                try Self.document(
                    id: row[1], fields: row[2], revisions: row[3], created: row[4], fieldNamesRevision: row[5]))
        }
        return StoreImage(
            epoch: epoch, revision: RecordedRevision.latest(meta: revision, collections: collections),
            collections: collections)
    }

    /// The last recorded revision as the file holds it: the largest of `meta`'s and every
    /// row's, as ``RecordedRevision/latest(meta:collections:)`` finds it in a loaded image,
    /// but in SQL, without building the image: ~190 ms for 100,000 documents of 10 fields
    /// (Benchmarks/README.md, stop 47), against ~1 s to load them. Nil without a history.
    private static func storedRevision(_ db: Database) throws -> UInt64? {
        try Int64.fetchOne(
            db,
            sql: """
                SELECT max(
                    CAST(value AS INTEGER),
                    ifnull((SELECT max(membership_revision) FROM collections), 0),
                    ifnull((SELECT max(max(created, field_names_revision)) FROM documents), 0),
                    ifnull((SELECT max(revision.value) FROM documents, json_each(documents.revisions) AS revision), 0))
                FROM meta WHERE key = 'revision'
                """
        ).map { UInt64($0) }
    }

    /// `PRAGMA data_version`, which changes when another connection commits to the file;
    /// nil while this connection holds its ``ServingLock``, when no other records revisions.
    private func dataVersion(_ db: Database) throws -> Int64? {
        if lock?.isHeld == true { return nil }
        return try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA data_version")) ?? 0
    }

    private static func document(
        id: Int64,
        fields: String,
        revisions: String,
        created: Int64,
        fieldNamesRevision: Int64
    ) throws(PersistenceError) -> DocumentImage {
        guard case .object(let object)? = try? JSONParser.parse(fields), object["id"]?.intValue == Int(id),
            case .object(let revisionObject)? = try? JSONParser.parse(revisions)
        else { throw .corrupt("document \(id) is not stored as a JSON object with its id") }
        var byField: [String: UInt64] = [:]
        for member in revisionObject {
            guard case .int(let value) = member.value, value >= 0 else {
                throw .corrupt("document \(id) has a bad revision for \(member.key)")
            }
            byField[member.key] = UInt64(value)
        }
        return DocumentImage(
            fields: object, revisions: byField, created: UInt64(created), fieldNamesRevision: UInt64(fieldNamesRevision)
        )
    }

    public func create(epoch: String) throws(PersistenceError) {
        do {
            try pool.write { db in
                try db.execute(
                    sql: "INSERT INTO meta (key, value) VALUES ('epoch', ?), ('revision', '0')", arguments: [epoch])
            }
        } catch {
            throw Self.classify(error)
        }
    }

    /// Checkpoints of the log so far: run by the ``Checkpointer``'s queue beside the commits,
    /// and tried by commits because the log passed its inline limit.
    public var checkpoints: (inQueue: UInt64, byCommits: UInt64) {
        (checkpointer.background.load(ordering: .relaxed), checkpointer.inline.load(ordering: .relaxed))
    }

    /// The writing connection's `PRAGMA synchronous` (``full`` once opened).
    var synchronous: Int? {
        get throws { try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA synchronous") } }
    }

    /// Records `entries` in one transaction, one fsync: a group commit.
    public func record(_ entries: [JournalEntry]) throws {
        guard let first = entries.first, let last = entries.last else { return }
        // Unknown until the commit returns: a failed one may have reached the file.
        var known = recorded.withLock { $0.take() }
        do {
            try writeTransaction { db in
                let version = try dataVersion(db)
                let stored: UInt64?
                if let known, known.dataVersion == version {
                    stored = known.revision
                } else {
                    revisionReads.add(1, ordering: .relaxed)
                    stored = try Self.storedRevision(db)
                }
                guard let stored, first.revision > stored else {
                    throw PersistenceError.failed(
                        "revision \(first.revision) does not follow the stored \(stored.map(String.init) ?? "none")")
                }
                for entry in entries {
                    try Self.write(entry, in: db)
                }
                if RecordedRevision.carried(by: entries) < last.revision {
                    try db.cachedStatement(sql: "UPDATE meta SET value = ? WHERE key = 'revision'").execute(
                        arguments: [String(last.revision)])
                }
                known = RecordedRevision(revision: last.revision, dataVersion: version)
            }
        } catch {
            throw Self.classify(error)
        }
        recorded.withLock { $0 = known }
    }

    /// Runs `body` in one immediate transaction, as GRDB's `write` does, but with its
    /// `BEGIN` and `COMMIT` prepared once: `write` parses both again at every call, which
    /// was a sixth of the writer's time in a single wake's commit (Benchmarks/README.md,
    /// stop 43). Rolled back when `body` or the commit fails.
    private func writeTransaction(_ body: (Database) throws -> Void) throws {
        try pool.writeWithoutTransaction { db in
            try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
            do {
                try body(db)
                try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
            } catch {
                if db.isInsideTransaction { try? db.cachedStatement(sql: "ROLLBACK TRANSACTION").execute() }
                throw error
            }
        }
    }

    private static func write(_ entry: JournalEntry, in db: Database) throws {
        for name in entry.memberships {
            try db.cachedStatement(
                sql: """
                    INSERT INTO collections (name, membership_revision) VALUES (?, ?)
                    ON CONFLICT (name) DO UPDATE SET membership_revision = excluded.membership_revision
                    """
            ).execute(arguments: [name, Int64(entry.revision)])
        }
        for change in entry.documents {
            if let document = change.document {
                try db.cachedStatement(
                    sql: """
                        INSERT OR REPLACE INTO documents
                        (collection, id, fields, revisions, created, field_names_revision)
                        VALUES (?, ?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [
                    change.collection, change.id, Self.text(.object(document.fields)),
                    Self.text(
                        .object(
                            JSONObject(
                                document.revisions.sorted { $0.key < $1.key }.map {
                                    ($0.key, .int(Int($0.value)))
                                }))),
                    Int64(document.created), Int64(document.fieldNamesRevision),
                ])
            } else {
                try db.cachedStatement(sql: "DELETE FROM documents WHERE collection = ? AND id = ?").execute(
                    arguments: [change.collection, change.id])
            }
        }
    }

    /// Whether SQLite stores `text` whole when it is bound: GRDB binds text as a C string,
    /// which ends at the first NUL.
    static func isBindable(_ text: String) -> Bool {
        !text.utf8.contains(0)
    }

    public func records(_ kind: String) throws(PersistenceError) -> [String: JSONValue] {
        do {
            return try pool.read { db in
                var result: [String: JSONValue] = [:]
                let rows = try Row.fetchCursor(
                    db, sql: "SELECT key, value FROM records WHERE kind = ?", arguments: [kind])
                while let row = try rows.next() {
                    let key: String = row[0]
                    guard let value = try? JSONParser.parse(row[1] as String) else {
                        throw PersistenceError.corrupt("record \(kind)/\(key) is not JSON")
                    }
                    result[key] = value
                }
                return result
            }
        } catch {
            throw Self.classify(error)
        }
    }

    public func record(_ kind: String, key: String) throws(PersistenceError) -> JSONValue? {
        // SQLite takes bound text up to its first NUL: such a key would find another's record.
        guard Self.isBindable(key) else { return nil }
        do {
            return try pool.read { db in
                guard
                    let text = try String.fetchOne(
                        db, sql: "SELECT value FROM records WHERE kind = ? AND key = ?", arguments: [kind, key])
                else { return nil }
                guard let value = try? JSONParser.parse(text) else {
                    throw PersistenceError.corrupt("record \(kind)/\(key) is not JSON")
                }
                return value
            }
        } catch {
            throw Self.classify(error)
        }
    }

    public func putRecord(_ value: JSONValue?, kind: String, key: String) throws(PersistenceError) {
        guard Self.isBindable(key) else { throw .failed("a record key cannot hold NUL") }
        do {
            try pool.write { db in
                if let value {
                    try db.execute(
                        sql: "INSERT OR REPLACE INTO records (kind, key, value) VALUES (?, ?, ?)",
                        arguments: [kind, key, Self.text(value)])
                } else {
                    try db.execute(sql: "DELETE FROM records WHERE kind = ? AND key = ?", arguments: [kind, key])
                }
            }
        } catch {
            throw Self.classify(error)
        }
    }

    public func checkWritable() throws(PersistenceError) {
        do {
            // A write that changes nothing still needs the write lock and a journal.
            try pool.write { db in try db.execute(sql: "UPDATE meta SET value = value WHERE key = 'epoch'") }
        } catch {
            throw Self.classify(error)
        }
    }

    /// Copies the database, consistent at one revision, to a new file at `destination`,
    /// while the server may go on writing (SQLite's online backup).
    public func backup(to destination: String) throws(PersistenceError) {
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw .failed("\(destination) exists; a backup never overwrites a file")
        }
        do {
            try Self.createPrivate(destination)
            let target = try DatabaseQueue(path: destination)
            try pool.backup(to: target)
            try target.close()
        } catch {
            try? FileManager.default.removeItem(atPath: destination)
            throw Self.classify(error)
        }
    }

    private static func text(_ value: JSONValue) -> String {
        String(decoding: JSONWriter.encode(value), as: UTF8.self)
    }

    /// Maps SQLite's errors to what the service must do about them.
    private static func classify(_ error: any Error, opening: Bool = false) -> PersistenceError {
        if let error = error as? PersistenceError { return error }
        guard let error = error as? DatabaseError else { return .failed(String(describing: error)) }
        let message = error.message ?? error.resultCode.description
        switch error.resultCode {
        case .SQLITE_FULL: return .full(message)
        case .SQLITE_CORRUPT, .SQLITE_NOTADB: return .corrupt(message)
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_READONLY, .SQLITE_AUTH: return .unavailable(message)
        default: return opening ? .unavailable(message) : .failed(message)
        }
    }
}
