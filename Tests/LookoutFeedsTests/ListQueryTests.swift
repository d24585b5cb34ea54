import LookoutFeeds
import LookoutJSON
import LookoutStore
import Testing

@Suite("List queries: parsing, evaluation, read sets")
struct ListQueryTests {
    /// Six shops: ids 1–6, ratings 1–6 (shop 6 has a double), names with mixed case.
    func makeSnapshot(pageSize: Int = 2) throws -> StoreSnapshot {
        let shops: [JSONValue] = [
            ["id": 1, "name": "Alpha", "rating": 1, "open": true, "address": ["city": "Tokyo"], "tags": ["new"]],
            ["id": 2, "name": "beta", "rating": 2, "open": false, "address": ["city": "Osaka"]],
            ["id": 3, "name": "Gamma Café", "rating": 3, "open": true],
            ["id": 4, "name": "delta", "rating": 4, "note": "ALPHA fans"],
            ["id": 5, "name": "Epsilon", "rating": 5, "open": true],
            ["id": 6, "name": "喫茶 zeta", "rating": 6.0, "open": false],
        ]
        return try Store(
            [
                try DocumentCollection(
                    name: "shops", options: .init(sort: ["-rating"], pageSize: pageSize), documents: shops)
            ], epoch: "e"
        ).snapshot()
    }

