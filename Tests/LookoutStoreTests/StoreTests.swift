import LookoutJSON
import LookoutStore
import Synchronization
import Testing

@Suite("Store: reads, writes, waits")
struct StoreTests {
    func makeStore(ignored: Set<String> = []) throws -> Store {
        let items: [JSONValue] = (1...6).map { ["id": .int($0), "title": .string("t\($0)"), "rank": .int(7 - $0)] }
        return try Store(
            [
                try DocumentCollection(name: "items", options: .init(pageSize: 2, ignored: ignored), documents: items),
                try DocumentCollection(name: "sorted", options: .init(sort: ["rank"]), documents: items),
            ], epoch: "test")
    }

    /// Records wake-ups.
    final class Wakes: Sendable {
        let changes = Mutex<[Store.Change]>([])
        var all: [Store.Change] { changes.withLock { $0 } }
        func record(_ change: Store.Change) { changes.withLock { $0.append(change) } }
    }

    func wait(_ store: Store, reading: (StoreSnapshot, inout ReadSet) -> Void) -> (Wakes, ReadSet) {
        let snapshot = store.snapshot()
        var reads = ReadSet()
        reading(snapshot, &reads)
        let wakes = Wakes()
        guard case .waiting = store.wait(for: reads, after: reads.revision, wake: wakes.record) else {
            Issue.record("expected to wait")
            return (wakes, reads)
        }
        return (wakes, reads)
    }

    @Test("reads record their keys; a projection reads fewer fields")
    func readSets() throws {
        let snapshot = try makeStore().snapshot()
        var whole = ReadSet()
        #expect(snapshot.document(2, in: "items", reads: &whole)?["title"] == "t2")
        #expect(Set(whole.keys.map(\.description)) == ["items/2", "items/2.title", "items/2.rank"])
        #expect(whole.revision == 1)
        var projected = ReadSet()
        #expect(snapshot.document(2, in: "items", fields: ["title"], reads: &projected) == ["id": 2, "title": "t2"])
        #expect(projected.keys.map(\.description) == ["items/2.title"])
        var missing = ReadSet()
        #expect(snapshot.document(99, in: "items", reads: &missing) == nil)
        #expect(missing.keys.map(\.description) == ["items"], "a missing document waits on the membership")
        var sorted = ReadSet()
        #expect(snapshot.orderedIDs(in: "sorted", reads: &sorted) == [6, 5, 4, 3, 2, 1])
        #expect(sorted.keys.count == 7, "the membership and every document's sort field")
    }

