import LookoutJSON
import LookoutTestSupport
import Testing

@Suite("Seed app contract: feeds", .timeLimit(.minutes(2)))
struct FeedContractTests {
    @Test("the data endpoints answer with no token, a valid token and an expired one")
    func anyToken() async throws {
        let clock = ManualWallClock()
        try await withApp(clock: clock) { app in
            let token = try await app.login()
            let valid = [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")]
            clock.advance(seconds: 7200)
            let expired = valid
            for target in ["/v1/pickup_feeds", "/v1/category_feeds", "/v1/info_feed?page=1", "/v1/galleries"] {
                #expect(try await app.request("GET", target).status == 200, "\(target) without a token")
                #expect(
                    try await app.request("GET", target, headers: expired).status == 200,
                    "\(target) with an expired token")
                #expect(
                    try await app.request(
                        "GET", target,
                        headers: [("Content-Type", "application/json"), ("Authorization", "Bearer junk")]
                    ).status == 200)
            }
            clock.advance(seconds: -7200)
            #expect(try await app.request("GET", "/v1/galleries", headers: valid).status == 200)
        }
    }

    @Test("pickup feeds: every key with its exact type, as in the data file")
    func pickupFeeds() async throws {
        try await withApp { app in
            let response = try await app.request("GET", "/v1/pickup_feeds")
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json; charset=utf-8")
            let items = try #require(try response.json.arrayValue)
            #expect(items == (try DemoData.documents("pickup_feeds")))
            #expect(items.count >= 8)
            for item in items {
                #expect(item["id"]?.intValue != nil)
                #expect(item["shop_name"]?.stringValue != nil)
                #expect(item["category_name"]?.stringValue != nil)
                let budget = try #require(item["min_budget"]?.stringValue)
                #expect(budget.allSatisfy { $0.isNumber || $0 == "," })
                switch item["rating"] {
                case .double(let rating)?: #expect((0...5).contains(rating))
                case .int(let rating)?: #expect((0...5).contains(rating))
                default: Issue.record("rating is not a number")
                }
                #expect(item["thumbnail"]?.stringValue?.hasPrefix("http") == true)
            }
        }
    }

    @Test("categories are sorted by rank, ranks 1..N")
    func categories() async throws {
        try await withApp { app in
            let items = try #require(try await app.request("GET", "/v1/category_feeds").json.arrayValue)
            #expect(items.compactMap { $0["rank"]?.intValue } == Array(1...items.count))
            #expect(Set(items) == Set(try DemoData.documents("category_feeds")))
            #expect(items.allSatisfy { $0["id"]?.intValue != nil && $0["name"]?.stringValue != nil })
        }
    }

    @Test("galleries: all photos at once, with UTF-8 titles intact")
    func galleries() async throws {
        try await withApp { app in
            let items = try #require(try await app.request("GET", "/v1/galleries").json.arrayValue)
            let expected = try DemoData.documents("galleries")
            #expect(items == expected)
            #expect(items.count == 24)
            #expect(
                items.allSatisfy {
                    $0["id"]?.intValue != nil && $0["title"]?.stringValue != nil && $0["thumbnail"]?.stringValue != nil
                })
        }
    }

    @Test("information pages 1..3: ids 1..30 contiguous, has_next_page true, true, false; Japanese text intact")
    func informationPages() async throws {
        try await withApp { app in
            var ids: [Int] = []
            var flags: [Bool] = []
            var all: [JSONValue] = []
            for page in 1...3 {
                let response = try await app.request("GET", "/v1/info_feed?page=\(page)")
                #expect(response.status == 200)
                let body = try response.json
                #expect(body["page"] == .int(page))
                flags.append(try #require(body["has_next_page"]?.boolValue))
                let items = try #require(body["information"]?.arrayValue)
                for item in items {
                    for key in ["title", "catch_copy", "summary", "thumbnail"] {
                        #expect(item[key]?.stringValue != nil, "information.\(key)")
                    }
                }
                ids += items.compactMap { $0["id"]?.intValue }
                all += items
            }
            #expect(ids == Array(1...30))
            #expect(flags == [true, true, false])
            #expect(all == (try DemoData.documents("info_feed")))
            #expect(all.contains { $0["title"]?.stringValue?.contains("季節の和菓子") == true })
        }
    }

    @Test("a page past the end is empty with has_next_page false; the same page twice is identical")
    func pastTheEnd() async throws {
        try await withApp { app in
            let past = try await app.request("GET", "/v1/info_feed?page=4").json
            #expect(past == ["page": 4, "has_next_page": false, "information": []])
            let first = try await app.request("GET", "/v1/info_feed?page=2")
            let again = try await app.request("GET", "/v1/info_feed?page=2")
            #expect(first.body == again.body)
        }
    }

    @Test(
        "a missing or non-integer page is 400 naming the parameter",
        arguments: ["", "?page=", "?page=abc", "?page=1.5", "?page=0", "?page=-1", "?page=99999999999999999999"])
    func badPage(_ query: String) async throws {
        try await withApp { app in
            let response = try await app.request("GET", "/v1/info_feed\(query)")
            #expect(response.status == 400)
            let error = try #require(try response.json["error"])
            #expect(error["code"] == "invalid_parameter")
            #expect(error["message"]?.stringValue?.contains("page") == true)
        }
    }

    @Test("served over ::1 as well as 127.0.0.1")
    func ipv6() async throws {
        try await withApp { app in
            let response = try await app.request("GET", "/v1/category_feeds", host: "::1")
            #expect(response.status == 200)
        }
    }

    @Test("the demo thumbnails resolve to PNG images")
    func images() async throws {
        try await withApp { app in
            let thumbnail = try #require(try DemoData.documents("galleries").first?["thumbnail"]?.stringValue)
            let path = String(thumbnail[try #require(thumbnail.range(of: "/images/")).lowerBound...])
            let image = try await app.request("GET", path, headers: [])
            #expect(image.status == 200)
            #expect(image.header("Content-Type") == "image/png")
            #expect(Array(image.body.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
            #expect(try await app.request("GET", "/images/..%2Fetc.png", headers: []).status == 404)
        }
    }
}
