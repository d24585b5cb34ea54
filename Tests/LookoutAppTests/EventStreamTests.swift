import Foundation
import LookoutApp
import LookoutJSON
import LookoutTestSupport
import Testing

/// EventSource on every view (README "Live updates in a browser: EventSource"): a real
/// server, a real socket, and the stream read as a browser reads it.
@Suite("Event streams", .timeLimit(.minutes(2)))
struct EventStreamTests {
    /// A stream of `target` on `app`, opened off the cooperative pool.
    static func open(_ app: LiveApp, _ target: String, headers: [(String, String)] = []) async throws
        -> TestEventStream
    {
        let port = app.port
        return try await offPool { try TestEventStream(port: port, target: target, headers: headers) }
    }

    static func next(_ stream: TestEventStream) async throws -> TestEventStream.Event? {
        try await offPool { try stream.nextEvent() }
    }

    /// The cursor a GET's ETag names: what a stream's event id is.
    static func cursor(_ response: TestHTTPResponse) throws -> String {
        try #require(response.header("ETag")).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
    }

    @Test("the current rendering first, then one event per change the view shows, each with its cursor")
    func renderingThenChanges() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let stream = try await Self.open(app, "/v1/galleries/3")
            #expect(stream.head.status == 200)
            #expect(stream.head.header("Content-Type") == "text/event-stream; charset=utf-8")
            #expect(stream.head.header("Cache-Control") == "no-cache")
            #expect(stream.head.header("X-Accel-Buffering") == "no")
            #expect(stream.head.header("Transfer-Encoding") == "chunked")
            let plain = try await app.request("GET", "/v1/galleries/3")
            let first = try #require(try await Self.next(stream))
            #expect(first.name == nil, "a rendering is a plain message, for onmessage")
            #expect(first.data.map { Array($0.utf8) } == plain.body)
            #expect(first.id == (try Self.cursor(plain)))

