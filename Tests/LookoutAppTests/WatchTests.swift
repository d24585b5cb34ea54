import Foundation
import LookoutJSON
import LookoutTestSupport
import Testing

@Suite("Multi-read watch", .timeLimit(.minutes(2)))
struct WatchTests {
    static let json = ("Content-Type", "application/json")

    @Test("answers the values read and a cursor; GET and POST alike")
    func values() async throws {
        try await withApp { app in
            let get = try await app.request(
                "GET", "/v1/watch?read=galleries/3.title,pickup_feeds/1.rating,galleries/999.title")
            #expect(get.status == 200)
            let body = try get.json
            let expectedTitle = try DemoData.documents("galleries").first { $0["id"] == 3 }?["title"]
            #expect(body["values"]?["galleries/3.title"] == expectedTitle)
            #expect(body["values"]?["pickup_feeds/1.rating"]?.typeName == "number")
            #expect(body["values"]?["galleries/999.title"] == .null)
            let cursor = try #require(body["cursor"]?.stringValue)
            #expect(get.header("ETag") == "\"\(cursor)\"")
            let post = try await app.request(
                "POST", "/v1/watch",
                body: #"{"read":["galleries/3.title","pickup_feeds/1.rating","galleries/999.title"]}"#)
            #expect(post.body == get.body)
        }
    }

    @Test("one long-poll over fields across documents wakes for any of them, and only them")
    func wakes() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let first = try await app.request("GET", "/v1/watch?read=galleries/3.title,pickup_feeds/1.rating")
            let cursor = try #require(try first.json["cursor"]?.stringValue)
            async let held = app.request(
                "GET", "/v1/watch?read=galleries/3.title,pickup_feeds/1.rating&wait=30&since=\(cursor)")
            try await app.waitUntilHeld(1)
            _ = try await app.request(
                "PATCH", "/v1/pickup_feeds/1", headers: editor, body: #"{"shop_name":"not watched"}"#)
            _ = try await app.request("PATCH", "/v1/galleries/4", headers: editor, body: #"{"title":"not watched"}"#)
            #expect(app.application.heldRequests == 1)
            _ = try await app.request("PATCH", "/v1/pickup_feeds/1", headers: editor, body: #"{"rating":0.5}"#)
            let woken = try await held
            #expect(woken.status == 200)
            #expect(woken.header("Lookout-Changed") == "pickup_feeds/1.rating")
            #expect(try woken.json["values"]?["pickup_feeds/1.rating"] == 0.5)
        }
    }

    @Test(
        "bad reads are 400 naming the parameter",
        arguments: ["", "?read=", "?read=galleries", "?read=galleries/x.title", "?read=nothing/1.a"])
    func badReads(_ query: String) async throws {
        try await withApp { app in
            let response = try await app.request("GET", "/v1/watch\(query)")
            #expect(response.status == 400)
            #expect(try response.json["error"]?["message"]?.stringValue?.contains("read") == true)
        }
    }
}
