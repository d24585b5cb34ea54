import Crypto
import Foundation
import LookoutApp
import LookoutAuth
import LookoutJSON
import LookoutTestSupport
import Testing

/// `/v1/auth/token`, `/introspect`, `/revoke` and the JWKS, through a real server.
@Suite("OAuth-style token endpoints")
struct TokenEndpointTests {
    @Test("the password grant answers RFC 6749's shape, not cached; the token writes; a narrower scope cannot")
    func passwordGrant() async throws {
        try await withCheapApp { app in
            let response = try await app.form(
                "/v1/auth/token",
                ["grant_type": "password", "username": "Editor@Example.com", "password": "editor-password"])
            #expect(response.status == 200)
            #expect(response.header("Cache-Control") == "no-store")
            #expect(response.header("Pragma") == "no-cache")
            let body = try response.json
            #expect(
                Set(body.objectValue?.keys ?? []) == [
                    "access_token", "token_type", "expires_in", "refresh_token", "scope",
                ])
            #expect(body["token_type"] == "Bearer")
            #expect(body["expires_in"] == 3600)
            #expect(body["scope"] == "editor")
            let refresh = try #require(body["refresh_token"]?.stringValue)
            #expect(refresh.hasPrefix("lkr_") && refresh.count > 40)
            let access = try #require(body["access_token"]?.stringValue)
            #expect(try await app.write(access).status == 201)

            let narrowed = try await app.form(
                "/v1/auth/token",
                [
                    "grant_type": "password", "username": "editor@example.com", "password": "editor-password",
                    "scope": "reader",
                ])
            #expect(try narrowed.json["scope"] == "reader")
            let readerToken = try #require(try narrowed.json["access_token"]?.stringValue)
            #expect(try await app.write(readerToken).status == 403)

            // JSON bodies are accepted too.
            let json = try await app.request(
                "POST", "/v1/auth/token",
                body: #"{"grant_type":"password","username":"demo@example.com","password":"demo-password"}"#)
            #expect(json.status == 200)
            #expect(try json.json["scope"] == "reader")
        }
    }

    @Test(
        "bad token requests get RFC 6749 errors: invalid_grant, invalid_request, invalid_scope, unsupported_grant_type")
    func errors() async throws {
        try await withCheapApp { app in
            let cases: [([String: String], String)] = [
                (["grant_type": "password", "username": "demo@example.com", "password": "wrong"], "invalid_grant"),
                (["grant_type": "password", "username": "nobody@example.com", "password": "x"], "invalid_grant"),
                (["grant_type": "password", "username": "demo@example.com"], "invalid_request"),
                (["grant_type": "password", "username": "demo@example.com", "password": ""], "invalid_request"),
                (["username": "demo@example.com", "password": "demo-password"], "invalid_request"),
                (
                    [
                        "grant_type": "password", "username": "demo@example.com", "password": "demo-password",
                        "scope": "admin",
                    ],
                    "invalid_scope"
                ),
                (
                    [
                        "grant_type": "password", "username": "demo@example.com", "password": "demo-password",
                        "scope": "root",
                    ],
                    "invalid_scope"
                ),
                (["grant_type": "client_credentials"], "unsupported_grant_type"),
                (["grant_type": "refresh_token"], "invalid_request"),
                (["grant_type": "refresh_token", "refresh_token": "lkr_forged"], "invalid_grant"),
                (["grant_type": "refresh_token", "refresh_token": "eyJhbGciOi.x.y"], "invalid_grant"),
            ]
            for (parameters, code) in cases {
                let response = try await app.form("/v1/auth/token", parameters)
                #expect(response.status == 400, "\(parameters)")
                #expect(try response.json["error"]?.stringValue == code, "\(parameters)")
                #expect(try response.json["error_description"]?.stringValue?.isEmpty == false)
                #expect(response.header("Cache-Control") == "no-store")
            }
            let twice = try await app.request(
                "POST", "/v1/auth/token", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                body: "grant_type=password&username=a&username=b&password=x")
            #expect(try twice.json["error"] == "invalid_request")
            let text = try await app.request(
                "POST", "/v1/auth/token", headers: [("Content-Type", "text/plain")], body: "grant_type=password")
            #expect(text.status == 400)
            #expect(try text.json["error"] == "invalid_request")
        }
    }

