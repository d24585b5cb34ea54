import Foundation
import LookoutJSON
import LookoutPersistence
import LookoutStore
import LookoutTestSupport
import Testing

/// One contract, run against every implementation: SQLite on a real file, PostgreSQL
/// (a fresh database on a real server, ``TestPostgres``), and memory.
@Suite("Persistence contract")
struct PersistenceContractTests {
    /// Makes a fresh storage, with any file in the directory it is given; `reopen` gives
    /// the same storage again, as after a restart.
    struct Kind: Sendable, CustomStringConvertible {
        let description: String
        let make:
            @Sendable (String) throws -> (storage: any Persistence, reopen: @Sendable () throws -> any Persistence)
    }

    static let kinds: [Kind] = [
        Kind(description: "sqlite") { directory in
            let path = directory + "/lookout.sqlite"
            return (try SQLitePersistence(path: path), { try SQLitePersistence(path: path) })
        },
        Kind(description: "postgres") { _ in
            let url = try TestPostgres.shared.createDatabase()
            return (try PostgresPersistence(url: url), { try PostgresPersistence(url: url) })
        },
        Kind(description: "memory") { _ in
            let storage = MemoryPersistence()
            return (storage, { storage })
        },
    ]

    static func declarations() throws -> [DocumentCollection] {
        [
            try DocumentCollection(
                name: "items", options: .init(sort: ["rank"]),
                documents: [["id": 1, "title": "一", "rank": 2], ["id": 2, "title": "two", "rank": 1.5]]),
            try DocumentCollection(name: "empty", documents: []),
        ]
    }

    @Test("an empty storage loads nothing; a created history is empty at revision 0", arguments: kinds)
    func empty(_ kind: Kind) throws {
        let directory = temporaryPath("contract")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (storage, _) = try kind.make(directory)
        #expect(try storage.load() == nil)
        try storage.create(epoch: "e1")
        #expect(try storage.load() == StoreImage(epoch: "e1", revision: 0, collections: []))
    }

    @Test("writes through the store survive a reopen: documents, field revisions, membership, epoch", arguments: kinds)
    func survives(_ kind: Kind) throws {
        let directory = temporaryPath("contract")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (storage, reopen) = try kind.make(directory)
        try storage.create(epoch: "e1")
        let store = try Store(
            restoring: try #require(try storage.load()), declarations: try Self.declarations(), journal: storage)
        try store.apply(.patch(collection: "items", id: 1, patch: ["title": "いち", "added": [1, 2.5, nil]]))
        try store.apply(.create(collection: "items", document: ["title": "three", "rank": 0]))
        try store.apply(.delete(collection: "items", id: 2))
        try store.apply(.create(collection: "empty", document: ["id": 7]))
        let expected = store.image()
        let loaded = try #require(try reopen().load())
        #expect(loaded == expected)
        #expect(loaded.revision == 5)
        let restored = try Store(restoring: loaded, declarations: try Self.declarations(), journal: storage)
        #expect(restored.epoch == "e1")
        #expect(restored.image() == expected)
        var reads = ReadSet()
        _ = restored.snapshot().document(1, in: "items", reads: &reads)
        #expect(reads.revision == 2, "field revisions are kept, so cursors stay valid")
        let undeclared = try Store(restoring: loaded, declarations: [], journal: storage)
        #expect(undeclared.image() == expected, "stored collections are served even when no longer declared")
        #expect(undeclared.snapshot().options(of: "items") == DocumentCollection.Options(), "with default options")
    }

    @Test("a revision that does not follow the stored one is refused and changes nothing", arguments: kinds)
    func revisionOrder(_ kind: Kind) throws {
        let directory = temporaryPath("contract")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (storage, _) = try kind.make(directory)
        try storage.create(epoch: "e1")
        let entry = JournalEntry(
            revision: 1, memberships: ["c"],
            documents: [
                .init(
                    collection: "c", id: 1,
                    document: DocumentImage(fields: ["id": 1], revisions: [:], created: 1, fieldNamesRevision: 1))
            ])
        try storage.record(entry)
        #expect(throws: PersistenceError.self) { try storage.record(entry) }
        #expect(try storage.load()?.revision == 1)
        #expect(try storage.load()?.collections.first?.documents.count == 1)
    }

    @Test("records are stored by kind and key, replaced and removed", arguments: kinds)
    func records(_ kind: Kind) throws {
        let directory = temporaryPath("contract")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let (storage, reopen) = try kind.make(directory)
        try storage.putRecord(["role": "editor"], kind: "users", key: "a@example.com")
        try storage.putRecord(["role": "reader"], kind: "users", key: "b@example.com")
        try storage.putRecord(["role": "admin"], kind: "users", key: "a@example.com")
        try storage.putRecord(nil, kind: "users", key: "b@example.com")
        try storage.putRecord("x", kind: "other", key: "a@example.com")
        #expect(try reopen().records("users") == ["a@example.com": ["role": "admin"]])
        #expect(try reopen().records("none") == [:])
        #expect(try reopen().record("users", key: "a@example.com") == ["role": "admin"])
        #expect(try reopen().record("users", key: "b@example.com") == nil)
        try storage.checkWritable()
    }

    @Test("a store refuses a write its journal cannot record, and keeps its state")
    func failingJournal() throws {
        struct Refusing: StoreJournal {
            func record(_ entries: [JournalEntry]) throws { throw PersistenceError.full("test") }
        }
        let storage = MemoryPersistence()
        try storage.create(epoch: "e")
        let store = try Store(restoring: try #require(try storage.load()), declarations: try Self.declarations())
        let refusing = try Store(restoring: store.image(), declarations: try Self.declarations(), journal: Refusing())
        #expect(throws: StoreError.self) {
            try refusing.apply(.patch(collection: "items", id: 1, patch: ["title": "lost"]))
        }
        #expect(refusing.image() == store.image())
    }
}

/// A new empty directory under the temporary directory, for the caller to remove.
func temporaryPath(_ name: String) -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-\(name)-\(UUID())").path
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}