    func query(_ text: String, _ snapshot: StoreSnapshot) throws(QueryError) -> ListQuery {
        let pairs = text.split(separator: "&").map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (name: String(parts[0]), value: parts.count > 1 ? String(parts[1]) : "")
        }
        return try ListQuery(collection: "shops", parameters: pairs, in: snapshot)!
    }

    func ids(_ text: String, _ snapshot: StoreSnapshot) throws -> [Int] {
        var reads = ReadSet()
        return try query(text, snapshot).evaluate(in: snapshot, reads: &reads).documents.compactMap {
            $0["id"]?.intValue
        }
    }

    @Test("filters read values as the field's type; repeats are any-of for = and like, all-of otherwise")
    func filters() throws {
        let snapshot = try makeSnapshot()
        #expect(try ids("rating=6", snapshot) == [6], "6 matches 6.0")
        #expect(try ids("rating=2&rating=3", snapshot) == [3, 2])
        #expect(try ids("rating_gte=2&rating_lt=4", snapshot) == [3, 2])
        #expect(try ids("rating_gt=2&rating_gt=4", snapshot) == [6, 5])
        #expect(try ids("rating_ne=1&rating_ne=6", snapshot) == [5, 4, 3, 2])
        #expect(try ids("open=true", snapshot) == [5, 3, 1])
        #expect(try ids("open_ne=true", snapshot) == [6, 4, 2], "a missing field matches _ne")
        #expect(try ids("rating=abc", snapshot) == [], "text that is not a number matches no number")
        #expect(try ids("name_like=^e", snapshot) == [5])
        #expect(try ids("name_like=a$&name_like=^gam*caf", snapshot) == [6, 4, 3, 2, 1])
        #expect(try ids("name_like=^gam*caf$", snapshot) == [], "caf$ does not end Café")
        #expect(try ids("address.city=Tokyo", snapshot) == [1])
        #expect(try ids("address.city_ne=Tokyo", snapshot) == [6, 5, 4, 3, 2], "an operator on a dotted name")
        #expect(try ids("address.city_like=^os", snapshot) == [2])
        #expect(try ids("address.city_nope=1", snapshot) == [], "a nested name is not checked: city_nope")
        #expect(try ids("tags.0=new", snapshot) == [1])
        #expect(try ids("name_gte=delta", snapshot) == [6, 4], "strings compare by Unicode scalars")
        #expect(try ids("q=alpha", snapshot) == [4, 1], "q ignores case and reads every string")
        #expect(try ids("q=tokyo", snapshot) == [1], "q reads nested strings")
        #expect(try ids("q=喫茶", snapshot) == [6])
    }

    @Test("strings compare by Unicode scalars: canonically equivalent texts differ")
    func scalars() throws {
        let words: [JSONValue] = [
            ["id": 1, "w": "caf\u{E9}"], ["id": 2, "w": "cafe\u{301}"], ["id": 3, "w": "cafe"],
        ]
        let snapshot = try Store([try DocumentCollection(name: "shops", documents: words)], epoch: "e").snapshot()
        #expect(try ids("w=caf\u{E9}", snapshot) == [1])
        #expect(try ids("w=cafe\u{301}", snapshot) == [2])
        #expect(try ids("sort=w", snapshot) == [3, 2, 1], "e + U+0301 sorts before U+00E9")
        #expect(try ids("q=CAFE", snapshot) == [2, 3], "q compares scalars, as _like does")
        #expect(try ids("w_like=cafe", snapshot) == [2, 3])

        let astral: [JSONValue] = [["id": 1, "w": "\u{1F600}"], ["id": 2, "w": "\u{FFFD}"], ["id": 3, "w": "z"]]
        let other = try Store([try DocumentCollection(name: "shops", documents: astral)], epoch: "e").snapshot()
        #expect(try ids("sort=w", other) == [3, 2, 1], "U+1F600 after U+FFFD, as scalars (not UTF-16) order them")
    }

    @Test("sort keys, order, the declared default and ties by id")
    func sorting() throws {
        let snapshot = try makeSnapshot()
        #expect(try ids("", snapshot) == [6, 5, 4, 3, 2, 1], "declared -rating")
        #expect(try ids("sort=rating", snapshot) == [1, 2, 3, 4, 5, 6])
        #expect(try ids("sort=open,-id", snapshot) == [4, 6, 2, 5, 3, 1], "missing first, false before true")
        #expect(try ids("sort=open,id&order=desc,desc", snapshot) == [5, 3, 1, 6, 2, 4])
        #expect(try ids("sort=address.city", snapshot) == [3, 4, 5, 6, 2, 1])
    }

    @Test("page-number and cursor windows")
    func windows() throws {
        let snapshot = try makeSnapshot()
        var reads = ReadSet()
        let page = try query("page=2&per_page=4", snapshot).evaluate(in: snapshot, reads: &reads)
        #expect(page.documents.compactMap { $0["id"]?.intValue } == [2, 1])
        #expect(page.total == 6)
        guard case .page(let window, let lastPage) = page.window else {
            Issue.record("expected a page")
            return
        }
        #expect(window.number == 2 && !window.hasNextPage && lastPage == 2)

        var seen: [Int] = []
        var next: String? = "limit=4"
        while let text = next {
            let result = try query(text, snapshot).evaluate(in: snapshot, reads: &reads)
            seen += result.documents.compactMap { $0["id"]?.intValue }
            guard case .cursor(let cursor, _) = result.window else { return }
            next = cursor.map { "limit=4&after=\($0.encoded)" }
        }
        #expect(seen == [6, 5, 4, 3, 2, 1])
    }

    @Test("over many documents, pages and cursor pages are the whole list's order, cut up")
    func windowsOfMany() throws {
        // Ratings repeat and names share prefixes, so sort keys tie and ids decide.
        let shops: [JSONValue] = (1...500).map { id in
            let name = ["Ab", "ab", "Äb", "b", "B a"][id % 5] + String(id % 7)
            return [
                "id": .int(id * 7 % 503), "name": .string(name), "rating": .int(id % 11), "open": .bool(id % 3 == 0),
            ]
        }
        let snapshot = try Store(
            [try DocumentCollection(name: "shops", options: .init(sort: ["-rating"]), documents: shops)], epoch: "e"
        ).snapshot()
        for sort in ["", "sort=rating,-name&", "sort=-name&", "sort=open,name,-rating&", "rating_gt=3&sort=name&"] {
            let all = try ids(sort, snapshot)
            #expect(all.count == (sort.hasPrefix("rating_gt") ? 317 : 500))
            var pages: [Int] = []
            for number in 1...80 {
                pages += try ids("\(sort)page=\(number)&per_page=7", snapshot)
            }
            #expect(pages == all, "pages of 7, \(sort)")
            #expect(
                try ids("\(sort)page=3&per_page=200", snapshot) == Array(all.dropFirst(400)), "a page mostly sorted")
            var walked: [Int] = []
            var next: String? = "\(sort)limit=9"
            while let text = next {
                var reads = ReadSet()
                let result = try query(text, snapshot).evaluate(in: snapshot, reads: &reads)
                walked += result.documents.compactMap { $0["id"]?.intValue }
                guard case .cursor(let cursor, _) = result.window else { break }
                next = cursor.map { "\(sort)limit=9&after=\($0.encoded)" }
            }
            #expect(walked == all, "cursor pages of 9, \(sort)")
        }
    }

    @Test(
        "a page records the membership, each document's filter field, the sort fields of matches and only its own items' fields"
    )
    func readSets() throws {
        let snapshot = try makeSnapshot()
        var reads = ReadSet()
        let result = try query("rating_gte=3&open=true&page=1&per_page=1&fields=name", snapshot).evaluate(
            in: snapshot, reads: &reads)
        #expect(result.documents == [["id": 5, "name": "Epsilon"]])
        let keys = Set(reads.keys.map(\.description))
        #expect(keys.contains("shops"))
        #expect((1...6).allSatisfy { keys.contains("shops/\($0).rating") }, "the first filter decides every document")
        #expect(!keys.contains("shops/1.open") && !keys.contains("shops/2.open"), "no need: they failed rating first")
        #expect(keys.contains("shops/3.open") && keys.contains("shops/6.open"))
        #expect(keys.contains("shops/5.name"))
        #expect(!keys.contains("shops/3.name"), "shop 3 matches but is not on the page")
    }

    @Test(
        "bad parameters name themselves",
        arguments: [
            ("colour=red", "colour"), ("rating_gtx=1", "rating_gtx"), ("sort=colour", "sort"), ("sort=", "sort"),
            ("sort=rating&order=up", "order"), ("order=asc", "order"), ("sort=-rating&order=asc", "order"),
            ("page=0", "page"), ("page=x", "page"), ("per_page=1001", "per_page"), ("limit=-1", "limit"),
            ("page=1&limit=2", "limit"), ("after=%%%", "after"), ("expand=name", "expand"),
        ])
    func badParameters(_ text: String, _ parameter: String) throws {
        let snapshot = try makeSnapshot()
        #expect(throws: QueryError.self) { try query(text, snapshot) }
        do {
            _ = try query(text, snapshot)
        } catch {
            #expect(error.parameter == parameter)
        }
    }

    @Test("a cursor is only valid with the sort it was made with")
    func cursorSort() throws {
        let snapshot = try makeSnapshot()
        let cursor = ListCursor(sort: ["-rating"], values: [.int(4)], id: 4).encoded
        #expect(try ids("limit=2&after=\(cursor)", snapshot) == [3, 2])
        #expect(throws: QueryError("after", "this cursor was made for sort=-rating; send that sort with it.")) {
            try query("sort=name&limit=2&after=\(cursor)", snapshot)
        }
        #expect(try ListCursor(decoding: cursor, for: ["-rating"]) == ListCursor(sort: ["-rating"], values: [4], id: 4))
    }
}
