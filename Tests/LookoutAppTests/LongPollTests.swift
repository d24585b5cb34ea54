import Foundation
import LookoutJSON
import LookoutTestSupport
import Testing

@Suite("Long-poll on every GET, and writes", .timeLimit(.minutes(2)))
struct LongPollTests {
    static let json = ("Content-Type", "application/json")

    /// Waits until the app holds `count` requests, and says so if it never does.
    func waitUntilHeld(_ app: LiveApp, _ count: Int) async throws {
        try await app.waitUntilHeld(count)
        #expect(app.application.heldRequests >= count)
    }

    @Test("every feed GET has an ETag; If-None-Match with it gives 304")
    func etags() async throws {
        try await withApp { app in
            let first = try await app.request("GET", "/v1/info_feed?page=1")
            let tag = try #require(first.header("ETag"))
            let again = try await app.request(
                "GET", "/v1/info_feed?page=1", headers: [Self.json, ("If-None-Match", tag)])
            #expect(again.status == 304)
            #expect(again.header("ETag") == tag)
            #expect(again.body.isEmpty)
        }
    }

    @Test("a held page wakes on a write to an item on it, naming the field, with the new value")
    func wakesOnItsPage() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let page = try await app.request("GET", "/v1/info_feed?page=1")
            let tag = try #require(page.header("ETag"))
            async let held = app.request(
                "GET", "/v1/info_feed?page=1&wait=30", headers: [Self.json, ("If-None-Match", tag)])
            try await waitUntilHeld(app, 1)
            // A write to an item on another page does not wake it.
            let outside = try await app.request(
                "PATCH", "/v1/info_feed/25", headers: editor, body: #"{"title":"elsewhere"}"#)
            #expect(outside.status == 200)
            #expect(app.application.heldRequests == 1)
            let write = try await app.request(
                "PATCH", "/v1/info_feed/3", headers: editor, body: #"{"title":"新しいタイトル"}"#)
            #expect(write.status == 200)
            let woken = try await held
            #expect(woken.status == 200)
            #expect(woken.header("Lookout-Changed") == "info_feed/3.title")
            #expect(woken.header("ETag") != tag)
            let items = try #require(try woken.json["information"]?.arrayValue)
            #expect(items.first { $0["id"] == 3 }?["title"] == "新しいタイトル")
        }
    }

