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

    @Test("collections refuse documents without a unique integer id")
    func documentIDs() {
        #expect(throws: StoreError.self) { try DocumentCollection(name: "a", documents: [["id": "1"]]) }
        #expect(throws: StoreError.self) { try DocumentCollection(name: "a", documents: [["id": 1], ["id": 1]]) }
        #expect(throws: StoreError.self) { try DocumentCollection(name: "Bad-Name", documents: []) }
    }
}
