import Foundation
import LookoutJSON
import LookoutTestSupport
import Testing

/// The server's list queries against `ReferenceQuery`, which is written from the README alone.
///
/// The seed is printed; `LOOKOUT_QUERY_SEED=<n>` repeats a run.
@Suite("Collection queries against the README reference", .timeLimit(.minutes(2)))
struct QueryReferenceTests {
    // MARK: - The reference on its own

    static let handDocuments: [JSONObject] = [
        [
            "id": 7, "name": "Date*", "score": 3, "rating": 1.5, "open": true, "address": ["city": "Osaka"],
            "tags": ["new"],
        ],
        [
            "id": 2, "name": "apple", "score": 3, "rating": 4, "open": false, "address": ["city": "tokyo"],
            "tags": ["old"], "total_like": 0,
        ],
        ["id": 10, "name": "grape", "score": 3, "rating": 3, "open": nil],
        [
            "id": 1, "name": "Apple", "score": 5, "rating": 4.0, "open": true, "address": ["city": "Tokyo"],
            "tags": ["new", "sale"], "total_like": 2,
        ],
        ["id": 5, "name": "Éclair", "score": 1, "rating": 2, "open": false, "address": ["city": "Tokyo"]],
        ["id": 9, "name": "Fig", "score": 0, "rating": 5, "open": true],
        ["id": 3, "name": "Banana", "rating": 3.5, "open": nil, "address": ["city": "Kyoto"]],
        ["id": 8, "name": "apple pie", "score": 7, "rating": 4.0, "open": false, "total_like": 2],
        ["id": 6, "name": "東京", "score": 10, "rating": 4.5, "open": true],
        ["id": 4, "name": "cherry", "score": 5, "rating": nil, "open": true, "tags": []],
    ]

    static let hand = ReferenceQuery(collection: .init(name: "t", sort: [], pageSize: 4, documents: handDocuments))

