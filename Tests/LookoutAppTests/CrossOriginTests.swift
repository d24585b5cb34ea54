import Foundation
import LookoutApp
import LookoutJSON
import LookoutTestSupport
import Testing

/// CORS (README "Web pages on other origins: CORS"), against a real server.
@Suite("Cross-origin requests", .timeLimit(.minutes(2)))
struct CrossOriginTests {
    static let page = "http://localhost:8000"
    static let stranger = "http://evil.test"

    static func preflight(_ app: LiveApp, _ path: String, origin: String = page, method: String = "GET") async throws
        -> TestHTTPResponse
    {
        try await app.request(
            "OPTIONS", path,
            headers: [
                ("Origin", origin), ("Access-Control-Request-Method", method),
                ("Access-Control-Request-Headers", "authorization, content-type"),
            ])
    }

    @Test("a preflight from an allowed origin is answered for every route, with its methods")
    func preflightEveryRoute() async throws {
        try await withApp(configure: { $0.corsOrigins = "\(Self.page), https://app.example" }) { app in
            let routes: [(String, [String])] = [
                ("/v1/galleries", ["GET", "POST"]), ("/v1/galleries/3", ["GET", "PUT", "PATCH", "DELETE"]),
                ("/v1/auth/login", ["POST"]), ("/v1/auth/verify", ["POST"]), ("/v1/auth/token", ["POST"]),
                ("/v1/auth/revoke", ["POST"]), ("/v1/watch", ["GET", "POST"]), ("/v1/info_feed", ["GET"]),
                ("/healthz", ["GET"]), ("/images/gallery-01.png", ["GET"]),
            ]
            for (path, methods) in routes {
                let answer = try await Self.preflight(app, path, method: methods[0])
                #expect(answer.status == 204, "\(path)")
                #expect(answer.header("Access-Control-Allow-Origin") == Self.page, "\(path)")
                #expect(answer.header("Vary") == "Origin", "\(path)")
                let allowed = Set(
                    (answer.header("Access-Control-Allow-Methods") ?? "").split(separator: ",").map {
                        $0.trimmingCharacters(in: .whitespaces)
                    })
                #expect(Set(methods).isSubset(of: allowed), "\(path): \(allowed)")
                #expect(
                    answer.header("Access-Control-Allow-Headers")
                        == "Authorization, Content-Type, If-Match, If-None-Match, X-Request-Id, Last-Event-ID")
                #expect(answer.header("Access-Control-Max-Age") == "600")
            }
            #expect(try await Self.preflight(app, "/v1/galleries", origin: "https://app.example").status == 204)
        }
    }

    @Test("every answer to an allowed origin carries CORS's fields: reads, errors, writes, polls, streams")
    func everyAnswer() async throws {
        try await withApp(configure: { $0.corsOrigins = Self.page }) { app in
            let origin = ("Origin", Self.page)
            let editor = try await app.editorHeaders() + [origin]
            func check(_ answer: TestHTTPResponse, _ what: String) {
                #expect(answer.header("Access-Control-Allow-Origin") == Self.page, "\(what)")
                #expect(answer.header("Vary")?.contains("Origin") == true, "\(what)")
                #expect(
                    answer.header("Access-Control-Expose-Headers")
                        == "ETag, Link, X-Total-Count, Lookout-Changed, X-Request-Id, Retry-After, Location", "\(what)")
            }
            let read = try await app.request("GET", "/v1/galleries?per_page=2", headers: [origin])
            check(read, "a read")
            // Asked again and again: never from a kept answer without the fields.
            for _ in 0..<4 {
                check(try await app.request("GET", "/v1/galleries?per_page=2", headers: [origin]), "again")
            }
            check(try await app.request("GET", "/v1/galleries/999", headers: [origin]), "an error")
            let tag = try #require(read.header("ETag"))
            let port = app.port
            let poll = Task.detached {
                try TestHTTP.request(
                    host: "127.0.0.1", port: port, "GET", "/v1/galleries?per_page=2&wait=30",
                    headers: [origin, ("If-None-Match", tag)])
            }
            try await app.waitUntilHeld(1)
            let write = try await app.request("PATCH", "/v1/galleries/1", headers: editor, body: #"{"title":"x"}"#)
            #expect(write.status == 200)
            check(write, "a write")
            let woken = try await poll.value
            #expect(woken.status == 200)
            check(woken, "a woken poll")
            let stream = try await offPool {
                try TestEventStream(port: port, target: "/v1/galleries/1", headers: [origin])
            }
            #expect(stream.head.status == 200)
            check(stream.head, "a stream")
        }
    }

    @Test("another origin gets no CORS field at all, and its preflight 403")
    func strangerRefused() async throws {
        try await withApp(configure: { $0.corsOrigins = Self.page }) { app in
            let refused = try await Self.preflight(app, "/v1/galleries", origin: Self.stranger)
            #expect(refused.status == 403)
            #expect(try refused.json["error"]?["code"] == "origin_not_allowed")
            for answer in [
                refused, try await app.request("GET", "/v1/galleries/1", headers: [("Origin", Self.stranger)]),
            ] {
                #expect(answer.header("Access-Control-Allow-Origin") == nil)
                #expect(answer.header("Access-Control-Expose-Headers") == nil)
            }
        }
    }

    @Test("with *, any origin, and no Vary")
    func anyOrigin() async throws {
        try await withApp(configure: { $0.corsOrigins = "*" }) { app in
            let preflight = try await Self.preflight(app, "/v1/galleries/2", origin: Self.stranger, method: "PATCH")
            #expect(preflight.status == 204)
            #expect(preflight.header("Access-Control-Allow-Origin") == "*")
            #expect(preflight.header("Vary") == nil)
            let read = try await app.request("GET", "/v1/galleries/2", headers: [("Origin", Self.stranger)])
            #expect(read.header("Access-Control-Allow-Origin") == "*")
            #expect(read.header("Vary") == nil)
        }
    }

    @Test("off unless configured: OPTIONS is 405 and no answer carries CORS's fields")
    func offByDefault() async throws {
        try await withApp { app in
            let preflight = try await Self.preflight(app, "/v1/galleries")
            #expect(preflight.status == 405)
            #expect(preflight.header("Access-Control-Allow-Origin") == nil)
            let read = try await app.request("GET", "/v1/galleries/1", headers: [("Origin", Self.page)])
            #expect(read.header("Access-Control-Allow-Origin") == nil)
        }
    }

    @Test("a list of origins that is not one is refused at start")
    func badConfiguration() async throws {
        for wrong in ["localhost:8000", "http://a.example/path", "ftp://a.example", "http://*.example"] {
            await #expect(throws: StartupError.self, "\(wrong)") {
                try await withApp(configure: { $0.corsOrigins = wrong }) { _ in }
            }
        }
    }
}
