import LookoutJSON
import LookoutStore
import Synchronization
import Testing

/// Several stores on one journal, as several instances on one PostgreSQL database: the
/// journal orders commits, a store that is behind takes the others' commits in and plans
/// its write again, and committed entries applied elsewhere wake exactly what a local
/// write would.
@Suite("Store: commits shared with other instances")
struct SharedJournalTests {
    /// A journal in memory that, like PostgreSQL's, accepts only the next revision and
    /// plans a write under its lock on the entries committed after the writer's revision.
    final class SharedJournal: StoreJournal {
        struct NotNext: Error {}

        let log = Mutex<[JournalEntry]>([])

        func record(_ entries: [JournalEntry]) throws {
            try log.withLock { log throws(NotNext) in try Self.append(entries, to: &log) }
        }

        func record(after revision: UInt64, _ write: ([JournalEntry]) -> [JournalEntry]) throws {
            try log.withLock { log throws(NotNext) in
                try Self.append(write(Array(log[Int(revision)...])), to: &log)
            }
        }

        private static func append(_ entries: [JournalEntry], to log: inout [JournalEntry]) throws(NotNext) {
            for (offset, entry) in entries.enumerated() where entry.revision != UInt64(log.count + offset) + 1 {
                throw NotNext()
            }
            log += entries
        }

        func entries(after revision: UInt64) -> [JournalEntry] {
            log.withLock { Array($0[Int(revision)...]) }
        }
    }

    final class Wakes: Sendable {
        let changes = Mutex<[Store.Change]>([])
        var all: [Store.Change] { changes.withLock { $0 } }
        func record(_ change: Store.Change) { changes.withLock { $0.append(change) } }
    }

    func declarations() throws -> [DocumentCollection] {
        [
            try DocumentCollection(
                name: "items", options: .init(ignored: ["views"]),
                documents: [["id": 1, "title": "one", "views": 0], ["id": 2, "title": "two"]])
        ]
    }

    /// Two stores started from the same (empty) journal, the first adding the collections.
    func twoStores(_ journal: SharedJournal) throws -> (Store, Store) {
        let empty = StoreImage(epoch: "e", revision: 0, collections: [])
        let first = try Store(restoring: empty, declarations: try declarations(), journal: journal)
        let second = try Store(restoring: empty, declarations: try declarations(), journal: journal)
        return (first, second)
    }

    @Test("a store started behind takes in the collections another added, without adding them again")
    func startBehind() throws {
        let journal = SharedJournal()
        let (first, second) = try twoStores(journal)
        #expect(journal.entries(after: 0).count == 1)
        #expect(second.image() == first.image())
        #expect(second.snapshot().revision == 1)
    }

    @Test("committed entries applied elsewhere give the same state and wake exactly the changed keys")
    func remoteApply() throws {
        let journal = SharedJournal()
        let (first, second) = try twoStores(journal)
        func waitOn(_ id: Int, _ field: String) -> Wakes {
            var reads = ReadSet()
            _ = second.snapshot().document(id, in: "items", fields: [field], reads: &reads)
            let wakes = Wakes()
            guard case .waiting = second.wait(for: reads, after: reads.revision, wake: wakes.record) else {
                Issue.record("expected to wait")
                return wakes
            }
            return wakes
        }
        let title1 = waitOn(1, "title")
        let title2 = waitOn(2, "title")
        let views1 = waitOn(1, "views")
        var membershipReads = ReadSet()
        _ = second.snapshot().ids(in: "items", reads: &membershipReads)
        let membership = Wakes()
        _ = second.wait(for: membershipReads, after: membershipReads.revision, wake: membership.record)

        try first.apply(.patch(collection: "items", id: 1, patch: ["title": "uno", "views": 5]))
        try first.apply(.create(collection: "items", document: ["title": "three"]))
        try first.apply(.patch(collection: "items", id: 2, patch: ["title": nil]))
        #expect(second.applyCommitted(journal.entries(after: 1)) == 4)
        #expect(second.image() == first.image())

        #expect(title1.all.map(\.changed) == [["items/1.title"]])
        #expect(title1.all.first?.revision == 2)
        #expect(views1.all.isEmpty, "an ignored field wakes nobody, here as on the writer")
        #expect(membership.all.map(\.revision) == [3], "the create changed the membership")
        #expect(title2.all.map(\.revision) == [4], "a removed field is a change")
    }

    @Test("entries already applied are skipped and a gap stops applying: nothing twice, nothing skipped")
    func orderAndDuplicates() throws {
        let journal = SharedJournal()
        let (first, second) = try twoStores(journal)
        for number in 0..<4 {
            try first.apply(.patch(collection: "items", id: 1, patch: ["title": .int(number)]))
        }
        let entries = journal.entries(after: 1)
        #expect(second.applyCommitted([entries[0], entries[2]]) == 2, "stops at the gap")
        #expect(second.applyCommitted(entries) == 5, "skips the one it has")
        #expect(second.applyCommitted(entries) == 5)
        #expect(second.image() == first.image())
    }

    @Test(
        "a write on a store that is behind is planned on what it missed: new ids, stale If-Match refused, state converges"
    )
    func replan() throws {
        let journal = SharedJournal()
        let (first, second) = try twoStores(journal)
        let tag = try #require(second.snapshot().documentRevision(1, in: "items"))
        let made = try first.apply(.create(collection: "items", document: ["title": "from first"]))
        try first.apply(.patch(collection: "items", id: 1, patch: ["title": "first wins"]))
        let other = try second.apply(.create(collection: "items", document: ["title": "from second"]))
        #expect(made.id == 3)
        #expect(other.id == 4, "the id is free in the newer state")
        #expect(other.revision == 4)
        #expect(throws: StoreError.revisionMismatch(current: 3)) {
            try second.apply(.patch(collection: "items", id: 1, patch: ["title": "lost"]), expectedRevisions: [tag])
        }
        #expect(first.applyCommitted(journal.entries(after: 3)) == 4)
        #expect(first.image() == second.image())
        #expect(journal.entries(after: 0).map(\.revision) == [1, 2, 3, 4])
    }
}
