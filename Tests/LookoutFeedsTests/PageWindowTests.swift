import LookoutFeeds
import LookoutJSON
import LookoutStore
import Testing

@Suite("Paging")
struct PageWindowTests {
    @Test("30 items in pages of 10: three pages, the last without a next page")
    func threePages() {
        #expect(PageWindow(number: 1, size: 10, total: 30).range == 0..<10)
        #expect(PageWindow(number: 1, size: 10, total: 30).hasNextPage)
        #expect(PageWindow(number: 3, size: 10, total: 30).range == 20..<30)
        #expect(!PageWindow(number: 3, size: 10, total: 30).hasNextPage)
    }

    @Test("a page past the end is empty and has no next page", arguments: [4, 5, 1_000, Int.max])
    func pastTheEnd(_ number: Int) {
        let window = PageWindow(number: number, size: 10, total: 30)
        #expect(window.range.isEmpty)
        #expect(!window.hasNextPage)
    }

    @Test("a partial last page")
    func partial() {
        let window = PageWindow(number: 2, size: 10, total: 15)
        #expect(window.range == 10..<15)
        #expect(!window.hasNextPage)
    }

    @Test("the information page follows the collection's page size and declared sort, and records its reads")
    func informationPage() throws {
        let documents: [JSONValue] = (1...5).map { ["id": .int($0), "title": .string("t\($0)")] }
        let store = try Store(
            [
                try DocumentCollection(name: "info_feed", options: .init(pageSize: 2), documents: documents),
                try DocumentCollection(
                    name: "category_feeds", options: .init(sort: ["rank"]),
                    documents: [["id": 1, "rank": 2], ["id": 2, "rank": 1]]),
            ], epoch: "e")
        let feeds = SeedFeeds()
        let snapshot = store.snapshot()
        var reads = ReadSet()
        let page = try #require(feeds.informationPage(3, in: snapshot, reads: &reads))
        #expect(page["page"] == .int(3))
        #expect(page["has_next_page"] == .bool(false))
        #expect(page["information"]?.arrayValue?.compactMap { $0["id"]?.intValue } == [5])
        #expect(reads.keys.map(\.description) == ["info_feed", "info_feed/5.title"])
        var listReads = ReadSet()
        let categories = try #require(feeds.list("category_feeds", in: snapshot, reads: &listReads)?.arrayValue)
        #expect(categories.compactMap { $0["id"]?.intValue } == [2, 1])
        #expect(
            Set(listReads.keys.map(\.description)) == [
                "category_feeds", "category_feeds/1.rank", "category_feeds/2.rank",
            ])
        var none = ReadSet()
        #expect(feeds.list("missing", in: snapshot, reads: &none) == nil)
    }

    @Test("collections refuse documents without a unique integer id")
    func documentIDs() {
        #expect(throws: StoreError.self) { try DocumentCollection(name: "a", documents: [["id": "1"]]) }
        #expect(throws: StoreError.self) { try DocumentCollection(name: "a", documents: [["id": 1], ["id": 1]]) }
        #expect(throws: StoreError.self) { try DocumentCollection(name: "Bad-Name", documents: []) }
    }
}
