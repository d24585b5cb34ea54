import LookoutJSON
import LookoutStore
import Testing

@testable import LookoutApp

@Suite("Render cache")
struct RenderCacheTests {
    @Test("renders once per store revision what it keeps, every time what it does not, nothing for nil")
    func keeping() throws {
        let store = try Store([try DocumentCollection(name: "things", documents: [["id": 1, "n": 1]])], epoch: "e")
        let cache = RenderCache<Int>()
        var renders = 0
        let first = store.snapshot()
        for _ in 0..<3 {
            #expect(
                cache.view(for: 1, at: first) { _ in
                    renders += 1; return ([1], keep: true)
                }?.body == [1])
        }
        #expect(renders == 1)
        try store.apply(.patch(collection: "things", id: 1, patch: ["n": 2]))
        let second = store.snapshot()
        #expect(
            cache.view(for: 1, at: second) { _ in
                renders += 1; return ([2], keep: true)
            }?.body == [2])
        #expect(renders == 2, "a newer revision renders again")
        #expect(
            cache.view(for: 1, at: first) { _ in
                renders += 1; return ([1], keep: true)
            }?.body == [1])
        #expect(
            cache.view(for: 1, at: second) { _ in
                renders += 1; return ([9], keep: true)
            }?.body == [2], "an older render does not replace a newer one")
        for _ in 0..<3 {
            #expect(
                cache.view(for: 2, at: second) { _ in
                    renders += 1; return ([2], keep: false)
                }?.body == [2])
        }
        #expect(renders == 6)
        #expect(cache.view(for: 3, at: second) { _ in nil } == nil)
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
