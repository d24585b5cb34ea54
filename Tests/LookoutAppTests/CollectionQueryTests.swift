import Foundation
import LookoutJSON
import LookoutTestSupport
import Testing

/// Every list parameter through a real server, on the demo data; and long-polls on
/// filtered, sorted and paged lists that wake exactly when their answer changes.
@Suite("Collection queries through the server", .timeLimit(.minutes(2)))
struct CollectionQueryTests {
    static let json = ("Content-Type", "application/json")

    func ids(_ response: TestHTTPResponse, key: String? = nil) throws -> [Int] {
        let list = try key.map { try response.json[$0] } ?? response.json
        return try #require(list?.arrayValue).compactMap { $0["id"]?.intValue }
    }

    @Test("filters, search, sort and order, each through HTTP")
    func parameters() async throws {
        try await withApp { app in
            let cafe = try await app.request("GET", "/v1/pickup_feeds?category_name=%E3%82%AB%E3%83%95%E3%82%A7")
            #expect(try ids(cafe) == [2])
            #expect(try ids(try await app.request("GET", "/v1/pickup_feeds?category_id=4&category_id=5")) == [2, 3, 5])
            #expect(try ids(try await app.request("GET", "/v1/pickup_feeds?rating_gte=4.6")) == [1, 4, 6])
            #expect(try ids(try await app.request("GET", "/v1/pickup_feeds?rating_lte=3.9")) == [5, 7])
            #expect(try ids(try await app.request("GET", "/v1/pickup_feeds?rating_gt=4.6&rating_lt=4.8")) == [1])
            #expect(try ids(try await app.request("GET", "/v1/pickup_feeds?category_id_ne=4")) == [1, 3, 4, 6, 7, 8])
            #expect(try ids(try await app.request("GET", "/v1/pickup_feeds?shop_name_like=%5Ecaf")) == [2])
            #expect(try ids(try await app.request("GET", "/v1/galleries?q=soba")) == [11])
            let sorted = try await app.request("GET", "/v1/pickup_feeds?sort=-rating,shop_name&fields=rating")
            #expect(try ids(sorted) == [6, 1, 4, 2, 8, 3, 7, 5])
            #expect(try sorted.json.arrayValue?.first == ["id": 6, "rating": 4.8], "fields= projects")
            let reversed = try await app.request("GET", "/v1/category_feeds?sort=rank&order=desc")
            #expect(try ids(reversed) == [7, 5, 8, 3, 6, 1, 4, 2])
            #expect(try ids(try await app.request("GET", "/v1/category_feeds")) == [2, 4, 1, 6, 3, 8, 5, 7])
        }
    }

    @Test("page-number paging: X-Total-Count and Link keep the other parameters")
    func pages() async throws {
        try await withApp { app in
            let page = try await app.request("GET", "/v1/galleries?fields=title&page=2&per_page=5&wait=0")
            #expect(try ids(page) == [6, 7, 8, 9, 10])
            #expect(page.header("X-Total-Count") == "24")
            #expect(
                page.header("Link")
                    == #"</v1/galleries?fields=title&page=1&per_page=5>; rel="first", "#
                    + #"</v1/galleries?fields=title&page=1&per_page=5>; rel="prev", "#
                    + #"</v1/galleries?fields=title&page=3&per_page=5>; rel="next", "#
                    + #"</v1/galleries?fields=title&page=5&per_page=5>; rel="last""#)
            let past = try await app.request("GET", "/v1/galleries?page=9&per_page=5")
            #expect(try ids(past) == [])
            #expect(past.header("Link")?.contains(#"page=5&per_page=5>; rel="prev""#) == true)
            #expect(past.header("Link")?.contains(#"rel="next""#) == false)
            let all = try await app.request("GET", "/v1/galleries")
            #expect(all.header("X-Total-Count") == "24")
            #expect(all.header("Link") == nil)
        }
    }