    @Test("a password with non-ASCII characters logs in through the form encoding")
    func nonASCIIPassword() async throws {
        try await withCheapApp { app in
            let password = "pässwörd-東京-🔑"
            try UserCommands.add(
                "kana@example.com", role: .reader, password: password, in: app.configuration)
            let response = try await app.form(
                "/v1/auth/token", ["grant_type": "password", "username": "kana@example.com", "password": password])
            #expect(response.status == 200)
            let decomposed = try await app.form(
                "/v1/auth/token",
                [
                    "grant_type": "password", "username": "kana@example.com",
                    "password": password.decomposedStringWithCanonicalMapping,
                ])
            #expect(try decomposed.json["error"] == "invalid_grant")
        }
    }

    @Test("refresh tokens rotate; replaying a rotated one revokes its whole family, access tokens included")
    func refreshReplay() async throws {
        try await withCheapApp { app in
            let first = try await app.passwordGrant("editor@example.com", "editor-password")
            let other = try await app.passwordGrant("editor@example.com", "editor-password")
            let second = try await app.refresh(first.refresh)
            #expect(second.status == 200)
            let rotated = try #require(try second.json["refresh_token"]?.stringValue)
            let rotatedAccess = try #require(try second.json["access_token"]?.stringValue)
            #expect(rotated != first.refresh)
            #expect(try await app.verify(rotatedAccess).status == 200)

            // The stolen copy comes back: refused, and the family is gone.
            let replay = try await app.refresh(first.refresh)
            #expect(replay.status == 400)
            #expect(try replay.json["error"] == "invalid_grant")
            #expect(try await app.refresh(rotated).status == 400)
            for token in [first.access, rotatedAccess] {
                let verified = try await app.verify(token)
                #expect(verified.status == 401)
                #expect(try verified.json["error"]?["code"] == "token_revoked")
                #expect(try await app.write(token).status == 401)
            }
            // Another login of the same user is untouched.
            #expect(try await app.verify(other.access).status == 200)
            #expect(try await app.refresh(other.refresh).status == 200)
        }
    }

    @Test("of several uses of one refresh token at once, exactly one succeeds")
    func concurrentRefresh() async throws {
        try await withCheapApp { app in
            let grant = try await app.passwordGrant("demo@example.com", "demo-password")
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<5 { group.addTask { try await app.refresh(grant.refresh).status } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses.sorted() == [200, 400, 400, 400, 400])
        }
    }

    @Test("a refresh token expires; a removed user's refresh fails; a demoted user's scope shrinks")
    func refreshLimits() async throws {
        try await withCheapApp(configure: { $0.refreshTokenLifetime = .seconds(600) }) { app in
            let old = try await app.passwordGrant("editor@example.com", "editor-password")
            app.clock.advance(seconds: 600)
            #expect(try await app.refresh(old.refresh).json["error"] == "invalid_grant")

            let fresh = try await app.passwordGrant("editor@example.com", "editor-password")
            try UserCommands.setRole("editor@example.com", role: .reader, in: app.configuration)
            let demoted = try await app.refresh(fresh.refresh)
            #expect(try demoted.json["scope"] == "reader")
            let next = try #require(try demoted.json["refresh_token"]?.stringValue)
            try UserCommands.remove("editor@example.com", in: app.configuration)
            #expect(try await app.refresh(next).json["error"] == "invalid_grant")
        }
    }

