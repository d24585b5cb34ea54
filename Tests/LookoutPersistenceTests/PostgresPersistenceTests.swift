import Foundation
import LookoutJSON
import LookoutPersistence
import LookoutStore
import LookoutTestSupport
import Synchronization
import Testing

/// What PostgreSQL adds to the contract: one database shared by several stores.
@Suite("PostgreSQL shared by several stores", .timeLimit(.minutes(1)))
struct PostgresPersistenceTests {
    func declarations() throws -> [DocumentCollection] {
        [try DocumentCollection(name: "items", documents: [["id": 1, "title": "one"]])]
    }

    /// Two stores on one new database, each through its own connection.
    func twoStores() throws -> (url: String, first: Store, second: Store, database: PostgresPersistence) {
        let url = try TestPostgres.shared.createDatabase()
        let first = try PostgresPersistence(url: url)
        try first.create(epoch: "e")
        let second = try PostgresPersistence(url: url)
        let a = try Store(restoring: try #require(try first.load()), declarations: try declarations(), journal: first)
        let b = try Store(restoring: try #require(try second.load()), declarations: [], journal: second)
        return (url, a, b, second)
    }

    @Test("a write is handed the commits since its revision, in order, and takes the next; a stale entry is refused")
    func behind() throws {
        let (url, first, _, _) = try twoStores()
        try first.apply(.patch(collection: "items", id: 1, patch: ["title": "two"]))
        try first.apply(.patch(collection: "items", id: 1, patch: ["title": "three"]))
        let other = try PostgresPersistence(url: url)
        #expect(throws: PersistenceError.self) {
            try other.record(JournalEntry(revision: 2, memberships: [], documents: []))
        }
        var handed: [JournalEntry] = []
        try other.record(after: 1) { committed in
            handed = committed
            return [JournalEntry(revision: 4, memberships: [], documents: [])]
        }
        #expect(handed.map(\.revision) == [2, 3])
        #expect(handed.last?.documents.first?.document?.fields == ["id": 1, "title": "three"])
        #expect(try other.load()?.revision == 4)
        #expect(throws: PersistenceError.self, "an entry that skips a revision") {
            try other.record(after: 4) { _ in [JournalEntry(revision: 6, memberships: [], documents: [])] }
        }
        try other.record(after: 4) { _ in [] }
        #expect(try other.load()?.revision == 4, "nothing was recorded")
    }

    @Test("a change feed applies another store's commits in order and wakes the waiters on them")
    func feed() throws {
        let (_, first, second, database) = try twoStores()
        let feed = PostgresChangeFeed(store: second, database: database, pollInterval: .seconds(30))
        #expect(try feed.catchUp() == 1)
        var reads = ReadSet()
        _ = second.snapshot().document(1, in: "items", fields: ["title"], reads: &reads)
        let woken = Mutex<[UInt64]>([])
        _ = second.wait(for: reads, after: reads.revision) { change in woken.withLock { $0.append(change.revision) } }
        feed.start()
        defer { feed.stop() }
        try first.apply(.patch(collection: "items", id: 1, patch: ["title": "two"]))
        try first.apply(.create(collection: "items", document: ["title": "new"]))
        // The notification, not the 30 s poll, brings them.
        for _ in 0..<200 where second.snapshot().revision < 3 { usleep(10_000) }
        #expect(second.image() == first.image())
        #expect(woken.withLock { $0 } == [2])
        #expect(feed.status == .following(3))
    }

    @Test("a store behind the commits the database still keeps is stranded: it says so, skips nothing, writes nothing")
    func stranded() throws {
        let url = try TestPostgres.shared.createDatabase()
        let writer = try PostgresPersistence(url: url, retainedChanges: 3)
        try writer.create(epoch: "e")
        let a = try Store(restoring: try #require(try writer.load()), declarations: try declarations(), journal: writer)
        let reader = try PostgresPersistence(url: url, retainedChanges: 3)
        let b = try Store(restoring: try #require(try reader.load()), declarations: [], journal: reader)
        for number in 2...6 { try a.apply(.patch(collection: "items", id: 1, patch: ["title": .int(number)])) }
        let feed = PostgresChangeFeed(store: b, database: reader, pollInterval: .seconds(30))
        #expect(throws: PostgresChangeFeed.Stranded.self) { try feed.catchUp() }
        #expect(b.snapshot().revision == 1, "no commit is applied past the missing ones")
        #expect(throws: StoreError.self) { try b.apply(.patch(collection: "items", id: 1, patch: ["title": "lost"])) }
        #expect(try writer.load() == a.image(), "the refused write changed nothing")
        // Started afresh, the store loads the current state and follows again.
        let restarted = try Store(restoring: try #require(try reader.load()), declarations: [], journal: reader)
        let again = PostgresChangeFeed(store: restarted, database: reader, pollInterval: .seconds(30))
        #expect(try again.catchUp() == 6)
        try a.apply(.patch(collection: "items", id: 1, patch: ["title": "seven"]))
        #expect(try again.catchUp() == 7)
        #expect(restarted.image() == a.image())
    }

    @Test("a commit of many documents (a collection added with 300) is written in several statements, whole")
    func largeEntry() throws {
        let url = try TestPostgres.shared.createDatabase()
        let database = try PostgresPersistence(url: url)
        try database.create(epoch: "e")
        let documents: [JSONValue] = (1...300).map { ["id": .int($0), "title": .string("title \($0)")] }
        let store = try Store(
            restoring: try #require(try database.load()),
            declarations: [try DocumentCollection(name: "many", documents: documents)], journal: database)
        try store.apply(.delete(collection: "many", id: 7))
        let loaded = try #require(try PostgresPersistence(url: url).load())
        #expect(loaded == store.image())
        #expect(loaded.collections.first?.documents.count == 299)
    }
}
