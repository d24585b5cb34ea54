import Foundation
import LookoutJSON
import LookoutTestSupport
import Testing

/// GETs asked again and again are answered from a kept answer (``HotReads``) from the
/// third time on: these ask each target several times and check every answer is the one
/// the full path gives.
@Suite("Repeated GETs", .timeLimit(.minutes(2)))
struct HotReadsTests {
    static let json = ("Content-Type", "application/json")
    static let times = 4

    @Test("a GET asked again gets the same answer until a write changes it, then the new one")
    func sameUntilWritten() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let first = try await app.request("GET", "/v1/galleries/1")
            let tag = try #require(first.header("ETag"))
            for _ in 0..<Self.times {
                let again = try await app.request("GET", "/v1/galleries/1")
                #expect(again.status == 200)
                #expect(again.body == first.body)
                #expect(again.header("ETag") == tag)
                #expect(again.header("Content-Type") == "application/json; charset=utf-8")
                #expect(again.header("X-Request-Id") == nil, "only a client's own id is echoed on a success")
                let cached = try await app.request("GET", "/v1/galleries/1", headers: [("If-None-Match", tag)])
                #expect(cached.status == 304)
                #expect(cached.body.isEmpty)
                #expect(cached.header("ETag") == tag)
            }
            let written = try await app.request(
                "PATCH", "/v1/galleries/1", headers: editor, body: #"{"title":"renamed"}"#)
            #expect(written.status == 200)
            for _ in 0..<Self.times {
                let after = try await app.request("GET", "/v1/galleries/1")
                #expect(try after.json["title"]?.stringValue == "renamed", "a kept answer outlived the write")
                #expect(after.header("ETag") != tag)
                let stale = try await app.request("GET", "/v1/galleries/1", headers: [("If-None-Match", tag)])
                #expect(stale.status == 200, "the old cursor no longer matches")
            }
        }
    }

    @Test("an answer that varies by reader is reused only for readers without a token")
    func variesByReader() async throws {
        try await withApp { app in
            let holder = [("Authorization", "Bearer \(try await app.login())")]
            for _ in 0..<Self.times {
                let anonymous = try await app.request("GET", "/v1/reviews")
                #expect(anonymous.status == 200)
                #expect(anonymous.header("Vary") == "Authorization")
                #expect(!String(decoding: anonymous.body, as: UTF8.self).contains("author_email"))
            }
            for _ in 0..<Self.times {
                let read = try await app.request("GET", "/v1/reviews", headers: holder)
                #expect(read.status == 200)
                #expect(read.header("Cache-Control") == "private")
                #expect(String(decoding: read.body, as: UTF8.self).contains("author_email"))
                let junk = try await app.request("GET", "/v1/reviews", headers: [("Authorization", "Bearer junk")])
                #expect(junk.status == 401, "a token is checked on every read that presents one")
            }
        }
    }

    @Test("a public answer is the same with a token, which is not checked")
    func everyone() async throws {
        try await withApp { app in
            let plain = try await app.request("GET", "/v1/galleries?limit=3")
            #expect(plain.status == 200)
            for _ in 0..<Self.times {
                let read = try await app.request(
                    "GET", "/v1/galleries?limit=3", headers: [("Authorization", "Bearer junk")])
                #expect(read.status == 200)
                #expect(read.body == plain.body)
                #expect(read.header("Vary") == nil)
            }
        }
    }

    @Test("a client's X-Request-Id is echoed on every repeated GET")
    func echoesRequestID() async throws {
        try await withApp { app in
            for round in 0..<Self.times {
                _ = try await app.request("GET", "/v1/info_feed?page=2")
                let read = try await app.request(
                    "GET", "/v1/info_feed?page=2", headers: [("X-Request-Id", "trace-\(round)")])
                #expect(read.status == 200)
                #expect(read.header("X-Request-Id") == "trace-\(round)")
            }
        }
    }

    @Test("a long-poll's target asked again is still held, and woken by a write")
    func longPollsStayHeld() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let target = "/v1/galleries/2?wait=30"
            var tag = ""
            for _ in 0..<Self.times {
                let read = try await app.request("GET", target)
                #expect(read.status == 200, "without a cursor a long-poll answers at once")
                tag = try #require(read.header("ETag"))
            }
            async let held = app.request("GET", target, headers: [Self.json, ("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            #expect(app.application.heldRequests == 1)
            let written = try await app.request(
                "PATCH", "/v1/galleries/2", headers: editor, body: #"{"title":"moved"}"#)
            #expect(written.status == 200)
            let woken = try await held
            #expect(woken.status == 200)
            #expect(woken.header("Lookout-Changed") == "galleries/2.title")
        }
    }
}