    @Test("introspection (RFC 7662): needs a token; shows one's own tokens, all to an admin; inactive otherwise")
    func introspect() async throws {
        try await withCheapApp { app in
            let editor = try await app.passwordGrant("editor@example.com", "editor-password")
            let reader = try await app.passwordGrant("demo@example.com", "demo-password")
            #expect(try await app.form("/v1/auth/introspect", ["token": editor.access]).status == 401)

            let own = try await app.form("/v1/auth/introspect", ["token": editor.access], bearer: editor.access)
            #expect(own.status == 200)
            #expect(own.header("Cache-Control") == "no-store")
            let claims = try own.json
            #expect(claims["active"] == true)
            #expect(claims["sub"] == "editor@example.com")
            #expect(claims["scope"] == "editor")
            #expect(claims["token_type"] == "Bearer")
            #expect(claims["exp"]?.intValue == (claims["iat"]?.intValue ?? 0) + 3600)
            let refresh = try await app.form("/v1/auth/introspect", ["token": editor.refresh], bearer: editor.access)
            #expect(try refresh.json["active"] == true)
            #expect(try refresh.json["token_type"] == "refresh_token")

            let others = try await app.form("/v1/auth/introspect", ["token": editor.access], bearer: reader.access)
            #expect(try others.json == ["active": false])

            try UserCommands.add("root@example.com", role: .admin, password: "root-password", in: app.configuration)
            let admin = try await app.passwordGrant("root@example.com", "root-password")
            let seen = try await app.form("/v1/auth/introspect", ["token": reader.access], bearer: admin.access)
            #expect(try seen.json["sub"] == "demo@example.com")

            for garbage in ["", "x", "lkr_nothing", editor.access + "x"] where !garbage.isEmpty {
                let answer = try await app.form("/v1/auth/introspect", ["token": garbage], bearer: admin.access)
                #expect(try answer.json == ["active": false])
            }
            _ = try await app.refresh(editor.refresh)
            let retired = try await app.form("/v1/auth/introspect", ["token": editor.refresh], bearer: admin.access)
            #expect(try retired.json == ["active": false])
        }
    }

    @Test("revocation (RFC 7009): 200 for anything; a revoked access token fails everywhere, also after a restart")
    func revoke() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-revoke-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualWallClock()
        let file = try cheapDataFile()
        defer { try? FileManager.default.removeItem(atPath: file) }
        let app = try await LiveApp.start(dataDirectory: directory, clock: clock) { $0.dataFile = file }
        let editor = try await app.passwordGrant("editor@example.com", "editor-password")
        let seedToken = try await app.login("editor@example.com", "editor-password")
        for garbage in ["nonsense", "lkr_unknown", "a.b.c"] {
            #expect(try await app.form("/v1/auth/revoke", ["token": garbage]).status == 200)
        }
        #expect(try await app.form("/v1/auth/revoke", [:]).status == 400)

        let revoked = try await app.form("/v1/auth/revoke", ["token": seedToken, "token_type_hint": "access_token"])
        #expect(revoked.status == 200)
        let verified = try await app.verify(seedToken)
        #expect(verified.status == 401)
        #expect(try verified.json["error"]?["code"] == "token_revoked")
        #expect(try await app.write(seedToken).status == 401)
        let introspected = try await app.form("/v1/auth/introspect", ["token": seedToken], bearer: editor.access)
        #expect(try introspected.json == ["active": false])

        // Revoking a refresh token takes its access tokens with it.
        #expect(try await app.form("/v1/auth/revoke", ["token": editor.refresh]).status == 200)
        #expect(try await app.verify(editor.access).status == 401)
        #expect(try await app.refresh(editor.refresh).status == 400)
        app.shutdown()

