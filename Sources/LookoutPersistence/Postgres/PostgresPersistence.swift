import Logging
import LookoutJSON
import LookoutStore
import PostgresNIO

#if canImport(Foundation)
    import Foundation
#endif

/// State in PostgreSQL, shared by every Lookout instance given the same database.
///
/// The database orders commits: `lookout_meta` holds the last revision in one row, and
/// ``record(after:_:)`` locks that row (`SELECT … FOR UPDATE`) in the transaction that
/// writes the entry, so revisions are gapless and totally ordered across instances.
/// Under the lock the store is handed the commits other instances made since its
/// revision, applies them, and plans its write on top: the entry takes the next revision.
///
/// Every commit is also kept in `lookout_changes` (revision → entry) and announced with
/// `NOTIFY lookout_changes, '<revision>'` in the same transaction; a
/// ``PostgresChangeFeed`` on each instance reads the table in revision order. The table
/// keeps the last ``retainedChanges`` commits: each commit drops the one that many before.
///
/// - Warning: every call blocks its thread until the database answers: call it from a
///   thread of its own, never from Swift's cooperative pool or an event loop.
public final class PostgresPersistence: Persistence {
    /// The notification channel commits are announced on.
    static let channel = "lookout_changes"
    /// How many missed entries a conflict or a catch-up reads at once.
    static let batch = 500

    /// Where the database is, without the password.
    public let location: String
    /// How many of the latest commits `lookout_changes` keeps for instances catching up.
    public let retainedChanges: Int
    let configuration: PostgresConnection.Configuration
    private let logger: Logger
    private let link: PostgresLink

    /// Connects to the database at `url` (`postgres://user:password@host:port/database`)
    /// and creates Lookout's tables if they are missing.
    /// - Parameter retainedChanges: how many of the latest commits to keep in
    ///   `lookout_changes`: an instance cut off for longer than that many commits cannot
    ///   catch up and must be restarted (it says so on `/readyz`).
    /// - Throws: ``PersistenceError/unavailable(_:)`` when it cannot connect, with the
    ///   reason; ``PersistenceError/failed(_:)`` for a URL that is not a PostgreSQL one.
    public init(
        url: String,
        retainedChanges: Int = 100_000,
        logger: Logger = Logger(label: "lookout.postgres")
    ) throws(PersistenceError) {
        precondition(retainedChanges > 0)
        self.retainedChanges = retainedChanges
        (configuration, location) = try Self.configuration(url)
        self.logger = logger
        link = PostgresLink(configuration: configuration, logger: logger)
        try migrate()
    }

    /// `url` without its password, to name the database in messages; nil for a URL that
    /// is not a PostgreSQL one.
    public static func location(of url: String) -> String? {
        try? configuration(url).1
    }

    /// The connection configuration and a printable location for `url`.
    static func configuration(_ url: String) throws(PersistenceError) -> (PostgresConnection.Configuration, String) {
        guard let components = URLComponents(string: url),
            components.scheme == "postgres" || components.scheme == "postgresql",
            let host = components.host, !host.isEmpty
        else { throw .failed("\(url) is not a postgres://user@host:port/database URL") }
        let database = String(components.path.drop { $0 == "/" })
        var configuration = PostgresConnection.Configuration(
            host: host, port: components.port ?? 5432, username: components.user ?? "postgres",
            password: components.password, database: database.isEmpty ? nil : database, tls: .disable)
        configuration.options.connectTimeout = .seconds(3)
        let name = components.queryItems?.first { $0.name == "application_name" }?.value ?? "lookout"
        configuration.options.additionalStartupParameters = [("application_name", name)]
        let location =
            "postgres://\(components.user.map { $0 + "@" } ?? "")\(host):\(components.port ?? 5432)/\(database)"
        return (configuration, location)
    }

    private func migrate() throws(PersistenceError) {
        try link.transaction { session in
            // Instances starting together create the tables once.
            try session.run("SELECT pg_advisory_xact_lock(76543210)")
            try session.run(
                """
                CREATE TABLE IF NOT EXISTS lookout_meta (
                    id INTEGER PRIMARY KEY CHECK (id = 1), epoch TEXT NOT NULL, revision BIGINT NOT NULL)
                """)
            try session.run(
                """
                CREATE TABLE IF NOT EXISTS lookout_collections (
                    name TEXT PRIMARY KEY, membership_revision BIGINT NOT NULL)
                """)
            try session.run(
                """
                CREATE TABLE IF NOT EXISTS lookout_documents (
                    collection TEXT NOT NULL, id BIGINT NOT NULL, fields TEXT NOT NULL, revisions TEXT NOT NULL,
                    created BIGINT NOT NULL, field_names_revision BIGINT NOT NULL, PRIMARY KEY (collection, id))
                """)
            try session.run(
                "CREATE TABLE IF NOT EXISTS lookout_changes (revision BIGINT PRIMARY KEY, entry TEXT NOT NULL)")
            try session.run(
                """
                CREATE TABLE IF NOT EXISTS lookout_records (
                    kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (kind, key))
                """)
        }
    }

