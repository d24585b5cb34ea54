import Foundation
import LookoutJSON
import LookoutTestSupport
import Testing

/// Who may read what when one read touches several collections: an expansion shows what
/// its own collection allows the reader, whatever the collection named in the path allows.
///
/// Logs in with cheap hashes and runs one test at a time, like ``ReadAccessTests``.
@Suite("Who may read what, through expand", .serialized, .timeLimit(.minutes(2)))
struct ExpandAccessTests {
    static let json = ("Content-Type", "application/json")

    /// - `posts`: `"public": true`, referring to each of the others.
    /// - `authors`: partly public (`name`); `email` is for token holders.
    /// - `secrets`: nothing public.
    /// - `topics`: `"public": true`.
    static let collections = """
        [
          {"name": "posts", "public": true,
           "references": {"author_id": "authors", "secret_id": "secrets", "topic_id": "topics"},
           "documents": [
             {"id": 1, "title": "Hello", "author_id": 1, "secret_id": 1, "topic_id": 1},
             {"id": 2, "title": "Again", "author_id": 2, "secret_id": 1, "topic_id": 1}
           ]},
          {"name": "authors", "public": ["name"],
           "documents": [{"id": 1, "name": "Ann", "email": "ann@example.com"}, {"id": 2, "name": "Bo", "email": "bo@example.com"}]},
          {"name": "secrets", "documents": [{"id": 1, "code": "s3cr3t"}]},
          {"name": "topics", "public": true, "documents": [{"id": 1, "label": "news"}]}
        ]
        """

    func withExpandApp(clock: ManualWallClock = ManualWallClock(), _ body: (LiveApp) async throws -> Void)
        async throws
    {
        let file = try ReadAccessTests.dataFile(Self.collections)
        defer { try? FileManager.default.removeItem(atPath: file) }
        try await withApp(clock: clock, configure: { $0.dataFile = file }, body)
    }

    func bearer(_ token: String) -> [(String, String)] {
        [Self.json, ("Authorization", "Bearer \(token)")]
    }

    func expectTokenRequired(_ response: TestHTTPResponse, _ comment: String) throws {
        #expect(response.status == 401, "\(comment): \(response.text)")
        #expect(try response.json["error"]?["code"] == "token_required", "\(comment)")
        #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true, "\(comment)")
    }

