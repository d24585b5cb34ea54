import LookoutJSON
import LookoutStore
import Synchronization
import Testing

/// Ids are 1...2^53 − 1 (issue 16: a client-given id of Int.max made the next create
/// without an id overflow and crash the server, again at every restart).
@Suite("Document ids and large writes", .timeLimit(.minutes(1)))
struct DocumentIDTests {
    static let highest = 9_007_199_254_740_991

    func store(_ documents: [JSONValue] = [["id": 1]]) throws -> Store {
        try Store([try DocumentCollection(name: "items", documents: documents)], epoch: "test")
    }

    @Test("a given id must be from 1 to 2^53 − 1; the highest one leaves no id to assign")
    func givenIDs() throws {
        let store = try store()
        for bad: JSONValue in [.int(Int.max), .int(Self.highest + 1), .int(0), .int(-5), .double(2.5), "7"] {
            #expect(throws: StoreError.self) { try store.apply(.create(collection: "items", document: ["id": bad])) }
        }
        #expect(try store.apply(.create(collection: "items", document: ["title": "next"])).id == 2)
        #expect(try store.apply(.create(collection: "items", document: ["id": .int(Self.highest)])).id == Self.highest)
        #expect(throws: StoreError.idsExhausted(collection: "items")) {
            try store.apply(.create(collection: "items", document: ["title": "after the highest"]))
        }
        #expect(try store.apply(.create(collection: "items", document: ["id": 3])).id == 3)
    }

    @Test("a document stored with an id outside the range before it was bounded does not stop new ids")
    func legacyIDs() throws {
        let legacy = DocumentImage(fields: ["id": .int(Int.max)], revisions: [:], created: 1, fieldNamesRevision: 1)
        let kept = DocumentImage(fields: ["id": 41], revisions: [:], created: 1, fieldNamesRevision: 1)
        let image = StoreImage(
            epoch: "test", revision: 1,
            collections: [CollectionImage(name: "items", membershipRevision: 1, documents: [kept, legacy])])
        let store = try Store(restoring: image, declarations: [])
        #expect(try store.apply(.create(collection: "items", document: [:])).id == 42)
        #expect(try store.apply(.delete(collection: "items", id: Int.max)).document == nil)
    }

    @Test("a data file's ids are checked the same way")
    func declaredIDs() {
        #expect(throws: StoreError.self) { try DocumentCollection(name: "items", documents: [["id": 0]]) }
        #expect(throws: StoreError.self) {
            try DocumentCollection(name: "items", documents: [["id": .int(Self.highest + 1)]])
        }
    }

    @Test("a merge patch removing 100,000 members of a 100,000-member document costs linear time")
    func largePatch() throws {
        let count = 100_000
        let fields = JSONObject([("id", .int(1))] + (0..<count).map { ("f\($0)", JSONValue.int($0)) })
        let store = try store([.object(fields)])
        let removal = JSONObject((0..<count).filter { $0 % 2 == 0 }.map { ("f\($0)", JSONValue.null) })
        let commit = try store.apply(.patch(collection: "items", id: 1, patch: removal))
        #expect(commit.document?.count == count / 2 + 1)
        #expect(commit.document?["f1"] == 1)
        #expect(commit.document?["f2"] == nil)
        #expect(commit.document?.keys.prefix(3) == ["id", "f1", "f3"])
    }
}

/// Group commits (issue 17): several writes planned in order, recorded in one commit.
@Suite("Store: writes applied together")
struct GroupCommitTests {
    /// Records what it is given, in one list per commit; or fails before asking for
    /// anything, as a lost database does.
    final class Journal: StoreJournal {
        let commits = Mutex<[[UInt64]]>([])
        let lost = Atomic<Bool>(false)

        func record(_ entries: [JournalEntry]) throws {
            commits.withLock { $0.append(entries.map(\.revision)) }
        }

        func record(after revision: UInt64, _ write: ([JournalEntry]) -> [JournalEntry]) throws {
            if lost.load(ordering: .relaxed) { throw PersistenceLost() }
            let entries = write([])
            if !entries.isEmpty { try record(entries) }
        }
    }

    struct PersistenceLost: Error {}

    func store(_ journal: Journal) throws -> Store {
        try Store(
            restoring: StoreImage(epoch: "e", revision: 0, collections: []),
            declarations: [try DocumentCollection(name: "items", documents: [["id": 1, "n": 0]])], journal: journal)
    }

    @Test("writes in one group are planned on each other, one commit, refusals kept apart")
    func oneCommit() throws {
        let journal = Journal()
        let store = try store(journal)
        let outcomes = store.apply([
            Store.Write(.patch(collection: "items", id: 1, patch: ["n": 1])),
            Store.Write(.patch(collection: "items", id: 9, patch: ["n": 1])),
            Store.Write(.patch(collection: "items", id: 1, patch: ["n": 2]), expectedRevisions: [2]),
            Store.Write(.create(collection: "items", document: [:])),
        ])
        #expect(try outcomes[0].get().revision == 2)
        #expect(throws: StoreError.documentNotFound(collection: "items", id: 9)) { try outcomes[1].get() }
        #expect(try outcomes[2].get().document?["n"] == 2, "planned on the first write of the group")
        #expect(try outcomes[3].get().id == 2)
        #expect(journal.commits.withLock { $0.last } == [2, 3, 4])
        var reads = ReadSet()
        #expect(store.snapshot().document(1, in: "items", reads: &reads)?["n"] == 2)
    }

    @Test("a journal that fails before asking for the entries fails every write of the group")
    func lostJournal() throws {
        let journal = Journal()
        let store = try store(journal)
        journal.lost.store(true, ordering: .relaxed)
        let outcomes = store.apply([
            Store.Write(.patch(collection: "items", id: 1, patch: ["n": 1])),
            Store.Write(.patch(collection: "items", id: 1, patch: ["n": 2])),
        ])
        #expect(outcomes.count == 2)
        for outcome in outcomes {
            guard case .failure(.storageFailed) = outcome else {
                Issue.record("expected a storage failure, got \(outcome)")
                continue
            }
        }
        #expect(throws: StoreError.self) { try store.apply(.patch(collection: "items", id: 1, patch: ["n": 3])) }
        #expect(store.snapshot().revision == 1)
    }
}
