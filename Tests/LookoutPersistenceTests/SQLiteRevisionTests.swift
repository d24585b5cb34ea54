import Foundation
import LookoutStore
import LookoutTestSupport
import Testing

@testable import LookoutPersistence

/// Where SQLite keeps the last revision (``RecordedRevision``): in the rows a write
/// changes, and in `meta` only when those rows do not carry it.
@Suite("SQLite storage: the last revision")
struct SQLiteRevisionTests {
    static func document(_ id: Int, created: UInt64, revisions: [String: UInt64] = [:]) -> DocumentImage {
        DocumentImage(fields: ["id": .int(id)], revisions: revisions, created: created, fieldNamesRevision: created)
    }

    /// What the `sqlite3` shell prints for `sql` on the file at `path`.
    static func query(_ path: String, _ sql: String) throws -> String {
        let run = try ChildProcess.run("/usr/bin/sqlite3", [path, sql])
        #expect(run.ending == .exited(0), "\(run.output)")
        return run.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func metaRevision(_ path: String) throws -> String {
        try query(path, "SELECT value FROM meta WHERE key = 'revision'")
    }

    @Test("a reopen finds the last revision, whether its rows carry it or only meta does")
    func reopen() throws {
        // Each storage is let go before the `sqlite3` shell reads the file: closing any
        // descriptor of a file drops the process's locks on it, and opening a second
        // storage closes one, so the shell could take itself for the last reader and
        // remove a log the first still writes to.
        let directory = temporaryPath("revision")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lookout.sqlite"
        do {
            let storage = try SQLitePersistence(path: path)
            try storage.create(epoch: "e")
            try storage.record(
                JournalEntry(
                    revision: 1, memberships: ["c"],
                    documents: [.init(collection: "c", id: 1, document: Self.document(1, created: 1))]))
            try storage.record(
                JournalEntry(
                    revision: 2, memberships: [],
                    documents: [
                        .init(collection: "c", id: 1, document: Self.document(1, created: 1, revisions: ["id": 2]))
                    ]))
        }
        #expect(try SQLitePersistence(path: path).load()?.revision == 2)
        #expect(try Self.metaRevision(path) == "0", "writes whose rows carry their revisions leave meta alone")
        do {
            // A delete that changes no membership: no row is left to carry revision 3.
            let storage = try SQLitePersistence(path: path)
            _ = try storage.load()
            try storage.record(
                JournalEntry(revision: 3, memberships: [], documents: [.init(collection: "c", id: 1, document: nil)]))
        }
        #expect(try Self.metaRevision(path) == "3")
        do {
            let reopened = try SQLitePersistence(path: path)
            #expect(try reopened.load()?.revision == 3)
            #expect(throws: PersistenceError.self) {
                try reopened.record(JournalEntry(revision: 3, memberships: ["c"], documents: []))
            }
            try reopened.record(JournalEntry(revision: 4, memberships: ["c"], documents: []))
        }
        #expect(try SQLitePersistence(path: path).load()?.revision == 4)
    }

    @Test("a revision another connection recorded is seen before the next write, wherever its rows carry it")
    func anotherWriter() throws {
        let directory = temporaryPath("revision")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lookout.sqlite"
        let first = try SQLitePersistence(path: path)
        try first.create(epoch: "e")
        #expect(try first.load()?.revision == 0)
        try first.record(
            JournalEntry(
                revision: 1, memberships: ["c"],
                documents: [.init(collection: "c", id: 1, document: Self.document(1, created: 1))]))
        let second = try SQLitePersistence(path: path)
        #expect(try second.load()?.revision == 1)
        // Revision 2 is carried by one field's revision alone.
        try first.record(
            JournalEntry(
                revision: 2, memberships: [],
                documents: [
                    .init(collection: "c", id: 1, document: Self.document(1, created: 1, revisions: ["id": 2]))
                ]))
        #expect(throws: PersistenceError.self, "the second still knew revision 1") {
            try second.record(JournalEntry(revision: 2, memberships: ["d"], documents: []))
        }
        try second.record(JournalEntry(revision: 3, memberships: ["c"], documents: []))
        #expect(throws: PersistenceError.self) {
            try first.record(JournalEntry(revision: 3, memberships: ["d"], documents: []))
        }
        let loaded = try #require(try SQLitePersistence(path: path).load())
        #expect(loaded.revision == 3)
        #expect(loaded.collections.map(\.name) == ["c"])
    }

    @Test(
        "while it holds the serving lock, a user written beside it does not make its next write read the revision in SQL"
    )
    func heldLock() throws {
        let directory = temporaryPath("revision")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lookout.sqlite"
        let lock = try ServingLock(database: path)
        let locked = try SQLitePersistence(path: path, lock: lock)
        try locked.create(epoch: "e")
        #expect(try locked.load()?.revision == 0)
        let unlocked = try SQLitePersistence(path: path)
        #expect(try unlocked.load()?.revision == 0)
        var revision: UInt64 = 0
        // Each records a revision after the other connection has written a user, as
        // `lookout user add` does beside a running server.
        func write(_ storage: SQLitePersistence, besides other: SQLitePersistence) throws {
            try other.putRecord(.string("hash"), kind: "users", key: "u\(revision)@example.com")
            revision += 1
            try storage.record(JournalEntry(revision: revision, memberships: ["c\(revision)"], documents: []))
        }
        try write(locked, besides: unlocked)
        try write(locked, besides: unlocked)
        #expect(locked.revisionReads.load(ordering: .relaxed) == 0)
        try write(unlocked, besides: locked)
        #expect(unlocked.revisionReads.load(ordering: .relaxed) == 1, "without the lock, data_version moved")
        // The locked connection trusts what it recorded last, so a revision another
        // connection recorded meanwhile is not seen (the lock is what keeps others out);
        // one that does not follow its own is still refused.
        #expect(throws: PersistenceError.self) {
            try locked.record(JournalEntry(revision: 2, memberships: ["d"], documents: []))
        }
        lock.release()
        #expect(throws: PersistenceError.self, "let go of the lock, it reads the revision in SQL again") {
            try locked.record(JournalEntry(revision: 3, memberships: ["d"], documents: []))
        }
        #expect(locked.revisionReads.load(ordering: .relaxed) == 1)
        try locked.record(JournalEntry(revision: 4, memberships: ["d"], documents: []))
        #expect(try SQLitePersistence(path: path).load()?.revision == 4)
    }

    @Test("a file of schema 1, which kept the revision in meta alone, opens at its revision")
    func schemaOne() throws {
        // Schema 1 had these tables; its `meta` kept the last revision above every row's.
        let directory = temporaryPath("revision")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lookout.sqlite"
        do {
            let storage = try SQLitePersistence(path: path)
            try storage.create(epoch: "old")
            try storage.record(
                JournalEntry(
                    revision: 2, memberships: ["c"],
                    documents: [.init(collection: "c", id: 1, document: Self.document(1, created: 2))]))
        }
        _ = try Self.query(path, "UPDATE meta SET value = '7' WHERE key = 'revision'; PRAGMA user_version = 1;")
        #expect(try Self.query(path, "PRAGMA user_version") == "1")
        do {
            let storage = try SQLitePersistence(path: path)
            #expect(try storage.load()?.revision == 7)
            try storage.record(JournalEntry(revision: 8, memberships: ["c"], documents: []))
        }
        #expect(try Self.query(path, "PRAGMA user_version") == "\(SQLitePersistence.schemaVersion)")
        #expect(try SQLitePersistence(path: path).load()?.revision == 8)
    }
}
