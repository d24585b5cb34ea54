import Foundation
import LookoutApp
import LookoutJSON
import LookoutTestSupport
import Testing

@Suite("Errors: one JSON shape, the right status", .timeLimit(.minutes(2)))
struct ErrorTests {
    /// Checks the error shape and returns its code.
    func errorCode(_ response: TestHTTPResponse) throws -> String? {
        #expect(response.header("Content-Type") == "application/json; charset=utf-8")
        let error = try #require(try response.json["error"]?.objectValue)
        #expect(error.keys.sorted() == ["code", "message", "requestId"])
        #expect(error["requestId"]?.stringValue == response.header("X-Request-Id"))
        let message = error["message"]?.stringValue ?? ""
        #expect(!message.contains("Swift") && !message.contains("LookoutApp."), "no type names on the wire")
        return error["code"]?.stringValue
    }

    @Test("unknown paths are 404")
    func notFound() async throws {
        try await withApp { app in
            for target in [
                "/", "/v1", "/v1/nothing", "/v1/galleries/", "/v1//galleries", "/v2/galleries", "/v1/galleries/99",
                "/v1/galleries/abc", "/v1/nothing/1",
            ] {
                let response = try await app.request("GET", target)
                #expect(response.status == 404, "\(target)")
                #expect(try errorCode(response) == "not_found")
            }
        }
    }

    @Test("a known path with the wrong method is 405 with Allow")
    func methodNotAllowed() async throws {
        try await withApp { app in
            let response = try await app.request("DELETE", "/v1/galleries")
            #expect(response.status == 405)
            #expect(response.header("Allow") == "GET, HEAD, POST")
            #expect(try errorCode(response) == "method_not_allowed")
            let verify = try await app.request("GET", "/v1/auth/verify/now")
            #expect(verify.status == 404)
            let page = try await app.request("PATCH", "/v1/info_feed")
            #expect(page.status == 405)
            #expect(page.header("Allow") == "GET, HEAD, POST")
        }
    }

    /// Found by schemathesis: `PUT /v1/auth/login` matched `/v1/{collection}/{id}` and
    /// answered 404 for a collection named "auth". A literal path wins whatever the method.
    @Test("a literal path with another method is 405 with its own methods, not a collection's 404")
    func literalPathWrongMethod() async throws {
        try await withApp { app in
            for (method, target, allow) in [
                ("PUT", "/v1/auth/login", "POST"), ("GET", "/v1/auth/verify", "POST"),
                ("DELETE", "/v1/auth/token", "POST"), ("PATCH", "/v1/auth/revoke", "POST"),
                ("DELETE", "/v1/watch", "GET, HEAD, POST"), ("PUT", "/openapi.json", "GET, HEAD"),
            ] {
                let response = try await app.request(method, target)
                #expect(response.status == 405, "\(method) \(target)")
                #expect(response.header("Allow") == allow, "\(method) \(target)")
                #expect(try errorCode(response) == "method_not_allowed")
            }
            // The collections' own routes are unchanged.
            #expect(try await app.request("PUT", "/v1/nothing/1").status == 401)
            #expect(try await app.request("GET", "/v1/galleries/1").status == 200)
        }
    }

    @Test("a body over the limit is 413")
    func payloadTooLarge() async throws {
        try await withApp(configure: { $0.http.maxBodyBytes = 4_096 }) { app in
            let body = #"{"email":"demo@example.com","password":""# + String(repeating: "x", count: 5_000) + #""}"#
            let response = try await app.request("POST", "/v1/auth/login", body: body)
            #expect(response.status == 413)
            #expect(try errorCode(response) == "payload_too_large")
        }
    }

    @Test("a client's X-Request-Id is echoed when it is plain, replaced when it is not")
    func requestIDs() async throws {
        try await withApp { app in
            let given = try await app.request("GET", "/nothing", headers: [("X-Request-Id", "abc-123")])
            #expect(given.header("X-Request-Id") == "abc-123")
            #expect(try given.json["error"]?["requestId"] == "abc-123")
            let hostile = try await app.request("GET", "/nothing", headers: [("X-Request-Id", "<script>")])
            #expect(hostile.header("X-Request-Id") != "<script>")
            let first = try await app.request("GET", "/nothing").header("X-Request-Id")
            let second = try await app.request("GET", "/nothing").header("X-Request-Id")
            #expect(first != second)
        }
    }

    @Test("HEAD on a feed answers its headers without a body")
    func head() async throws {
        try await withApp { app in
            let port = app.port
            let (head, get) = try await offPool {
                let connection = try TestHTTPConnection(host: "127.0.0.1", port: port)
                try connection.send("HEAD /v1/galleries HTTP/1.1\r\nHost: x\r\n\r\n")
                return (try connection.readResponse(forMethod: "HEAD"), try connection.request("GET", "/v1/galleries"))
            }
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(head.header("Content-Length") == String(get.body.count))
        }
    }

    @Test("a broken data file stops start-up with a message naming it")
    func brokenDataFile() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-broken-\(UUID()).json").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        for (contents, fragment) in [
            ("{", "not valid JSON"), (#"{"collections":[{"name":"a","documents":[{"id":"x"}]}]}"#, "integer"),
            (#"{"users":[{"email":"a@b","password_hash":"plain"}]}"#, "password_hash"),
        ] {
            try contents.write(toFile: path, atomically: true, encoding: .utf8)
            do {
                _ = try await LiveApp.start(configure: { $0.dataFile = path })
                Issue.record("started with a broken data file")
            } catch let error as StartupError {
                #expect(error.description.contains(path))
                #expect(error.description.contains(fragment), "\(error)")
            }
        }
    }
}
