import Foundation
import LookoutJSON
import LookoutStore
import LookoutTestSupport
import Testing

@testable import LookoutPersistence

@Suite("SQLite storage: refusing bad files, a full disk, backups")
struct SQLitePersistenceTests {
    @Test("a file that is not a database, or not Lookout's, is refused and left as it was")
    func refusesForeignFiles() throws {
        let directory = temporaryPath("sqlite")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let garbage = directory + "/garbage.sqlite"
        try Data("not a database at all, but long enough to have a header".utf8).write(
            to: URL(fileURLWithPath: garbage))
        let before = try Data(contentsOf: URL(fileURLWithPath: garbage))
        #expect(throws: PersistenceError.self) { try SQLitePersistence(path: garbage) }
        #expect(try Data(contentsOf: URL(fileURLWithPath: garbage)) == before)
        #expect(!FileManager.default.fileExists(atPath: garbage + "-wal"))

        let foreign = directory + "/foreign.sqlite"
        let made = try ChildProcess.run(
            "/usr/bin/sqlite3", [foreign, "PRAGMA application_id = 42; CREATE TABLE t (x);"])
        #expect(made.ending == .exited(0), "\(made.output)")
        let foreignBefore = try Data(contentsOf: URL(fileURLWithPath: foreign))
        do {
            _ = try SQLitePersistence(path: foreign)
            Issue.record("a database with another application_id was opened")
        } catch {
            #expect(error.description.contains("not Lookout's"))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: foreign)) == foreignBefore)
    }

    @Test("every commit syncs the log (synchronous = FULL), in a new file and an existing one")
    func syncsEveryCommit() throws {
        let directory = temporaryPath("sqlite")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lookout.sqlite"
        let created = try SQLitePersistence(path: path)
        try created.create(epoch: "e")
        for key in 0..<50 { try created.putRecord(.int(key), kind: "k", key: "\(key)") }
        #expect(try created.synchronous == SQLitePersistence.full)
        let reopened = try SQLitePersistence(path: path)
        #expect(try reopened.synchronous == SQLitePersistence.full)
        #expect(try reopened.record("k", key: "49") == .int(49))
    }

    @Test("a damaged database is refused")
    func refusesDamage() throws {
        let directory = temporaryPath("sqlite")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lookout.sqlite"
        do {
            let storage = try SQLitePersistence(path: path)
            try storage.create(epoch: "e")
            for key in 0..<400 {
                try storage.putRecord(.string(String(repeating: "x", count: 200)), kind: "k", key: "\(key)")
            }
        }
        // Overwrite a page in the middle of the file (not the header) with junk.
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        try handle.seek(toOffset: 4096 * 3)
        handle.write(Data(repeating: 0xA5, count: 4096))
        try handle.close()
        #expect(throws: PersistenceError.self) { try SQLitePersistence(path: path) }
    }

    @Test("the log is checkpointed by the checkpointer's connection, not by the commits")
    func checkpointsAside() throws {
        let directory = temporaryPath("sqlite")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lookout.sqlite"
        do {
            let storage = try SQLitePersistence(path: path, checkpointFrames: (request: 8, inline: 100_000))
            try storage.create(epoch: "e")
            let copiedBefore = fileSize(path)
            // Each record longer than a page, so that the file grows as the log is copied in.
            let long = String(repeating: "x", count: 5000)
            for key in 0..<60 { try storage.putRecord(.string(long + "\(key)"), kind: "k", key: "\(key)") }
            storage.checkpointer.drain()
            #expect(storage.checkpointer.background.load(ordering: .relaxed) >= 1)
            #expect(storage.checkpointer.inline.load(ordering: .relaxed) == 0)
            #expect(fileSize(path) > copiedBefore, "the log's pages were copied into the database file")
        }
        let reopened = try SQLitePersistence(path: path)
        let records = try reopened.records("k")
        #expect(records.count == 60)
        #expect(records["59"] == .string(String(repeating: "x", count: 5000) + "59"))
    }

    @Test("a log whose checkpoints fall behind is checkpointed by the commit past the inline limit")
    func checkpointsInlineWhenBehind() throws {
        let directory = temporaryPath("sqlite")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lookout.sqlite"
        let storage = try SQLitePersistence(path: path, checkpointFrames: (request: 8, inline: 32))
        try storage.create(epoch: "e")
        storage.checkpointer.drain()
        let before = storage.checkpointer.background.load(ordering: .relaxed)
        try storage.checkpointer.holding {
            for key in 0..<100 { try storage.putRecord(.int(key), kind: "k", key: "\(key)") }
            #expect(storage.checkpointer.background.load(ordering: .relaxed) == before)
        }
        #expect(storage.checkpointer.inline.load(ordering: .relaxed) >= 1)
        // 100 commits of at least a page each, had the log not started again after a checkpoint.
        #expect(fileSize(path + "-wal") < 60 * 4096, "the log stayed near the inline limit")
        #expect(try storage.records("k").count == 100)
    }

    private func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? Int) ?? 0
    }

    @Test("past the size limit a write fails as full, stores nothing, and reads still work")
    func full() throws {
        let directory = temporaryPath("sqlite")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/lookout.sqlite"
        let storage = try SQLitePersistence(path: path, maxBytes: 256 * 1024)
        try storage.create(epoch: "e")
        let store = try Store(
            restoring: try #require(try storage.load()),
            declarations: [try DocumentCollection(name: "notes", documents: [])], journal: storage)
        var failure: StoreError?
        var written = 0
        for index in 0..<2000 {
            do {
                try store.apply(
                    .create(
                        collection: "notes",
                        document: ["text": .string(String(repeating: "z", count: 1000) + "\(index)")]))
                written += 1
            } catch {
                failure = error
                break
            }
        }
        #expect(written > 10)
        guard case .storageFailed(let reason)? = failure else {
            Issue.record("expected a storage failure, got \(String(describing: failure))")
            return
        }
        #expect(reason.contains("no space"), "\(reason)")
        #expect(store.image() == (try #require(try storage.load())), "memory and disk agree after the failure")
        var reads = ReadSet()
        #expect(store.snapshot().count(of: "notes", reads: &reads) == written)
    }

    @Test("an online backup is a complete database at one revision")
    func backup() throws {
        let directory = temporaryPath("sqlite")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let storage = try SQLitePersistence(path: directory + "/lookout.sqlite")
        try storage.create(epoch: "e")
        let store = try Store(
            restoring: try #require(try storage.load()),
            declarations: [try DocumentCollection(name: "notes", documents: [["id": 1, "n": 1]])], journal: storage)
        try store.apply(.patch(collection: "notes", id: 1, patch: ["n": 2]))
        try storage.backup(to: directory + "/backup.sqlite")
        #expect(throws: PersistenceError.self) { try storage.backup(to: directory + "/backup.sqlite") }
        let copy = try SQLitePersistence(path: directory + "/backup.sqlite")
        #expect(try copy.load() == store.image())
    }
}