    @Test("with nothing changed, the poll answers 304 with the same ETag at its deadline")
    func deadline() async throws {
        try await withApp { app in
            let tag = try #require(try await app.request("GET", "/v1/galleries").header("ETag"))
            let started = ContinuousClock.now
            let response = try await app.request(
                "GET", "/v1/galleries?wait=1&since=\(tag.replacingOccurrences(of: "\"", with: ""))")
            let elapsed = ContinuousClock.now - started
            #expect(response.status == 304)
            #expect(response.header("ETag") == tag)
            // Generous upper bound: the suite runs tests in parallel on two cores.
            #expect(elapsed >= .milliseconds(950) && elapsed < .seconds(8), "\(elapsed)")
        }
    }

    @Test("polls on two views timing out together each get their own view's 304, and their own request id")
    func deadlinesTogether() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            // Views at different revisions, so that their ETags differ.
            let write = try await app.request(
                "PATCH", "/v1/category_feeds/1", headers: editor, body: #"{"rank":9}"#)
            #expect(write.status == 200)
            let galleries = try #require(try await app.request("GET", "/v1/galleries").header("ETag"))
            let feeds = try #require(try await app.request("GET", "/v1/category_feeds").header("ETag"))
            #expect(galleries != feeds)
            // Deadlines jittered over 62 ms, run by the timer 10 ms at a time: both views'
            // polls time out in the same wakes, where their 304s are shared.
            let views = [("/v1/galleries?wait=1", galleries), ("/v1/category_feeds?wait=1", feeds)]
            let polls = (0..<24).map { index in
                (target: views[index % 2].0, tag: views[index % 2].1, requestID: index < 2 ? "own-\(index)" : nil)
            }
            let answers = try await withThrowingTaskGroup(of: (Int, TestHTTPResponse).self) { group in
                for (index, poll) in polls.enumerated() {
                    var headers = [Self.json, ("If-None-Match", poll.tag)]
                    if let id = poll.requestID { headers.append(("X-Request-Id", id)) }
                    group.addTask { (index, try await app.request("GET", poll.target, headers: headers)) }
                }
                return try await group.reduce(into: [Int: TestHTTPResponse]()) { $0[$1.0] = $1.1 }
            }
            for (index, poll) in polls.enumerated() {
                let answer = try #require(answers[index])
                #expect(answer.status == 304, "\(poll.target)")
                #expect(answer.header("ETag") == poll.tag, "\(poll.target)")
                #expect(answer.header("X-Request-Id") == poll.requestID, "\(poll.target)")
            }
        }
    }

    @Test("no cursor, a cursor from another epoch, or a changed read set: answered at once")
    func answeredAtOnce() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let tag = try #require(try await app.request("GET", "/v1/category_feeds").header("ETag"))
            let noCursor = try await app.request("GET", "/v1/category_feeds?wait=30")
            #expect(noCursor.status == 200)
            let otherEpoch = try await app.request("GET", "/v1/category_feeds?wait=30&since=ffff-1")
            #expect(otherEpoch.status == 200)
            _ = try await app.request("PATCH", "/v1/category_feeds/1", headers: editor, body: #"{"rank":9}"#)
            let changed = try await app.request(
                "GET", "/v1/category_feeds?wait=30", headers: [Self.json, ("If-None-Match", tag)])
            #expect(changed.status == 200)
            #expect(changed.header("ETag") != tag)
            let bad = try await app.request("GET", "/v1/category_feeds?wait=soon")
            #expect(bad.status == 400)
        }
    }

    @Test("a projection waits only on the fields it read")
    func projection() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let first = try await app.request("GET", "/v1/pickup_feeds/1?fields=rating")
            #expect(try first.json.objectValue?.keys == ["id", "rating"])
            let tag = try #require(first.header("ETag"))
            async let held = app.request(
                "GET", "/v1/pickup_feeds/1?fields=rating&wait=30", headers: [Self.json, ("If-None-Match", tag)])
            try await waitUntilHeld(app, 1)
            _ = try await app.request("PATCH", "/v1/pickup_feeds/1", headers: editor, body: #"{"shop_name":"Renamed"}"#)
            #expect(app.application.heldRequests == 1)
            _ = try await app.request("PATCH", "/v1/pickup_feeds/1", headers: editor, body: #"{"rating":1.5}"#)
            let woken = try await held
            #expect(woken.header("Lookout-Changed") == "pickup_feeds/1.rating")
            #expect(try woken.json == ["id": 1, "rating": 1.5])
        }
    }

    @Test("many held polls on one field all wake on one write")
    func fanOut() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let tag = try #require(try await app.request("GET", "/v1/galleries/2").header("ETag"))
            let count = 50
            try await withThrowingTaskGroup(of: TestHTTPResponse.self) { group in
                for _ in 0..<count {
                    group.addTask {
                        try await app.request(
                            "GET", "/v1/galleries/2?wait=30", headers: [Self.json, ("If-None-Match", tag)])
                    }
                }
                try await waitUntilHeld(app, count)
                _ = try await app.request(
                    "PUT", "/v1/galleries/2", headers: editor, body: #"{"title":"all","thumbnail":"x"}"#)
                var woken = 0
                for try await response in group
                where response.status == 200
                    && response.header("Lookout-Changed") == "galleries/2.title, galleries/2.thumbnail"
                {
                    woken += 1
                }
                #expect(woken == count)
            }
        }
    }

    @Test("writes need an editor's token; If-Match guards against lost updates")
    func writes() async throws {
        try await withApp { app in
            let none = try await app.request("POST", "/v1/galleries", body: #"{"title":"x","thumbnail":"y"}"#)
            #expect(none.status == 401)
            let reader = [Self.json, ("Authorization", "Bearer \(try await app.login())")]
            let forbidden = try await app.request(
                "POST", "/v1/galleries", headers: reader, body: #"{"title":"x","thumbnail":"y"}"#)
            #expect(forbidden.status == 403)
            #expect(try forbidden.json["error"]?["code"] == "forbidden")

            let editor = try await app.editorHeaders()
            let created = try await app.request(
                "POST", "/v1/galleries", headers: editor, body: #"{"title":"新作","thumbnail":"http://x/y.png"}"#)
            #expect(created.status == 201)
            #expect(created.header("Location") == "/v1/galleries/25")
            let etag = try #require(created.header("ETag"))
            #expect(try await app.request("GET", "/v1/galleries/25").json["title"] == "新作")

            let stale = #""00-1""#
            let refused = try await app.request(
                "PATCH", "/v1/galleries/25", headers: editor + [("If-Match", stale)], body: #"{"title":"a"}"#)
            #expect(refused.status == 412)
            let matched = try await app.request(
                "PATCH", "/v1/galleries/25", headers: editor + [("If-Match", etag)], body: #"{"title":"a"}"#)
            #expect(matched.status == 200)
            let lost = try await app.request(
                "PATCH", "/v1/galleries/25", headers: editor + [("If-Match", etag)], body: #"{"title":"b"}"#)
            #expect(lost.status == 412, "the second writer with the old version is refused")

            let bad = try await app.request("PATCH", "/v1/galleries/25", headers: editor, body: #"{"id":3}"#)
            #expect(bad.status == 400)
            let taken = try await app.request("POST", "/v1/galleries", headers: editor, body: #"{"id":1}"#)
            #expect(taken.status == 409)
            let malformed = try await app.request("PUT", "/v1/galleries/25", headers: editor, body: "[]")
            #expect(malformed.status == 400)
            #expect(
                try await app.request("GET", "/v1/galleries/25").json["title"] == "a", "refused writes changed nothing")

            let deleted = try await app.request("DELETE", "/v1/galleries/25", headers: editor)
            #expect(deleted.status == 204)
            #expect(try await app.request("GET", "/v1/galleries/25").status == 404)
            #expect(try await app.request("DELETE", "/v1/nothing/1", headers: editor).status == 404)
        }
    }

    @Test("shutdown ends held polls as their deadline would: 304 with the same ETag, closing the connection")
    func shutdown() async throws {
        let app = try await LiveApp.start()
        defer { try? FileManager.default.removeItem(atPath: app.dataDirectory) }
        let tag = try #require(try await app.request("GET", "/v1/galleries").header("ETag"))
        async let held = app.request("GET", "/v1/galleries?wait=60", headers: [Self.json, ("If-None-Match", tag)])
        try await waitUntilHeld(app, 1)
        app.shutdown()
        let response = try await held
        #expect(response.status == 304)
        #expect(response.header("ETag") == tag)
        #expect(response.header("Connection")?.lowercased() == "close")
    }
}