    @Test("cursor paging follows Link next to the end, stable across an insert and a delete before the cursor")
    func cursors() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let first = try await app.request("GET", "/v1/galleries?sort=-id&limit=10")
            #expect(try ids(first) == Array((15...24).reversed()))
            let next = try #require(Self.next(first))
            // Deleted and inserted before the cursor: neither shifts what comes next.
            #expect(try await app.request("DELETE", "/v1/galleries/20", headers: editor).status == 204)
            #expect(
                try await app.request("POST", "/v1/galleries", headers: editor, body: #"{"title":"new"}"#).status == 201
            )
            let second = try await app.request("GET", next)
            #expect(try ids(second) == Array((5...14).reversed()))
            let third = try await app.request("GET", try #require(Self.next(second)))
            #expect(try ids(third) == [4, 3, 2, 1])
            #expect(Self.next(third) == nil)
            let mismatch = try await app.request("GET", next.replacingOccurrences(of: "sort=-id", with: "sort=id"))
            #expect(mismatch.status == 400)
        }
    }

    /// The target of a response's `rel="next"` link.
    static func next(_ response: TestHTTPResponse) -> String? {
        guard let header = response.header("Link") else { return nil }
        for link in header.split(separator: ",") where link.contains(#"rel="next""#) {
            guard let start = link.firstIndex(of: "<"), let end = link.firstIndex(of: ">") else { return nil }
            return String(link[link.index(after: start)..<end])
        }
        return nil
    }

    @Test("info_feed is declared with a page envelope: filters and per_page apply, page is required")
    func envelope() async throws {
        try await withApp { app in
            let page = try await app.request("GET", "/v1/info_feed?title_like=ramen&page=1")
            #expect(try page.json["page"] == 1)
            #expect(try page.json["has_next_page"] == false)
            #expect(try ids(page, key: "information") == [26])
            let small = try await app.request("GET", "/v1/info_feed?page=2&per_page=4")
            #expect(try ids(small, key: "information") == [5, 6, 7, 8])
            #expect(try small.json["has_next_page"] == true)
            #expect(small.header("X-Total-Count") == "30")
            for target in ["/v1/info_feed", "/v1/info_feed?limit=3&page=1", "/v1/info_feed?page=0"] {
                #expect(try await app.request("GET", target).status == 400, "\(target)")
            }
        }
    }

    @Test("bad parameters: 400 invalid_parameter naming the parameter")
    func badParameters() async throws {
        try await withApp { app in
            for (query, name) in [
                ("colour=red", "colour"), ("rating_gtx=4", "rating_gtx"), ("sort=colour", "sort"),
                ("sort=rating&order=sideways", "order"), ("page=two", "page"), ("limit=-5", "limit"),
                ("per_page=5000", "per_page"), ("page=1&after=abc", "after"), ("after=%21%21", "after"),
            ] {
                let response = try await app.request("GET", "/v1/pickup_feeds?\(query)")
                #expect(response.status == 400, "\(query)")
                #expect(try response.json["error"]?["code"] == "invalid_parameter")
                let message = try response.json["error"]?["message"]?.stringValue ?? ""
                #expect(message.contains("'\(name)'"), "\(query): \(message)")
            }
        }
    }

    @Test("a sorted page wakes only when an item moves into it, not for a sort write that moves nothing in")
    func sortedPageWakes() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let target = "/v1/galleries?sort=title&per_page=3&page=1&fields=title"
            let page = try await app.request("GET", target)
            let tag = try #require(page.header("ETag"))
            async let held = app.request("GET", target + "&wait=30", headers: [Self.json, ("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            // Gallery 12's title sorts last before and after: the page's answer is the same.
            let quiet = try await app.request(
                "PATCH", "/v1/galleries/12", headers: editor, body: #"{"title":"雪見障子の茶室 (冬)"}"#)
            #expect(quiet.status == 200)
            try await Task.sleep(for: .milliseconds(200))
            #expect(app.application.heldRequests == 1, "a write that moves nothing into the page is not answered")
            let moving = try await app.request(
                "PATCH", "/v1/galleries/24", headers: editor, body: #"{"title":"AAA first"}"#)
            #expect(moving.status == 200)
            let woken = try await held
            #expect(woken.status == 200)
            #expect(try ids(woken).first == 24)
            #expect(woken.header("Lookout-Changed") == "galleries/12.title, galleries/24.title")
            #expect(woken.header("X-Total-Count") == "24")
        }
    }

    @Test("a filtered list wakes when a document enters the match, not when a filtered field changes without entering")
    func filteredWakes() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let target = "/v1/pickup_feeds?rating_gte=4.5&fields=shop_name"
            let tag = try #require(try await app.request("GET", target).header("ETag"))
            async let held = app.request("GET", target + "&wait=30", headers: [Self.json, ("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            _ = try await app.request("PATCH", "/v1/pickup_feeds/5", headers: editor, body: #"{"rating":4.0}"#)
            _ = try await app.request("PATCH", "/v1/pickup_feeds/5", headers: editor, body: #"{"shop_name":"Renamed"}"#)
            try await Task.sleep(for: .milliseconds(200))
            #expect(app.application.heldRequests == 1)
            _ = try await app.request("PATCH", "/v1/pickup_feeds/5", headers: editor, body: #"{"rating":4.9}"#)
            let woken = try await held
            #expect(woken.status == 200)
            #expect(try ids(woken) == [1, 4, 5, 6])
            #expect(try woken.json.arrayValue?[2] == ["id": 5, "shop_name": "Renamed"])
        }
    }

    @Test("a whole-document read wakes when a field is added to the document")
    func addedFieldWakes() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let tag = try #require(try await app.request("GET", "/v1/galleries/3").header("ETag"))
            async let held = app.request(
                "GET", "/v1/galleries/3?wait=30", headers: [Self.json, ("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            _ = try await app.request("PATCH", "/v1/galleries/3", headers: editor, body: #"{"caption":"new"}"#)
            let woken = try await held
            #expect(woken.status == 200)
            #expect(try woken.json["caption"] == "new")
            #expect(woken.header("Lookout-Changed") == "galleries/3", "the field names it read; caption it never read")
        }
    }
}