    public func load() throws(PersistenceError) -> StoreImage? {
        try link.withConnection { session in
            // One snapshot of the database: the image is consistent at its revision.
            try session.run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            defer { _ = try? session.run("COMMIT") }
            guard let meta = try session.run("SELECT epoch, revision FROM lookout_meta WHERE id = 1").first else {
                return nil
            }
            let (epoch, revision) = try meta.decode((String, Int64).self)
            var collections: [CollectionImage] = []
            var index: [String: Int] = [:]
            for row in try session.run("SELECT name, membership_revision FROM lookout_collections ORDER BY name") {
                let (name, membership) = try row.decode((String, Int64).self)
                index[name] = collections.count
                collections.append(CollectionImage(name: name, membershipRevision: UInt64(membership), documents: []))
            }
            let documents = try session.run(
                """
                SELECT collection, id, fields, revisions, created, field_names_revision
                FROM lookout_documents ORDER BY collection, id
                """)
            for row in documents {
                let (name, id, fields, revisions, created, fieldNames) = try row.decode(
                    (String, Int64, String, String, Int64, Int64).self)
                guard let position = index[name] else {
                    throw PersistenceError.corrupt("document \(id) of unknown collection \(name)")
                }
                guard case .object(let object)? = try? JSONParser.parse(fields), object["id"]?.intValue == Int(id),
                    case .object(let revisionObject)? = try? JSONParser.parse(revisions)
                else { throw PersistenceError.corrupt("document \(id) is not stored as a JSON object with its id") }
                collections[position].documents.append(
                    DocumentImage(
                        fields: object, revisions: try DocumentImage.revisions(revisionObject),
                        created: UInt64(created), fieldNamesRevision: UInt64(fieldNames)))
            }
            return StoreImage(epoch: epoch, revision: UInt64(revision), collections: collections)
        }
    }

    /// Starts the history with `epoch` unless another instance has just done so; the
    /// caller loads the stored one afterwards.
    public func create(epoch: String) throws(PersistenceError) {
        try link.withConnection { session in
            try session.run(
                "INSERT INTO lookout_meta (id, epoch, revision) VALUES (1, \(epoch), 0) ON CONFLICT (id) DO NOTHING")
        }
    }

    /// Records `entry` if it follows the stored revision; refuses it, recording nothing,
    /// when another instance has written since (``Store`` writes with
    /// ``record(after:_:)``, which plans on those writes instead).
    public func record(_ entries: [JournalEntry]) throws {
        try link.transaction { session in
            try insert(entries, after: try Self.lockRevision(in: session), in: session)
        }
    }

    /// Inserts consecutive entries that must follow `stored`.
    private func insert(_ entries: [JournalEntry], after stored: UInt64, in session: Session) throws {
        var previous = stored
        for entry in entries {
            guard entry.revision == previous + 1 else {
                throw PersistenceError.failed("revision \(entry.revision) does not follow the stored \(previous)")
            }
            try insert(entry, in: session)
            previous = entry.revision
        }
    }

    /// Locks the revision row, hands `write` every entry committed after `revision`, and
    /// records the entries it returns, all in one transaction: instances' writes queue on
    /// the row lock and each is planned on the state the one before left.
    public func record(after revision: UInt64, _ write: ([JournalEntry]) -> [JournalEntry]) throws {
        try link.transaction { session in
            let stored = try Self.lockRevision(in: session)
            var committed: [JournalEntry] = []
            var last = revision
            while last < stored {
                let batch = try Self.changes(after: last, in: session)
                guard let end = batch.last?.revision else { break }
                committed += batch
                last = end
            }
            try insert(write(committed), after: stored, in: session)
        }
    }

    /// The stored revision, with its row locked until the transaction ends.
    private static func lockRevision(in session: Session) throws -> UInt64 {
        guard let row = try session.run("SELECT revision FROM lookout_meta WHERE id = 1 FOR UPDATE").first else {
            throw PersistenceError.failed("no history was created")
        }
        return UInt64(try row.decode(Int64.self))
    }