            // A write to another document, then a write to this one: the next event is the
            // second, so the first sent nothing.
            #expect(
                try await app.request("PATCH", "/v1/galleries/4", headers: editor, body: #"{"title":"elsewhere"}"#)
                    .status == 200)
            #expect(
                try await app.request("PATCH", "/v1/galleries/3", headers: editor, body: #"{"title":"renamed"}"#)
                    .status == 200)
            let changed = try #require(try await Self.next(stream))
            let now = try await app.request("GET", "/v1/galleries/3")
            #expect(changed.data.map { Array($0.utf8) } == now.body)
            #expect(try JSONParser.parse(Array((changed.data ?? "").utf8))["title"] == "renamed")
            #expect(changed.id == (try Self.cursor(now)))
        }
    }

    /// Found with the Swift client swift-openapi-generator makes from /openapi.json: it
    /// sends `Accept: application/json, text/event-stream` (every type the document lists)
    /// and got a stream that never ended. A stream is for a client that prefers one.
    @Test("Accept: a stream only when text/event-stream is preferred to JSON; both alike answer JSON")
    func acceptPrefersJSONAtEqualQuality() async throws {
        try await withApp { app in
            for accept in [
                "application/json, text/event-stream", "text/event-stream, application/json", "*/*",
                "text/event-stream;q=0.5, */*", "text/event-stream;q=0, application/json;q=0.1",
                "application/*, text/event-stream",
            ] {
                let answer = try await app.request("GET", "/v1/galleries/3", headers: [("Accept", accept)])
                #expect(answer.status == 200, "\(accept)")
                #expect(answer.header("Content-Type") == "application/json; charset=utf-8", "\(accept)")
            }
            let port = app.port
            for accept in [
                "text/event-stream", "text/event-stream, application/json;q=0.9", "TEXT/EVENT-STREAM; q=1, */*;q=0.1",
                "text/event-stream, image/png",
            ] {
                let head = try await offPool {
                    let connection = try TestHTTPConnection(host: "127.0.0.1", port: port)
                    defer { connection.close() }
                    try connection.send(
                        "GET /v1/galleries/3 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: \(accept)\r\n\r\n")
                    return try connection.readHead()
                }
                #expect(head.header("Content-Type") == "text/event-stream; charset=utf-8", "\(accept)")
            }
        }
    }

    @Test("Last-Event-ID resumes: nothing resent when current, the current rendering when behind")
    func resumes() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let before = try Self.cursor(try await app.request("GET", "/v1/galleries/5"))
            let current = try await Self.open(app, "/v1/galleries/5", headers: [("Last-Event-ID", before)])
            #expect(
                try await app.request("PATCH", "/v1/galleries/5", headers: editor, body: #"{"title":"one"}"#)
                    .status == 200)
            let event = try #require(try await Self.next(current))
            #expect(
                try JSONParser.parse(Array((event.data ?? "").utf8))["title"] == "one",
                "the rendering it had was resent")

            let behind = try await Self.open(app, "/v1/galleries/5?since=\(before)")
            let resent = try #require(try await Self.next(behind))
            #expect(try JSONParser.parse(Array((resent.data ?? "").utf8))["title"] == "one")
            #expect(resent.id != before)
        }
    }

    @Test("every kind of view streams what a GET of it answers")
    func everyView() async throws {
        try await withApp { app in
            let targets = [
                "/v1/galleries", "/v1/galleries?title_like=a&sort=-id&per_page=3", "/v1/galleries/2?fields=title",
                "/v1/pickup_feeds/1?fields=shop_name&expand=category_id", "/v1/info_feed?page=1",
                "/v1/watch?read=galleries/3.title,galleries/4",
            ]
            for target in targets {
                let plain = try await app.request("GET", target)
                #expect(plain.status == 200, "\(target)")
                let stream = try await Self.open(app, target)
                #expect(stream.head.status == 200, "\(target)")
                let first = try #require(try await Self.next(stream))
                #expect(first.data.map { Array($0.utf8) } == plain.body, "\(target)")
            }
        }
    }

    @Test("errors before a stream starts are the usual JSON errors")
    func errorsFirst() async throws {
        try await withApp { app in
            for (target, status, code) in [
                ("/v1/galleries/999", 404, "not_found"), ("/v1/nothing", 404, "not_found"),
                ("/v1/galleries?since=junk", 400, "invalid_parameter"),
                ("/v1/reviews?access_token=junk", 401, "invalid_token"),
            ] {
                let answer = try await app.request("GET", target, headers: [("Accept", "text/event-stream")])
                #expect(answer.status == status, "\(target)")
                #expect(answer.header("Content-Type") == "application/json; charset=utf-8", "\(target)")
                #expect(try answer.json["error"]?["code"]?.stringValue == code, "\(target)")
            }
        }
    }

    @Test("a token is checked before every event: revoked or expired, the stream ends saying why")
    func tokenChecked() async throws {
        let clock = ManualWallClock()
        try await withApp(clock: clock) { app in
            let editor = try await app.editorHeaders()
            let revoked = try await app.login()
            let stream = try await Self.open(app, "/v1/reviews/1?access_token=\(revoked)")
            let first = try #require(try await Self.next(stream))
            #expect(first.data?.contains("author_email") == true, "the token's reader sees every field")
            #expect(try await app.form("/v1/auth/revoke", ["token": revoked]).status == 200)
            #expect(
                try await app.request("PATCH", "/v1/reviews/1", headers: editor, body: #"{"rating":1}"#).status == 200)
            let end = try #require(try await Self.next(stream))
            #expect(end.name == "end")
            #expect(try JSONParser.parse(Array((end.data ?? "").utf8))["reason"] == "token_revoked")
            #expect(try await offPool { try stream.next() } == nil, "the stream ended after its end event")

            let expiring = try await app.login()
            let second = try await Self.open(app, "/v1/reviews/1", headers: [("Authorization", "Bearer \(expiring)")])
            _ = try #require(try await Self.next(second))
            clock.advance(seconds: 7200)
            let fresh = try await app.editorHeaders()
            #expect(
                try await app.request("PATCH", "/v1/reviews/1", headers: fresh, body: #"{"rating":2}"#).status == 200)
            let expired = try #require(try await Self.next(second))
            #expect(expired.name == "end")
            #expect(try JSONParser.parse(Array((expired.data ?? "").utf8))["reason"] == "token_expired")
        }
    }

    @Test("an idle stream sends heartbeats; a client that left is forgotten")
    func heartbeats() async throws {
        try await withApp(configure: { $0.eventStreamHeartbeat = .milliseconds(200) }) { app in
            let stream = try await Self.open(app, "/v1/galleries/1")
            _ = try #require(try await Self.next(stream))
            let beat = try #require(try await offPool { try stream.next() })
            #expect(beat.comment == "heartbeat")
            #expect(app.application.openStreams == 1)
            stream.connection.close()
            // The next heartbeat finds the connection gone.
            for _ in 0..<3000 where app.application.openStreams > 0 {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(app.application.openStreams == 0)
        }
    }

    @Test("a client that does not read is cut off, with an end event saying so")
    func slowClient() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let stream = try await Self.open(app, "/v1/galleries/2")
            // 400 renderings of 60 KB each: far more than the 1 MiB a stream keeps waiting
            // plus what both sockets' buffers hold, with the client reading none of it.
            let title = String(repeating: "x", count: 60_000)
            let port = app.port
            try await offPool {
                let writer = try TestHTTPConnection(host: "127.0.0.1", port: port)
                for index in 0..<400 {
                    let body = Array(#"{"title":"\#(title)\#(index)"}"#.utf8)
                    #expect(try writer.request("PATCH", "/v1/galleries/2", headers: editor, body: body).status == 200)
                }
            }
            var last: TestEventStream.Event?
            while let event = try await Self.next(stream) { last = event }
            #expect(last?.name == "end")
            #expect(try JSONParser.parse(Array((last?.data ?? "").utf8))["reason"] == "too_slow")
            for _ in 0..<3000 where app.application.openStreams > 0 {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(app.application.openStreams == 0)
        }
    }

    @Test("shutdown ends every stream with an end event")
    func shutdown() async throws {
        let app = try await LiveApp.start()
        defer { try? FileManager.default.removeItem(atPath: app.dataDirectory) }
        let streams = [
            try await Self.open(app, "/v1/galleries/1"), try await Self.open(app, "/v1/galleries"),
        ]
        for stream in streams { _ = try #require(try await Self.next(stream)) }
        let stopped = Task.detached { app.shutdown() }
        for stream in streams {
            let end = try #require(try await Self.next(stream))
            #expect(end.name == "end")
            #expect(try JSONParser.parse(Array((end.data ?? "").utf8))["reason"] == "shutting_down")
        }
        await stopped.value
    }
}