    @Test("create assigns the next id and changes the membership; a taken or bad id is refused")
    func create() throws {
        let store = try makeStore()
        let commit = try store.apply(.create(collection: "items", document: ["title": "new"]))
        #expect(commit.id == 7)
        #expect(commit.revision == 2)
        #expect(commit.document == ["id": 7, "title": "new"])
        #expect(commit.documentRevision == 2)
        #expect(Set(commit.changed.map(\.description)) == ["items", "items/7", "items/7.title"])
        #expect(throws: StoreError.idTaken(collection: "items", id: 7)) {
            try store.apply(.create(collection: "items", document: ["id": 7]))
        }
        #expect(throws: StoreError.self) { try store.apply(.create(collection: "items", document: ["id": "8"])) }
        #expect(throws: StoreError.unknownCollection("nope")) { try store.apply(.delete(collection: "nope", id: 1)) }
        #expect(store.snapshot().revision == 2, "refused writes change nothing")
        #expect(try store.apply(.delete(collection: "items", id: 7)).documentRevision == nil)
    }

    @Test("a document's id comes first, wherever the body put it; the other members keep their order")
    func idFirst() throws {
        let store = try makeStore()
        let created = try store.apply(.create(collection: "items", document: ["b": 1, "id": 9, "a": 2]))
        #expect(created.document?.keys == ["id", "b", "a"])
        let replaced = try store.apply(.replace(collection: "items", id: 9, document: ["c": 3, "id": 9, "b": 4]))
        #expect(replaced.document?.keys == ["id", "c", "b"])
        let patched = try store.apply(.patch(collection: "items", id: 9, patch: ["a": 5, "id": 9]))
        #expect(patched.document?.keys == ["id", "c", "b", "a"])
        var reads = ReadSet()
        #expect(store.snapshot().document(9, in: "items", reads: &reads)?.keys == ["id", "c", "b", "a"])
    }

    @Test("documents created, replaced and deleted out of order, 64 ids to a chunk, read back as written")
    func chunks() throws {
        let store = try makeStore()
        let far = 9_007_199_254_740_991
        for id in [130, 191, 128, 129, 64, 63, far, far - 1] {
            try store.apply(.create(collection: "items", document: ["id": .int(id), "title": .string("t\(id)")]))
        }
        try store.apply(.delete(collection: "items", id: 129))
        try store.apply(.delete(collection: "items", id: far - 1))
        try store.apply(.replace(collection: "items", id: 191, document: ["title": "replaced"]))
        try store.apply(.patch(collection: "items", id: 128, patch: ["rank": 1]))
        let snapshot = store.snapshot()
        var reads = ReadSet()
        let titles = [1, 6, 63, 64, 127, 128, 129, 130, 131, 191, 192, far - 1, far].map { id in
            snapshot.document(id, in: "items", reads: &reads)?["title"]?.stringValue
        }
        #expect(titles == ["t1", "t6", "t63", "t64", nil, "t128", nil, "t130", nil, "replaced", nil, nil, "t\(far)"])
        #expect(snapshot.document(128, in: "items", fields: ["rank"], reads: &reads) == ["id": 128, "rank": 1])
        #expect(snapshot.ids(in: "items", reads: &reads) == [1, 2, 3, 4, 5, 6, 130, 191, 128, 64, 63, far])
    }

    @Test("an equal write changes nothing: same values, other key order, 1 as 1.0")
    func equalWrites() throws {
        let store = try makeStore()
        let same = try store.apply(.replace(collection: "items", id: 1, document: ["rank": 6.0, "title": "t1"]))
        #expect(same.changed.isEmpty)
        #expect(same.revision == 1)
        #expect(same.documentRevision == 1, "the unchanged document keeps its version")
        let patch = try store.apply(.patch(collection: "items", id: 1, patch: ["title": "t1"]))
        #expect(patch.changed.isEmpty)
        #expect(store.snapshot().revision == 1)
        try store.apply(.patch(collection: "items", id: 1, patch: ["title": "caf\u{E9}"]))
        let decomposed = try store.apply(.patch(collection: "items", id: 1, patch: ["title": "cafe\u{301}"]))
        #expect(decomposed.changed.map(\.description) == ["items/1.title"], "other scalars are another value")
    }

    @Test("merge patch: set, remove with null, merge nested objects; the id cannot change")
    func mergePatch() throws {
        let store = try makeStore()
        try store.apply(.patch(collection: "items", id: 1, patch: ["meta": ["a": 1, "b": 2]]))
        let commit = try store.apply(
            .patch(collection: "items", id: 1, patch: ["meta": ["b": nil, "c": 3], "rank": nil]))
        #expect(commit.document == ["id": 1, "title": "t1", "meta": ["a": 1, "c": 3]])
        #expect(
            Set(commit.changed.map(\.description)) == ["items/1", "items/1.meta", "items/1.rank"], "rank was removed")
        #expect(throws: StoreError.self) { try store.apply(.patch(collection: "items", id: 1, patch: ["id": 2])) }
        #expect(throws: StoreError.self) { try store.apply(.replace(collection: "items", id: 1, document: ["id": 3])) }
    }

    @Test("If-Match: a stale document revision is refused and changes nothing")
    func expectedRevision() throws {
        let store = try makeStore()
        let revision = try #require(store.snapshot().documentRevision(1, in: "items"))
        try store.apply(.patch(collection: "items", id: 1, patch: ["title": "a"]), expectedRevisions: [revision])
        #expect(throws: StoreError.revisionMismatch(current: 2)) {
            try store.apply(.patch(collection: "items", id: 1, patch: ["title": "b"]), expectedRevisions: [revision])
        }
        var reads = ReadSet()
        #expect(store.snapshot().document(1, in: "items", reads: &reads)?["title"] == "a")
    }

    @Test("a write wakes the readers of what it changed, naming it; others sleep")
    func selectiveWake() throws {
        let store = try makeStore()
        let (titleReader, _) = wait(store) { snapshot, reads in
            _ = snapshot.document(1, in: "items", fields: ["title"], reads: &reads)
        }
        let (rankReader, _) = wait(store) { snapshot, reads in
            _ = snapshot.document(1, in: "items", fields: ["rank"], reads: &reads)
        }
        let (otherReader, _) = wait(store) { snapshot, reads in _ = snapshot.document(2, in: "items", reads: &reads) }
        try store.apply(.patch(collection: "items", id: 1, patch: ["title": "changed"]))
        #expect(titleReader.all.map(\.changed) == [["items/1.title"]])
        #expect(titleReader.all.first?.revision == 2)
        #expect(rankReader.all.isEmpty)
        #expect(otherReader.all.isEmpty)
        #expect(store.waiterCount == 2)
        var reads = ReadSet()
        #expect(
            store.snapshot().document(1, in: "items", reads: &reads)?["title"] == "changed",
            "the woken reader sees the write")
    }

    @Test("a page wakes for a change on it or to the membership that decides it, not for a change elsewhere")
    func pages() throws {
        let store = try makeStore()
        let page2 = { (snapshot: StoreSnapshot, reads: inout ReadSet) in
            let ids = snapshot.orderedIDs(in: "items", reads: &reads) ?? []
            for id in ids[2..<4] { _ = snapshot.document(id, in: "items", reads: &reads) }
        }
        let (reader, _) = wait(store, reading: page2)
        try store.apply(.patch(collection: "items", id: 6, patch: ["title": "outside the page"]))
        #expect(reader.all.isEmpty)
        try store.apply(.delete(collection: "items", id: 1))
        #expect(reader.all.map(\.changed) == [["items"]], "a delete before the page shifts items into it")
        let (again, _) = wait(store, reading: page2)
        try store.apply(.patch(collection: "items", id: 4, patch: ["title": "on the page"]))
        #expect(again.all.map(\.changed) == [["items/4.title"]])
    }

    @Test("ignored fields are stored but wake nobody")
    func ignored() throws {
        let store = try makeStore(ignored: ["rank"])
        let (reader, _) = wait(store) { snapshot, reads in _ = snapshot.document(1, in: "items", reads: &reads) }
        let commit = try store.apply(.patch(collection: "items", id: 1, patch: ["rank": 100]))
        #expect(commit.changed.map(\.description) == ["items/1.rank"])
        #expect(reader.all.isEmpty)
        var reads = ReadSet()
        #expect(store.snapshot().document(1, in: "items", reads: &reads)?["rank"] == 100)
        try store.apply(.patch(collection: "items", id: 1, patch: ["title": "x"]))
        #expect(reader.all.count == 1)
    }

    @Test("a write between the read and the wait is answered at once")
    func raceBetweenReadAndWait() throws {
        let store = try makeStore()
        var reads = ReadSet()
        _ = store.snapshot().document(1, in: "items", reads: &reads)
        try store.apply(.patch(collection: "items", id: 1, patch: ["title": "raced"]))
        guard
            case .alreadyChanged(let keys, let revision) = store.wait(for: reads, after: reads.revision, wake: { _ in })
        else {
            Issue.record("the change was lost")
            return
        }
        #expect(store.names(of: keys) == ["items/1.title"])
        #expect(revision == 2)
        #expect(store.waiterCount == 0)
    }
}