    /// Writes `entry`'s changes, the entry itself and the new revision, drops the oldest
    /// retained change, and announces the commit.
    ///
    /// Each row written is one data-modifying `WITH` part, and up to 64 parts go in one
    /// statement, so a write of one document is one round trip to the server instead of
    /// six (the row lock is held for less time, and every instance's writes queue on it).
    private func insert(_ entry: JournalEntry, in session: Session) throws {
        let revision = Int64(entry.revision)
        var parts: [(inout PostgresBindings) -> String] = []
        for name in entry.memberships {
            parts.append { binds in
                """
                INSERT INTO lookout_collections (name, membership_revision) VALUES (\(binds.add(name)), \(revision))
                ON CONFLICT (name) DO UPDATE SET membership_revision = excluded.membership_revision
                """
            }
        }
        for change in entry.documents {
            let id = Int64(change.id)
            guard let document = change.document else {
                parts.append { binds in
                    "DELETE FROM lookout_documents WHERE collection = \(binds.add(change.collection)) AND id = \(id)"
                }
                continue
            }
            let fields = Self.text(.object(document.fields))
            let revisions = Self.text(.object(DocumentImage.json(document.revisions)))
            parts.append { binds in
                """
                INSERT INTO lookout_documents (collection, id, fields, revisions, created, field_names_revision)
                VALUES (\(binds.add(change.collection)), \(id), \(binds.add(fields)), \(binds.add(revisions)),
                    \(Int64(document.created)), \(Int64(document.fieldNamesRevision)))
                ON CONFLICT (collection, id) DO UPDATE SET fields = excluded.fields, revisions = excluded.revisions,
                    created = excluded.created, field_names_revision = excluded.field_names_revision
                """
            }
        }
        parts.append { binds in
            "INSERT INTO lookout_changes (revision, entry) VALUES (\(revision), \(binds.add(entry.json)))"
        }
        let dropped = revision - Int64(retainedChanges)
        parts.append { _ in "DELETE FROM lookout_changes WHERE revision <= \(dropped)" }
        parts.append { _ in "UPDATE lookout_meta SET revision = \(revision) WHERE id = 1" }
        var start = 0
        while start < parts.count {
            let end = min(start + 64, parts.count)
            var binds = PostgresBindings()
            let written = parts[start..<end].enumerated().map { "w\($0) AS (\($1(&binds)))" }
            let last = end == parts.count
            let result = last ? "SELECT pg_notify('\(Self.channel)', '\(revision)')" : "SELECT 1"
            try session.run(
                PostgresQuery(unsafeSQL: "WITH " + written.joined(separator: ", ") + " " + result, binds: binds))
            start = end
        }
    }

    /// The entries committed after `revision`, in order, at most ``batch`` of them.
    static func changes(after revision: UInt64, in session: Session) throws -> [JournalEntry] {
        try session.run(
            """
            SELECT entry FROM lookout_changes WHERE revision > \(Int64(revision))
            ORDER BY revision LIMIT \(Int64(batch))
            """
        ).map { row throws in try JournalEntry(json: try row.decode(String.self)) }
    }

    public func records(_ kind: String) throws(PersistenceError) -> [String: JSONValue] {
        try link.withConnection { session in
            var result: [String: JSONValue] = [:]
            for row in try session.run("SELECT key, value FROM lookout_records WHERE kind = \(kind)") {
                let (key, text) = try row.decode((String, String).self)
                guard let value = try? JSONParser.parse(text) else {
                    throw PersistenceError.corrupt("record \(kind)/\(key) is not JSON")
                }
                result[key] = value
            }
            return result
        }
    }

    public func record(_ kind: String, key: String) throws(PersistenceError) -> JSONValue? {
        try link.withConnection { session in
            guard
                let row = try session.run("SELECT value FROM lookout_records WHERE kind = \(kind) AND key = \(key)")
                    .first
            else { return nil }
            guard let value = try? JSONParser.parse(try row.decode(String.self)) else {
                throw PersistenceError.corrupt("record \(kind)/\(key) is not JSON")
            }
            return value
        }
    }

    public func putRecord(_ value: JSONValue?, kind: String, key: String) throws(PersistenceError) {
        try link.withConnection { session in
            if let value {
                try session.run(
                    """
                    INSERT INTO lookout_records (kind, key, value) VALUES (\(kind), \(key), \(Self.text(value)))
                    ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value
                    """)
            } else {
                try session.run("DELETE FROM lookout_records WHERE kind = \(kind) AND key = \(key)")
            }
        }
    }

    public func checkWritable() throws(PersistenceError) {
        try link.withConnection { session in
            guard try session.run("SELECT pg_is_in_recovery()").first?.decode(Bool.self) == false else {
                throw PersistenceError.unavailable("the database is a read-only standby")
            }
        }
    }

    /// Closes the connection (the next call opens it again).
    public func close() {
        link.close()
    }

    private static func text(_ value: JSONValue) -> String {
        String(decoding: JSONWriter.encode(value), as: UTF8.self)
    }
}

extension PostgresBindings {
    /// Binds `text` as the next parameter, for a statement built in parts.
    /// - Returns: its placeholder, `$n`.
    fileprivate mutating func add(_ text: String) -> String {
        append(text)
        return "$\(count)"
    }
}
