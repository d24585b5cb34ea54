import LookoutHTTP
import LookoutJSON
import LookoutStore
import Testing

@testable import LookoutApp

@Suite("Render cache")
struct RenderCacheTests {
    func view(_ body: [UInt8], _ snapshot: StoreSnapshot) -> RenderedView {
        RenderedView(body: body, reads: ReadSet(), revision: snapshot.revision)
    }

    @Test("renders once per store revision, and an older render never replaces a newer one")
    func rendersOncePerRevision() throws {
        let store = try Store([try DocumentCollection(name: "things", documents: [["id": 1, "n": 1]])], epoch: "e")
        let cache = RenderCache<Int>()
        var renders = 0
        let first = store.snapshot()
        for _ in 0..<3 {
            #expect(
                cache.view(for: 1, at: first) {
                    renders += 1; return view([1], $0)
                }.body == [1])
        }
        #expect(renders == 1)
        try store.apply(.patch(collection: "things", id: 1, patch: ["n": 2]))
        let second = store.snapshot()
        #expect(
            cache.view(for: 1, at: second) {
                renders += 1; return view([2], $0)
            }.body == [2])
        #expect(renders == 2, "a newer revision renders again")
        #expect(
            cache.view(for: 1, at: first) {
                renders += 1; return view([1], $0)
            }.body == [1])
        #expect(
            cache.view(for: 1, at: second) {
                renders += 1; return view([9], $0)
            }.body == [2],
            "an older render does not replace a newer one")
        struct Failure: Error {}
        #expect(throws: Failure.self) { try cache.view(for: 5, at: second) { _ in throw Failure() } }
        #expect(cache.count == 1, "a failed render keeps nothing")
    }

    @Test("a full cache keeps nothing new while all are current; a newer revision drops every older view")
    func bounded() throws {
        let store = try Store([try DocumentCollection(name: "things", documents: [["id": 1, "n": 1]])], epoch: "e")
        let cache = RenderCache<Int>(capacity: 3)
        let first = store.snapshot()
        for key in 0..<5 { _ = cache.view(for: key, at: first) { view([UInt8(key)], $0) } }
        #expect(cache.count == 3)
        var renders = 0
        _ = cache.view(for: 4, at: first) {
            renders += 1; return view([4], $0)
        }
        #expect(renders == 1, "a key that found no room is rendered every time")
        try store.apply(.patch(collection: "things", id: 1, patch: ["n": 2]))
        _ = cache.view(for: 4, at: store.snapshot()) { view([4], $0) }
        #expect(cache.count == 1, "the views of the older revision made room")
    }

    @Test("the views kept add up to at most the byte capacity; a replaced view frees its bytes")
    func boundedInBytes() throws {
        let store = try Store([try DocumentCollection(name: "things", documents: [["id": 1, "n": 1]])], epoch: "e")
        let snapshot = store.snapshot()
        let size = view([UInt8](repeating: 1, count: 1_000), snapshot).size
        let cache = RenderCache<Int>(capacity: 100, byteCapacity: 3 * size)
        for key in 0..<5 { _ = cache.view(for: key, at: snapshot) { view([UInt8](repeating: 1, count: 1_000), $0) } }
        #expect(cache.count == 3, "bytes for three views")
        cache.keep(view([UInt8](repeating: 2, count: 1_000), snapshot), for: 0)
        #expect(cache.count == 3, "a view replaced in place fits where it was")
        #expect(cache.value(for: 0, at: snapshot.revision)?.body.first == 2)
        let huge = RenderCache<Int>(byteCapacity: size - 1)
        _ = huge.view(for: 1, at: snapshot) { view([UInt8](repeating: 1, count: 1_000), $0) }
        #expect(huge.count == 0, "a view larger than the whole capacity is not kept")
    }

    @Test("entity tags parse with and without quotes and W/, and If-None-Match lists match")
    func entityTags() {
        let tag = EntityTag(epoch: "00ab", revision: 42)
        #expect(tag.header == #""00ab-42""#)
        #expect(EntityTag(parsing: #""00ab-42""#) == tag)
        #expect(EntityTag(parsing: #"W/"00ab-42""#) == tag)
        #expect(EntityTag(parsing: "00ab-42") == tag)
        #expect(EntityTag(parsing: "garbage") == nil)
        #expect(tag.isMatched(byIfNoneMatch: #""x-1", "00ab-42""#))
        #expect(tag.isMatched(byIfNoneMatch: "*"))
        #expect(!tag.isMatched(byIfNoneMatch: #""00ab-41""#))
        #expect(!tag.isMatched(byIfNoneMatch: nil))
    }
}