        let restarted = try await LiveApp.start(dataDirectory: directory, clock: clock) { $0.dataFile = file }
        defer { restarted.shutdown() }
        #expect(try await restarted.verify(seedToken).status == 401)
        #expect(try await restarted.verify(editor.access).status == 401)
        #expect(
            try await restarted.verify(try await restarted.login("editor@example.com", "editor-password")).status == 200
        )
    }

    @Test("with EdDSA the JWKS publishes the public key, and it alone verifies the token; HS256 publishes nothing")
    func jwks() async throws {
        try await withCheapApp { app in
            let response = try await app.request("GET", "/.well-known/jwks.json")
            #expect(try response.json == ["keys": []])
        }
        try await withCheapApp(configure: { $0.signingAlgorithm = .edDSA }) { app in
            let token = try await app.login()
            let response = try await app.request("GET", "/.well-known/jwks.json")
            #expect(response.header("Cache-Control") == "public, max-age=60")
            let keys = try #require(try response.json["keys"]?.arrayValue)
            #expect(keys.count == 1)
            let jwk = try #require(keys.first)
            #expect(jwk["kty"] == "OKP")
            #expect(jwk["crv"] == "Ed25519")
            #expect(jwk["d"] == nil)
            let parts = token.split(separator: ".")
            let header = try JSONParser.parse(try #require(Base64URL.decode(parts[0])))
            #expect(header["alg"] == "EdDSA")
            #expect(header["kid"] == jwk["kid"])
            let publicKey = try #require(jwk["x"]?.stringValue.flatMap { Base64URL.decode($0) })
            let signature = try #require(Base64URL.decode(parts[2]))
            #expect(
                try Ed25519Check.isValid(
                    signature: signature, of: Array("\(parts[0]).\(parts[1])".utf8), publicKey: publicKey))
        }
    }

    @Test("lookout keys rotate while serving: new tokens use the new key, old ones still verify")
    func rotation() async throws {
        try await withCheapApp { app in
            let before = try await app.login()
            let ring = try KeyRingFile(directory: app.dataDirectory).rotate(
                to: .edDSA, now: Date(), keepRetired: .seconds(86400))
            try await Task.sleep(for: .milliseconds(1100))
            let after = try await app.login()
            let header = try JSONParser.parse(try #require(Base64URL.decode(after.split(separator: ".")[0])))
            #expect(header["kid"]?.stringValue == ring.active.id)
            #expect(header["alg"] == "EdDSA")
            #expect(try await app.verify(before).status == 200)
            #expect(try await app.verify(after).status == 200)
            let keys = try await app.request("GET", "/.well-known/jwks.json").json["keys"]?.arrayValue
            #expect(keys?.first?["kid"]?.stringValue == ring.active.id)
        }
    }
}

extension LiveApp {
    var configuration: AppConfiguration {
        AppConfiguration(dataDirectory: dataDirectory)
    }

    /// A form-encoded POST, optionally with a bearer token.
    func form(_ path: String, _ parameters: [String: String], bearer: String? = nil) async throws
        -> TestHTTPResponse
    {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let body = parameters.sorted { $0.key < $1.key }.map { name, value in
            "\(name)=\(value.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")"
        }.joined(separator: "&")
        var headers = [("Content-Type", "application/x-www-form-urlencoded")]
        if let bearer { headers.append(("Authorization", "Bearer \(bearer)")) }
        return try await request("POST", path, headers: headers, body: body)
    }

    func passwordGrant(_ username: String, _ password: String) async throws -> (access: String, refresh: String) {
        let response = try await form(
            "/v1/auth/token", ["grant_type": "password", "username": username, "password": password])
        guard let access = try response.json["access_token"]?.stringValue,
            let refresh = try response.json["refresh_token"]?.stringValue
        else { throw LoginFailed(status: response.status) }
        return (access, refresh)
    }

    func refresh(_ token: String) async throws -> TestHTTPResponse {
        try await form("/v1/auth/token", ["grant_type": "refresh_token", "refresh_token": token])
    }

    func verify(_ token: String) async throws -> TestHTTPResponse {
        try await request(
            "POST", "/v1/auth/verify",
            headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")])
    }

    /// A POST to the demo's pickup feeds with `token`.
    func write(_ token: String) async throws -> TestHTTPResponse {
        try await request(
            "POST", "/v1/pickup_feeds",
            headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(token)")],
            body: #"{"title":"written"}"#)
    }
}

/// Verifies an Ed25519 signature with nothing but the public key, as a client would.
enum Ed25519Check {
    static func isValid(signature: [UInt8], of input: [UInt8], publicKey: [UInt8]) throws -> Bool {
        try Curve25519.Signing.PublicKey(rawRepresentation: publicKey).isValidSignature(signature, for: input)
    }
}

/// The demo users at the lowest scrypt cost and a `pickup_feeds` collection to write to:
/// these suites log in many times, and full-cost checks beside other suites' could outlast
/// the socket timeout on a loaded machine.
func cheapDataFile() throws -> String {
    try ReadAccessTests.dataFile(#"[{"name": "pickup_feeds", "public": true, "documents": [{"id": 1, "title": "t"}]}]"#)
}

func withCheapApp(
    clock: ManualWallClock = ManualWallClock(),
    configure: @escaping (inout AppConfiguration) -> Void = { _ in },
    _ body: (LiveApp) async throws -> Void
) async throws {
    let file = try cheapDataFile()
    defer { try? FileManager.default.removeItem(atPath: file) }
    try await withApp(
        clock: clock,
        configure: {
            $0.dataFile = file
            configure(&$0)
        }, body)
}
