import Foundation
import LookoutJSON
import LookoutTestSupport
import Testing

@Suite("Seed app contract: login and verify", .timeLimit(.minutes(2)))
struct AuthContractTests {
    @Test("the app's first launch: verify with no Authorization header is 401 with the error shape")
    func verifyWithoutToken() async throws {
        try await withApp { app in
            let response = try await app.request("POST", "/v1/auth/verify", body: "{}")
            #expect(response.status == 401)
            #expect(response.header("WWW-Authenticate")?.hasPrefix("Bearer") == true)
            let error = try response.json["error"]
            #expect(error?["code"] == "missing_token")
            #expect(error?["requestId"]?.stringValue == response.header("X-Request-Id"))
        }
    }

    @Test("login gives a JWT that verify echoes; login ignores a stale Bearer token")
    func loginAndVerify() async throws {
        try await withApp { app in
            let token = try await app.login()
            #expect(token.split(separator: ".").count == 3)
            let verified = try await app.request(
                "POST", "/v1/auth/verify",
                headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")], body: "{}")
            #expect(verified.status == 200)
            #expect(try verified.json == ["token": .string(token)])
            #expect(verified.header("Cache-Control") == "no-store")

            let stale = try await app.request(
                "POST", "/v1/auth/login",
                headers: [("Content-Type", "application/json"), ("Authorization", "Bearer expired.garbage.token")],
                body: #"{"password":"demo-password","email":"demo@example.com"}"#)
            #expect(stale.status == 200)
            #expect(try stale.json["token"]?.stringValue?.isEmpty == false)
        }
    }

    @Test("a body from JSONSerialization, with escaped slashes and any key order, logs in")
    func foundationBody() async throws {
        try await withApp { app in
            let body = try JSONSerialization.data(withJSONObject: [
                "password": "demo-password", "email": "demo@example.com",
            ])
            let response = try await app.request("POST", "/v1/auth/login", body: String(decoding: body, as: UTF8.self))
            #expect(response.status == 200)
            let escaped = try await app.request(
                "POST", "/v1/auth/login", body: #"{"email":"demo@example.com","password":"demo-password","x":"a\/b"}"#)
            #expect(escaped.status == 200)
        }
    }

    @Test("bad credentials are 401; a malformed body is 400; a non-JSON body is 415")
    func badLogins() async throws {
        try await withApp { app in
            let wrong = try await app.request(
                "POST", "/v1/auth/login", body: #"{"email":"demo@example.com","password":"nope"}"#)
            #expect(wrong.status == 401)
            #expect(try wrong.json["error"]?["code"] == "invalid_credentials")
            let unknown = try await app.request(
                "POST", "/v1/auth/login", body: #"{"email":"who@example.com","password":"demo-password"}"#)
            #expect(unknown.status == 401)
            #expect(try unknown.json["error"]?["message"] == wrong.json["error"]?["message"])

            let missing = try await app.request("POST", "/v1/auth/login", body: #"{"email":"demo@example.com"}"#)
            #expect(missing.status == 400)
            #expect(try missing.json["error"]?["code"] == "invalid_body")
            let malformed = try await app.request("POST", "/v1/auth/login", body: #"{"email":"#)
            #expect(malformed.status == 400)
            #expect(try malformed.json["error"]?["code"] == "malformed_json")
            let notObject = try await app.request("POST", "/v1/auth/login", body: "[1]")
            #expect(notObject.status == 400)
            let form = try await app.request(
                "POST", "/v1/auth/login", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: "email=demo@example.com&password=demo-password")
            #expect(form.status == 415)
            #expect(try form.json["error"]?["code"] == "unsupported_media_type")
        }
    }

    @Test("verify refuses a non-Bearer scheme, a tampered token and an expired token")
    func verifyRefusals() async throws {
        let clock = ManualWallClock()
        try await withApp(clock: clock) { app in
            let token = try await app.login()
            func verify(_ authorization: String) async throws -> TestHTTPResponse {
                try await app.request(
                    "POST", "/v1/auth/verify",
                    headers: [("Content-Type", "application/json"), ("Authorization", authorization)], body: "{}")
            }
            #expect(try await verify("Basic ZGVtbzpkZW1v").status == 401)
            #expect(try await verify("Token \(token)").status == 401)
            #expect(
                try await verify("bearer \(token)").status == 200, "the scheme is case-insensitive (RFC 9110 §11.1)")

            var parts = token.split(separator: ".").map(String.init)
            parts[1] = String(parts[1].dropLast()) + (parts[1].hasSuffix("A") ? "B" : "A")
            let tampered = try await verify("Bearer \(parts.joined(separator: "."))")
            #expect(tampered.status == 401)
            #expect(try tampered.json["error"]?["code"] == "invalid_token")

            clock.advance(seconds: 3601)
            let expired = try await verify("Bearer \(token)")
            #expect(expired.status == 401)
            #expect(try expired.json["error"]?["code"] == "token_expired")
        }
    }

    @Test("the signing key is kept in the data directory: tokens survive a restart")
    func keyPersists() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-restart-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try await LiveApp.start(dataDirectory: directory)
        let token = try await first.login()
        first.shutdown()
        let second = try await LiveApp.start(dataDirectory: directory)
        defer { second.shutdown() }
        let verified = try await second.request(
            "POST", "/v1/auth/verify",
            headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")])
        #expect(verified.status == 200)
        let mode =
            try FileManager.default.attributesOfItem(atPath: directory + "/signing-keys.json")[.posixPermissions]
            as? Int
        #expect(mode == 0o600)
    }
}