    @Test(
        "the reference, by hand: filters and q",
        arguments: [
            ("", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
            ("rating=4", [1, 2, 8]),
            ("rating=4&rating=5", [1, 2, 8, 9]),
            ("rating=4.0", [1, 2, 8]),
            ("score_ne=5", [2, 3, 5, 6, 7, 8, 9, 10]),
            ("score_ne=5&score_ne=3", [3, 5, 6, 8, 9]),
            ("score_gte=3&score_lt=10", [1, 2, 4, 7, 8, 10]),
            ("score_gt=1&score_gt=4", [1, 4, 6, 8]),
            ("name_like=%5Eapp", [1, 2, 8]),
            ("name_like=e$", [1, 2, 8, 10]),
            ("name_like=a*e", [1, 2, 7, 8, 10]),
            ("name_like=zz&name_like=FIG", [9]),
            ("name_like=%C3%A9CL", [5]),
            ("score_like=5", []),
            ("q=TOKYO", [1, 2, 5]),
            ("q=%E6%9D%B1", [6]),
            ("q=e+p", [8]),
            ("address.city=Tokyo", [1, 5]),
            ("tags.0=new", [1, 7]),
            ("tags=new", []),
            ("tags_ne=new", [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
            ("open=null", [3, 10]),
            ("open=true", [1, 4, 6, 7, 9]),
            ("open=yes", []),
            ("open_ne=true", [2, 3, 5, 8, 10]),
            ("total_like=2", [1, 8]),
            ("total_like_gt=0", [1, 8]),
            ("name_gt=a", [2, 4, 5, 6, 8, 10]),
            ("rating_gt=abc", []),
            ("name=apple", [2]),
            ("name=apple&score=3", [2]),
            ("id=3&id=30", [3]),
        ])
    func handFilters(query: String, ids: [Int]) {
        let answer = Self.hand.answer(target: "/v1/t?\(query)")
        guard case .list(let list) = answer else {
            Issue.record("\(query): \(answer)")
            return
        }
        #expect(Self.ids(list.documents) == ids, "\(query)")
        #expect(list.totalCount == ids.count)
        #expect(list.paging == .none)
    }

    @Test(
        "the reference, by hand: sort and order",
        arguments: [
            ("sort=score", [3, 9, 5, 2, 7, 10, 1, 4, 8, 6]),
            ("sort=-score", [6, 8, 1, 4, 2, 7, 10, 5, 9, 3]),
            ("sort=score&order=desc", [6, 8, 1, 4, 2, 7, 10, 5, 9, 3]),
            ("sort=open,-rating", [3, 10, 2, 8, 5, 9, 6, 1, 7, 4]),
            ("sort=open,rating&order=asc,desc", [3, 10, 2, 8, 5, 9, 6, 1, 7, 4]),
            ("sort=name", [1, 3, 7, 9, 2, 8, 4, 10, 5, 6]),
            ("sort=address.city", [4, 6, 8, 9, 10, 3, 7, 1, 5, 2]),
            ("sort=-id", [10, 9, 8, 7, 6, 5, 4, 3, 2, 1]),
        ])
    func handSort(query: String, ids: [Int]) {
        guard case .list(let list) = Self.hand.answer(target: "/v1/t?\(query)") else {
            Issue.record("\(query) is refused")
            return
        }
        #expect(Self.ids(list.documents) == ids, "\(query)")
    }

    @Test("the reference, by hand: pages, links, cursors, fields")
    func handPaging() throws {
        func list(_ query: String, after: Int? = nil) throws -> ReferenceQuery.List {
            let cursor = after.map { id in Self.handDocuments.first { $0["id"] == .int(id) }! }
            guard case .list(let list) = Self.hand.answer(target: "/v1/t?\(query)", after: cursor) else {
                throw ReferenceRefused(query: query)
            }
            return list
        }
        let second = try list("page=2&per_page=3")
        #expect(Self.ids(second.documents) == [4, 5, 6])
        #expect(
            second.paging
                == .pages(
                    link: #"</v1/t?page=1&per_page=3>; rel="first", </v1/t?page=1&per_page=3>; rel="prev", "#
                        + #"</v1/t?page=3&per_page=3>; rel="next", </v1/t?page=4&per_page=3>; rel="last""#))
        let past = try list("page=9&per_page=3")
        #expect(past.documents.isEmpty && past.totalCount == 10)
        #expect(
            past.paging
                == .pages(
                    link: #"</v1/t?page=1&per_page=3>; rel="first", </v1/t?page=4&per_page=3>; rel="prev", "#
                        + #"</v1/t?page=4&per_page=3>; rel="last""#))
        let searched = try list("q=a&page=1&sort=id&per_page=2&fields=name")
        #expect(searched.totalCount == 7)
        #expect(searched.documents == [["id": 1, "name": "Apple"], ["id": 2, "name": "apple"]])
        #expect(
            searched.paging
                == .pages(
                    link: #"</v1/t?q=a&sort=id&fields=name&page=1&per_page=2>; rel="first", "#
                        + #"</v1/t?q=a&sort=id&fields=name&page=2&per_page=2>; rel="next", "#
                        + #"</v1/t?q=a&sort=id&fields=name&page=4&per_page=2>; rel="last""#))
        let none = try list("name=nothing&page=1")
        #expect(
            none.paging
                == .pages(
                    link:
                        #"</v1/t?name=nothing&page=1&per_page=4>; rel="first", </v1/t?name=nothing&page=1&per_page=4>; rel="last""#
                ))
        let firstCursor = try list("limit=4")
        #expect(Self.ids(firstCursor.documents) == [1, 2, 3, 4])
        #expect(firstCursor.paging == .cursor(hasNext: true, nextPrefix: "</v1/t?limit=4&after="))
        let lastCursor = try list("limit=4&after=opaque", after: 8)
        #expect(Self.ids(lastCursor.documents) == [9, 10])
        #expect(lastCursor.paging == .cursor(hasNext: false, nextPrefix: "</v1/t?limit=4&after="))
        let sortedCursor = try list("sort=-score&after=opaque", after: 4)
        #expect(Self.ids(sortedCursor.documents) == [2, 7, 10, 5])
    }

    @Test(
        "the reference, by hand: 400s name the parameter",
        arguments: [
            ("nope=1", "nope"), ("score_between=1", "score_between"), ("sort=nope", "sort"),
            ("sort=name&order=up", "order"), ("sort=-name&order=asc", "order"), ("page=0", "page"),
            ("page=x", "page"), ("page=1&per_page=1001", "per_page"), ("limit=-1", "limit"), ("limit=1001", "limit"),
            ("page=1&limit=2", "page"), ("country.code=JP", "country.code"),
        ])
    func handInvalid(query: String, parameter: String) {
        #expect(Self.hand.answer(target: "/v1/t?\(query)") == .invalid(parameter: parameter))
    }

    // MARK: - The server against the reference

    @Test("several hundred random queries answer as the reference predicts")
    func randomQueries() async throws {
        let seed = QueryTestData.seed
        print("QueryReferenceTests.randomQueries seed: \(seed) (LOOKOUT_QUERY_SEED repeats it)")
        try await withQueryApp(seed: seed) { app, data in
            var random = SplitMix64(seed: seed ^ 0x5155_4552_5953)
            let generators = [
                RandomQuery(reference: ReferenceQuery(collection: data.places), catalog: RandomQuery.places),
                RandomQuery(reference: ReferenceQuery(collection: data.reviews), catalog: RandomQuery.reviews),
            ]
            var mismatches: [String] = []
            var (invalid, empty, nonEmpty) = (0, 0, 0)
            var (referenceTime, serverTime) = (Duration.zero, Duration.zero)
            let count = 600
            for _ in 0..<count {
                let generator = generators[Int.random(in: 0..<100, using: &random) < 80 ? 0 : 1]
                let target = generator.make(&random)
                let started = ContinuousClock.now
                let expected = generator.reference.answer(target: target)
                referenceTime += ContinuousClock.now - started
                switch expected {
                case .invalid: invalid += 1
                case .list(let list) where list.documents.isEmpty: empty += 1
                case .list: nonEmpty += 1
                }
                let sent = ContinuousClock.now
                let response = try await app.request("GET", target)
                serverTime += ContinuousClock.now - sent
                if let problem = Self.mismatch(expected, response) {
                    if mismatches.isEmpty {
                        Issue.record(
                            "First mismatch (seed \(seed)): GET \(target)\n\(problem)\nexpected: \(Self.describe(expected))\nactual: \(Self.describe(response))"
                        )
                    }
                    mismatches.append("GET \(target): \(problem)")
                }
            }
            print(
                "QueryReferenceTests: \(count) queries, \(nonEmpty) non-empty lists, \(empty) empty, \(invalid) 400s; the reference took \(referenceTime), the server \(serverTime)"
            )
            #expect(nonEmpty > count / 3, "the generator should mostly make queries that match something")
            #expect(invalid > count / 40)
            if mismatches.count > 1 {
                let listed = mismatches.prefix(15).joined(separator: "\n")
                Issue.record(
                    "\(mismatches.count) of \(count) queries disagree with the reference (seed \(seed)); the first 15:\n\(listed)"
                )
            }
        }
    }

    @Test("each 400 of the README: status, invalid_parameter, the parameter named")
    func invalidParameters() async throws {
        try await withQueryApp(seed: QueryTestData.seed) { app, data in
            let reference = ReferenceQuery(collection: data.places)
            let made = try await app.request("GET", "/v1/places?sort=name&limit=5")
            let cursor = Self.nextTarget(made).flatMap { Self.value(of: "after", in: $0) }
            #expect(cursor != nil, "?sort=name&limit=5 should link a next page: \(Self.describe(made))")
            let after = cursor ?? "WzFd"
            let cases: [(query: String, names: [String])] = [
                ("nope=1", ["nope"]),
                ("score_between=3", ["score_between"]),
                ("sort=nope", ["sort"]),
                ("sort=score&order=up", ["order"]),
                ("page=abc", ["page"]),
                ("page=1.5", ["page"]),
                ("page=0", ["page"]),
                ("limit=-1", ["limit"]),
                ("limit=0", ["limit"]),
                ("limit=1001", ["limit"]),
                ("page=1&per_page=1001", ["per_page"]),
                ("page=1&per_page=0", ["per_page"]),
                ("page=1&limit=5", ["page", "limit"]),
                ("page=1&after=\(after)", ["page", "after"]),
                ("sort=score&limit=5&after=\(after)", ["after", "sort"]),
            ]
            for (query, names) in cases {
                let response = try await app.request("GET", "/v1/places?\(query)")
                if !query.contains("after=") {
                    guard case .invalid(let parameter) = reference.answer(target: "/v1/places?\(query)") else {
                        Issue.record("the reference accepts \(query)")
                        continue
                    }
                    #expect(names.contains(parameter))
                }
                #expect(response.status == 400, "\(query): \(Self.describe(response))")
                let error = try? response.json["error"]
                #expect(error?["code"] == "invalid_parameter", "\(query): \(Self.describe(response))")
                let message = error?["message"]?.stringValue ?? ""
                #expect(
                    names.contains { Self.names(message, $0) },
                    "\(query): the message should name \(names.joined(separator: " or ")): \(message)")
            }
        }
    }

    @Test("following next links from ?limit=K visits every match once, in the sort order")
    func cursorFollow() async throws {
        try await withQueryApp(seed: QueryTestData.seed) { app, data in
            let places = ReferenceQuery(collection: data.places)
            let reviews = ReferenceQuery(collection: data.reviews)
            let scenarios: [(ReferenceQuery, String, Int)] = [
                (places, "", 20),
                (places, "sort=category,-score", 7),
                (places, "sort=mixed", 10),
                (places, "open=true&sort=-rating,name", 4),
                (places, "category_ne=bar&sort=address.city&order=desc", 6),
                (places, "fields=name&sort=name", 9),
                (places, "sort=tags.0,distance", 11),
                (places, "q=%E6%9D%B1%E4%BA%AC", 3),
                (places, "", 1000),
                (reviews, "", 3),
                (reviews, "sort=author&order=desc", 6),
            ]
            for (reference, base, limit) in scenarios {
                let path = "/v1/\(reference.collection.name)"
                let start = path + "?" + (base.isEmpty ? "" : base + "&") + "limit=\(limit)"
                let seen = try await Self.follow(app, reference, from: start, after: nil)
                let expected = Self.ids(reference.orderedMatches(target: start).map { .object($0) })
                #expect(seen == expected, "\(start): followed \(seen.count) documents, expected \(expected.count)")
            }
        }
    }

    @Test("a cursor continues right after its last document when earlier ones are inserted or deleted")
    func cursorStability() async throws {
        try await withQueryApp(seed: QueryTestData.seed) { app, data in
            var reference = ReferenceQuery(collection: data.places)
            let editor = try await app.editorHeaders()
            func document(_ id: Int) -> JSONObject { reference.collection.documents.first { $0["id"] == .int(id) }! }
            for deletingTheLastSeen in [false, true] {
                let start = "/v1/places?sort=name,-score&limit=10"
                let first = try await app.request("GET", start)
                if let problem = Self.mismatch(reference.answer(target: start), first) {
                    Issue.record("GET \(start): \(problem)")
                }
                let seen = Self.ids(try #require(try first.json.arrayValue))
                let next = try #require(Self.nextTarget(first), "page 1 links no next page: \(Self.describe(first))")
                let last = document(try #require(seen.last))
                let ordered = reference.orderedMatches(target: start)
                let firstID = deletingTheLastSeen ? 2001 : 1001
                // One inserted before the cursor, one after; one deleted before it (or the
                // cursor's own document), one after it.
                let inserted: [JSONObject] = [
                    ["id": .int(firstID), "name": "!inserted first", "category": "cafe", "score": 5],
                    ["id": .int(firstID + 1), "name": "～inserted last", "category": "bar", "score": 1],
                ]
                let deleted = [deletingTheLastSeen ? last["id"]!.intValue! : seen[2], ordered[15]["id"]!.intValue!]
                for document in inserted {
                    let created = try await app.request(
                        "POST", "/v1/places", headers: editor,
                        body: String(decoding: JSONWriter.encode(.object(document)), as: UTF8.self))
                    #expect(created.status == 201, "POST \(document): \(Self.describe(created))")
                    reference.collection.documents.append(document)
                }
                for id in deleted {
                    let response = try await app.request("DELETE", "/v1/places/\(id)", headers: editor)
                    #expect(response.status == 204, "DELETE \(id): \(Self.describe(response))")
                    reference.collection.documents.removeAll { $0["id"] == .int(id) }
                }
                #expect(
                    ReferenceQuery.precedes(inserted[0], last, by: try reference.sortKeys(sort: "name", order: nil)))
                let rest = try await Self.follow(app, reference, from: next, after: last)
                let keys = try reference.sortKeys(sort: "name,-score", order: nil)
                let expected = reference.orderedMatches(target: start).filter {
                    ReferenceQuery.precedes(last, $0, by: keys)
                }
                #expect(
                    rest == Self.ids(expected.map { .object($0) }),
                    "deleting \(deleted), inserting \(inserted.map { $0["id"]! }): after \(seen) came \(rest)")
                #expect(Set(rest).isDisjoint(with: seen), "no document seen twice")
                #expect(rest.contains(firstID + 1) && !rest.contains(deleted[1]))
            }
        }
    }

    @Test("operators apply to dotted names: address.city_ne is _ne on address.city")
    func dottedOperators() async throws {
        try await withQueryApp(seed: QueryTestData.seed) { app, data in
            let reference = ReferenceQuery(collection: data.places)
            for query in [
                "address.city=Tokyo", "address.city_ne=Tokyo", "address.zip_gt=105-0001", "address.city_like=%5Eto",
                "tags.0_ne=new", "tags.1_lte=m", "address.city_nope=1",
            ] {
                let target = "/v1/places?\(query)&fields=address,tags"
                if let problem = Self.mismatch(reference.answer(target: target), try await app.request("GET", target)) {
                    Issue.record("GET \(target): \(problem)")
                }
            }
        }
    }

    @Test("strings compare by Unicode scalars: café (NFC) and café (NFD) differ")
    func unicodeScalars() async throws {
        try await withQueryApp(seed: QueryTestData.seed) { app, data in
            let reference = ReferenceQuery(collection: data.edges)
            let cases: [(String, [Int])] = [
                ("word=caf%C3%A9", [1]),
                ("word=cafe%CC%81", [2]),
                ("word_ne=caf%C3%A9", [2, 3, 4, 5, 6]),
                ("sort=word", [5, 3, 2, 6, 1, 4]),
                ("sort=-word", [4, 1, 6, 2, 3, 5]),
                ("word_gt=cafe", [1, 2, 4, 6]),
                ("word_lte=cafe%CC%81", [2, 3, 5]),
            ]
            for (query, ids) in cases {
                let target = "/v1/edges?\(query)"
                let expected = reference.answer(target: target)
                guard case .list(let list) = expected else {
                    Issue.record("the reference refuses \(query)")
                    continue
                }
                #expect(Self.ids(list.documents) == ids, "the reference on \(query)")
                if let problem = Self.mismatch(expected, try await app.request("GET", target)) {
                    Issue.record("GET \(target): \(problem)")
                }
            }
        }
    }

    @Test("README ambiguities: the readings this reference chose (a failure here is a question, not a verdict)")
    func readingsOfAmbiguities() async throws {
        try await withQueryApp(seed: QueryTestData.seed) { app, data in
            let edges = ReferenceQuery(collection: data.edges)
            let cases: [(reading: String, query: String)] = [
                ("missing and null tie in the sort order (then by id)", "sort=v"),
                ("missing and null tie descending too", "sort=-v"),
                ("q does not search object keys", "q=word"),
                ("_like compares Unicode scalars: cafe is in cafe+U+0301", "word_like=cafe"),
                ("q compares Unicode scalars too", "q=CAFE"),
                ("fields naming a field no document has leaves it out", "fields=nope"),
                ("of a dotted name only the top-level field is checked", "word.x=1"),
            ]
            for (reading, query) in cases {
                let target = "/v1/edges?\(query)"
                let response = try await app.request("GET", target)
                if let problem = Self.mismatch(edges.answer(target: target), response) {
                    Issue.record("Reading \"\(reading)\": GET \(target): \(problem)")
                }
            }
            // X-Total-Count on a later cursor page: every match, not only those after the cursor.
            let places = ReferenceQuery(collection: data.places)
            let first = try await app.request("GET", "/v1/places?limit=5")
            if let next = Self.nextTarget(first) {
                let page = try await app.request("GET", next)
                #expect(
                    page.header("X-Total-Count") == "\(places.collection.documents.count)",
                    "Reading \"X-Total-Count counts every match on a cursor page\": GET \(next)")
            }
        }
    }

    // MARK: - Running the server

    func withQueryApp(seed: UInt64, _ body: (LiveApp, QueryTestData) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-query-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = try QueryTestData.writeDataFile(seed: seed, into: directory)
        let data = try QueryTestData(seed: seed)
        try await withApp(configure: { $0.dataFile = path }) { app in try await body(app, data) }
    }

    /// Follows `rel="next"` from `target` until there is none, checking each page against
    /// the reference, and returns the ids seen.
    static func follow(_ app: LiveApp, _ reference: ReferenceQuery, from target: String, after: JSONObject?)
        async throws -> [Int]
    {
        var (target, after, seen) = (target, after, [Int]())
        for _ in 0..<300 {
            let response = try await app.request("GET", target)
            // X-Total-Count on a page after a cursor is a reading of its own (see readingsOfAmbiguities).
            if let problem = mismatch(
                reference.answer(target: target, after: after), response, checkTotal: after == nil)
            {
                Issue.record("GET \(target): \(problem)")
                return seen
            }
            let page = ids(try response.json.arrayValue ?? [])
            seen += page
            guard let next = nextTarget(response), let lastID = page.last else { return seen }
            after = reference.collection.documents.first { $0["id"] == .int(lastID) }
            target = next
        }
        Issue.record("more than 300 pages from \(target)")
        return seen
    }

    // MARK: - Comparing

    /// Why the response differs from the reference's answer, or nil when it agrees.
    static func mismatch(_ expected: ReferenceQuery.Answer, _ response: TestHTTPResponse, checkTotal: Bool = true)
        -> String?
    {
        switch expected {
        case .invalid(let parameter):
            guard response.status == 400 else { return "status \(response.status), expected 400 naming \(parameter)" }
            let error = try? response.json["error"]
            guard error?["code"] == "invalid_parameter" else {
                return "error code \(String(describing: error?["code"]))"
            }
            let message = error?["message"]?.stringValue ?? ""
            return names(message, parameter) ? nil : "the message does not name \(parameter): \(message)"
        case .list(let list):
            guard response.status == 200 else { return "status \(response.status): \(response.text.prefix(300))" }
            guard let actual = try? response.json.arrayValue else { return "the body is not an array" }
            var problems: [String] = []
            if !sameJSON(.array(actual), .array(list.documents)) {
                let (expectedIDs, actualIDs) = (ids(list.documents), ids(actual))
                if expectedIDs != actualIDs {
                    problems.append("ids \(short(actualIDs)), expected \(short(expectedIDs))")
                } else if let index = actual.indices.first(where: { !sameJSON(actual[$0], list.documents[$0]) }) {
                    problems.append(
                        "document \(index): \(compact(actual[index])), expected \(compact(list.documents[index]))")
                }
            }
            let total = response.header("X-Total-Count")
            if checkTotal, total != "\(list.totalCount)" {
                problems.append("X-Total-Count \(total ?? "none"), expected \(list.totalCount)")
            }
            let link = response.headers(named: "Link").joined(separator: ", ")
            switch list.paging {
            case .none:
                break
            case .pages(let expectedLink):
                if link != expectedLink {
                    problems.append("Link \(link.isEmpty ? "none" : link)\n  expected \(expectedLink)")
                }
            case .cursor(let hasNext, let prefix):
                let next = link.contains(#"rel="next""#)
                if next != hasNext {
                    problems.append(
                        "Link \(link.isEmpty ? "none" : link), expected \(hasNext ? "" : "no ")rel=\"next\"")
                } else if hasNext, !(link.hasPrefix(prefix) && link.hasSuffix(#">; rel="next""#)) {
                    problems.append("Link \(link), expected \(prefix)CURSOR>; rel=\"next\"")
                }
            }
            return problems.isEmpty ? nil : problems.joined(separator: "; ")
        }
    }

    /// Equal value by value: members in any order, but `4` and `4.0` differ.
    static func sameJSON(_ left: JSONValue, _ right: JSONValue) -> Bool {
        switch (left, right) {
        case (.object(let a), .object(let b)):
            a.count == b.count && a.allSatisfy { member in b[member.key].map { sameJSON(member.value, $0) } ?? false }
        case (.array(let a), .array(let b)):
            a.count == b.count && zip(a, b).allSatisfy { sameJSON($0, $1) }
        default:
            left == right
        }
    }

    /// Whether an error message names `parameter` (`page` inside `per_page` does not count).
    static func names(_ message: String, _ parameter: String) -> Bool {
        let text = parameter == "page" ? message.replacingOccurrences(of: "per_page", with: "") : message
        return text.contains(parameter)
    }

    static func ids(_ documents: [JSONValue]) -> [Int] {
        documents.map { $0["id"]?.intValue ?? -1 }
    }

    /// The target of the `rel="next"` link, if any.
    static func nextTarget(_ response: TestHTTPResponse) -> String? {
        let link = response.headers(named: "Link").joined(separator: ", ")
        guard let end = link.range(of: #">; rel="next""#) else { return nil }
        guard let start = link[..<end.lowerBound].lastIndex(of: "<") else { return nil }
        return String(link[link.index(after: start)..<end.lowerBound])
    }

    /// The raw value of the first `name=` parameter of a target.
    static func value(of name: String, in target: String) -> String? {
        let query = target.split(separator: "?", maxSplits: 1).last ?? ""
        return query.split(separator: "&").first { $0.hasPrefix(name + "=") }.map {
            String($0.dropFirst(name.count + 1))
        }
    }

    /// Ids for a message: the first 12, then how many there are.
    static func short(_ ids: [Int]) -> String {
        ids.count <= 12 ? "\(ids)" : "\(ids.prefix(12).map(String.init).joined(separator: ", "))… (\(ids.count) ids)"
    }

    static func compact(_ value: JSONValue) -> String {
        String(decoding: JSONWriter.encode(value), as: UTF8.self)
    }

    static func describe(_ answer: ReferenceQuery.Answer) -> String {
        switch answer {
        case .invalid(let parameter): return "400 invalid_parameter naming \(parameter)"
        case .list(let list):
            var text = "200 X-Total-Count: \(list.totalCount) body: \(compact(.array(list.documents)).prefix(3000))"
            switch list.paging {
            case .none: break
            case .pages(let link): text += "\n  Link: \(link)"
            case .cursor(let hasNext, let prefix):
                text += "\n  Link: " + (hasNext ? "\(prefix)CURSOR>; rel=\"next\"" : "no next")
            }
            return text
        }
    }

    static func describe(_ response: TestHTTPResponse) -> String {
        let headers = ["X-Total-Count", "Link"].compactMap { name in response.header(name).map { "\(name): \($0)" } }
        return "\(response.status) \(headers.joined(separator: "\n  ")) body: \(response.text.prefix(3000))"
    }
}

struct ReferenceRefused: Error {
    let query: String
}