    /// `lookout_wakes_total` from `/metrics`.
    func wakes(_ app: LiveApp) async throws -> Double {
        let text = try await app.request("GET", "/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix("lookout_wakes_total ") }
        return Double(line?.split(separator: " ").last ?? "") ?? -1
    }

    // MARK: - What an expansion shows

    @Test("without a token, an expansion from a \"public\": true collection shows only its own public fields")
    func anonymousExpansion() async throws {
        try await withExpandApp { app in
            let document = try await app.request("GET", "/v1/posts/1?expand=author_id")
            #expect(document.status == 200)
            #expect(try document.json["author"] == ["id": 1, "name": "Ann"], "\(document.text)")
            #expect(!document.text.contains("example.com"))
            let projected = try await app.request("GET", "/v1/posts/1?fields=title&expand=author_id,topic_id")
            #expect(
                try projected.json
                    == [
                        "id": 1, "title": "Hello", "author_id": 1, "topic_id": 1, "author": ["id": 1, "name": "Ann"],
                        "topic": ["id": 1, "label": "news"],
                    ])
            let list = try await app.request("GET", "/v1/posts?expand=author_id")
            #expect(list.status == 200)
            #expect(
                try list.json.arrayValue?.map { $0["author"] } == [["id": 1, "name": "Ann"], ["id": 2, "name": "Bo"]])
            #expect(!list.text.contains("example.com"))
            for target in [
                "/v1/posts/1?expand=secret_id", "/v1/posts/1?expand=author_id,secret_id", "/v1/posts?expand=secret_id",
            ] {
                let refused = try await app.request("GET", target)
                try expectTokenRequired(refused, target)
                #expect(!refused.text.contains("s3cr3t") && !refused.text.contains("example.com"), "\(target)")
            }
        }
    }

    @Test("a token holder sees every field of every expansion")
    func holderExpansion() async throws {
        try await withExpandApp { app in
            let reader = bearer(try await app.login())
            let document = try await app.request(
                "GET", "/v1/posts/1?expand=author_id,secret_id,topic_id", headers: reader)
            #expect(document.status == 200)
            #expect(try document.json["author"] == ["id": 1, "name": "Ann", "email": "ann@example.com"])
            #expect(try document.json["secret"] == ["id": 1, "code": "s3cr3t"])
            #expect(try document.json["topic"] == ["id": 1, "label": "news"])
            let list = try await app.request("GET", "/v1/posts?expand=author_id", headers: reader)
            #expect(try list.json.arrayValue?.map { $0["author"]?["email"] } == ["ann@example.com", "bo@example.com"])
        }
    }

    @Test(
        "a token that does not verify reads a \"public\": true collection as no header, its expansions included",
        arguments: ["expired", "Bearer junk", "Basic ZGVtbzpkZW1v"])
    func refusedTokenOnPublicCollection(_ kind: String) async throws {
        let clock = ManualWallClock()
        try await withExpandApp(clock: clock) { app in
            var authorization = kind
            if kind == "expired" {
                authorization = "Bearer \(try await app.login())"
                clock.advance(seconds: 3601)
            }
            let headers = [Self.json, ("Authorization", authorization)]
            let document = try await app.request("GET", "/v1/posts/1?expand=author_id", headers: headers)
            #expect(document.status == 200, "\(document.text)")
            #expect(try document.json["author"] == ["id": 1, "name": "Ann"])
            #expect(document.header("Vary") == "Authorization")
            #expect(document.header("Cache-Control") == nil)
            let list = try await app.request("GET", "/v1/posts?expand=author_id", headers: headers)
            #expect(list.status == 200)
            #expect(!list.text.contains("example.com"))
            try expectTokenRequired(
                try await app.request("GET", "/v1/posts/1?expand=secret_id", headers: headers), "\(kind), secrets")
            let direct = try await app.request("GET", "/v1/authors/1", headers: headers)
            #expect(direct.status == 401, "on a collection not public as a whole it is the token's own error")
            #expect(try direct.json["error"]?["code"] == (kind == "expired" ? "token_expired" : "invalid_token"))
        }
    }

    // MARK: - Caching

    @Test("an answer that depends on the token through an expansion varies by Authorization; one that does not, not")
    func cacheHeaders() async throws {
        try await withExpandApp { app in
            let reader = bearer(try await app.login())
            for target in ["/v1/posts/1?expand=author_id", "/v1/posts?expand=author_id"] {
                let anonymous = try await app.request("GET", target)
                #expect(anonymous.header("Vary") == "Authorization", "\(target)")
                #expect(anonymous.header("Cache-Control") == nil, "\(target)")
                let full = try await app.request("GET", target, headers: reader)
                #expect(full.header("Vary") == "Authorization", "\(target)")
                #expect(full.header("Cache-Control") == "private", "\(target)")
                let tag = try #require(anonymous.header("ETag"))
                let unchanged = try await app.request("GET", target, headers: [Self.json, ("If-None-Match", tag)])
                #expect(unchanged.status == 304, "\(target)")
                #expect(unchanged.header("Vary") == "Authorization", "a 304 carries it too: \(target)")
            }
            for target in ["/v1/posts/1", "/v1/posts/1?expand=topic_id", "/v1/posts?expand=topic_id"] {
                for headers in [[Self.json], reader] {
                    let open = try await app.request("GET", target, headers: headers)
                    #expect(open.status == 200)
                    #expect(open.header("Vary") == nil, "\(target): every collection it reads is public")
                    #expect(open.header("Cache-Control") == nil, "\(target)")
                }
            }
        }
    }

    @Test(
        "the render caches never hand a token holder's expansion to a reader without one, in either order",
        arguments: ["/v1/posts/1?expand=author_id", "/v1/posts?expand=author_id"])
    func renderCaches(_ target: String) async throws {
        try await withExpandApp { app in
            let reader = bearer(try await app.login())
            for anonymousFirst in [true, false] {
                let probe = target + (anonymousFirst ? "" : "&fields=title")
                if anonymousFirst {
                    #expect(!(try await app.request("GET", probe).text.contains("example.com")), "\(probe)")
                }
                #expect(try await app.request("GET", probe, headers: reader).text.contains("ann@example.com"))
                #expect(!(try await app.request("GET", probe).text.contains("example.com")), "\(probe)")
                #expect(try await app.request("GET", probe, headers: reader).text.contains("ann@example.com"))
            }
        }
    }

    // MARK: - Long-polls

    @Test(
        "an anonymous poll through an expansion wakes on the expansion's public fields, never on its private ones",
        arguments: [
            "/v1/posts/1?expand=author_id", "/v1/posts?expand=author_id",
            "/v1/posts?fields=title&expand=author_id,topic_id",
        ])
    func anonymousPoll(_ target: String) async throws {
        try await withExpandApp { app in
            let editor = try await app.editorHeaders()
            let first = try await app.request("GET", target)
            #expect(first.status == 200)
            let tag = try #require(first.header("ETag"))
            async let held = app.request("GET", target + "&wait=30", headers: [Self.json, ("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            #expect(app.application.heldRequests == 1)
            let before = try await wakes(app)
            let privateWrite = try await app.request(
                "PATCH", "/v1/authors/1", headers: editor, body: #"{"email":"changed@example.com"}"#)
            #expect(privateWrite.status == 200)
            #expect(try await wakes(app) == before, "\(target): a private field of the expansion woke it")
            #expect(app.application.heldRequests == 1, "\(target) is still held")
            let publicWrite = try await app.request(
                "PATCH", "/v1/authors/1", headers: editor, body: #"{"name":"Anne"}"#)
            #expect(publicWrite.status == 200)
            let woken = try await held
            #expect(woken.status == 200)
            #expect(woken.header("Lookout-Changed") == "authors/1.name", "\(target)")
            #expect(woken.text.contains("Anne"))
            #expect(!woken.text.contains("example.com"), "\(target): \(woken.text)")
            #expect(woken.header("Vary") == "Authorization")
        }
    }

    @Test("a token holder's poll through an expansion wakes on the expansion's private fields")
    func holderPoll() async throws {
        try await withExpandApp { app in
            let editor = try await app.editorHeaders()
            let reader = bearer(try await app.login())
            let target = "/v1/posts/1?expand=author_id,secret_id"
            let tag = try #require(try await app.request("GET", target, headers: reader).header("ETag"))
            async let held = app.request("GET", target + "&wait=30", headers: reader + [("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            #expect(
                try await app.request("PATCH", "/v1/secrets/1", headers: editor, body: #"{"code":"n3w"}"#).status == 200
            )
            let woken = try await held
            #expect(woken.status == 200)
            #expect(woken.header("Lookout-Changed") == "secrets/1.code")
            #expect(try woken.json["secret"]?["code"] == "n3w")
            #expect(woken.header("Cache-Control") == "private")
        }
    }

    // MARK: - Watch

    @Test(
        "the multi-read watch: each read by its own collection's rules, the answer varying when any depends on the token"
    )
    func watch() async throws {
        let clock = ManualWallClock()
        try await withExpandApp(clock: clock) { app in
            let expired = bearer(try await app.login())
            clock.advance(seconds: 3601)
            let reader = bearer(try await app.login())
            let editor = try await app.editorHeaders()

            let open = try await app.request("GET", "/v1/watch?read=posts/1,topics/1.label")
            #expect(try open.json["values"]?["posts/1"]?["title"] == "Hello")
            #expect(open.header("Vary") == nil, "every read is of a \"public\": true collection")
            #expect(try await app.request("GET", "/v1/watch?read=posts/1", headers: expired).status == 200)

            let mixed = "/v1/watch?read=posts/1.title,authors/1"
            let anonymous = try await app.request("GET", mixed)
            #expect(try anonymous.json["values"]?["authors/1"] == ["id": 1, "name": "Ann"])
            #expect(anonymous.header("Vary") == "Authorization")
            #expect(anonymous.header("Cache-Control") == nil)
            let full = try await app.request("GET", mixed, headers: reader)
            #expect(try full.json["values"]?["authors/1"]?["email"] == "ann@example.com")
            #expect(full.header("Cache-Control") == "private")
            let refused = try await app.request("GET", mixed, headers: expired)
            #expect(refused.status == 401, "authors is not public as a whole: the token's own error")
            #expect(try refused.json["error"]?["code"] == "token_expired")
            try expectTokenRequired(try await app.request("GET", "/v1/watch?read=posts/1,secrets/1.code"), "watch")

            let tag = try #require(anonymous.header("ETag"))
            async let held = app.request("GET", mixed + "&wait=30", headers: [Self.json, ("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            let before = try await wakes(app)
            #expect(
                try await app.request("PATCH", "/v1/authors/1", headers: editor, body: #"{"email":"x@example.com"}"#)
                    .status == 200)
            #expect(try await wakes(app) == before, "a private field woke the watch")
            #expect(
                try await app.request("PATCH", "/v1/posts/1", headers: editor, body: #"{"title":"Hi"}"#).status == 200)
            let woken = try await held
            #expect(woken.header("Lookout-Changed") == "posts/1.title")
            #expect(!woken.text.contains("example.com"))
        }
    }
}
