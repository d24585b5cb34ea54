import Foundation
import LookoutApp
import LookoutAuth
import LookoutJSON
import LookoutTestSupport
import Testing

/// Forged and stale tokens against a real server, at each door a token opens: the seed
/// app's verify, a write, and introspection.
@Suite("Token attacks through HTTP")
struct TokenAttackTests {
    @Test(
        "alg none, another algorithm, a wrong signature, an unknown kid, expired, not yet valid and revoked are all 401"
    )
    func matrix() async throws {
        try await withCheapApp { app in
            let genuine = try await app.login("editor@example.com", "editor-password")
            // A service holding the server's own keys, to forge with.
            let ring = try #require(try KeyRingFile(directory: app.dataDirectory).load())
            let clock = app.clock
            let forger = TokenService(keys: SigningKeys(fixed: ring), now: { clock.now() })
            let stranger = TokenService(keys: SigningKeys(fixed: KeyRing(.generate())), now: { clock.now() })
            let claims = try forger.verify(genuine)
            let parts = genuine.split(separator: ".").map(String.init)
            let kid = ring.active.id

            func header(_ fields: JSONValue) -> String { Base64URL.encode(JSONWriter.encode(fields)) }
            var expired = claims
            expired.issuedAt = clock.now().addingTimeInterval(-7200)
            expired.expires = clock.now().addingTimeInterval(-1)
            var early = claims
            early.notBefore = clock.now().addingTimeInterval(120)
            var promoted = claims
            promoted.scope = "admin"
            let promotedPayload = Base64URL.encode(
                JSONWriter.encode(
                    try JSONParser.parse(
                        #"{"sub":"editor@example.com","iat":\#(Int(claims.issuedAt.timeIntervalSince1970)),"exp":\#(Int(claims.expires.timeIntervalSince1970)),"jti":"x","scope":"admin"}"#
                    )))

            let revoked = try await app.login("editor@example.com", "editor-password")
            #expect(try await app.form("/v1/auth/revoke", ["token": revoked]).status == 200)

            let attacks: [(String, String, String)] = [
                ("alg none", "\(header(["alg": "none", "typ": "JWT"])).\(parts[1]).", "invalid_token"),
                (
                    "alg none with our kid", "\(header(["alg": "none", "kid": .string(kid)])).\(parts[1]).",
                    "invalid_token"
                ),
                ("HS512", "\(header(["alg": "HS512", "kid": .string(kid)])).\(parts[1]).\(parts[2])", "invalid_token"),
                ("RS256", "\(header(["alg": "RS256", "kid": .string(kid)])).\(parts[1]).\(parts[2])", "invalid_token"),
                ("wrong signature", "\(parts[0]).\(promotedPayload).\(parts[2])", "invalid_token"),
                ("another key", stranger.sign(claims), "invalid_token"),
                ("another key, our kid", stranger.sign(claims, header: ["kid": .string(kid)]), "invalid_token"),
                ("unknown kid", forger.sign(claims, header: ["kid": "not-a-key"]), "invalid_token"),
                ("expired", forger.sign(expired), "token_expired"),
                ("not yet valid", forger.sign(early), "invalid_token"),
                ("revoked", revoked, "token_revoked"),
                ("truncated", String(genuine.dropLast(3)), "invalid_token"),
                ("not a JWT", "hello", "invalid_token"),
            ]
            for (name, token, code) in attacks {
                let verified = try await app.verify(token)
                #expect(verified.status == 401, "\(name)")
                #expect(try verified.json["error"]?["code"]?.stringValue == code, "\(name)")
                #expect(verified.header("WWW-Authenticate")?.hasPrefix("Bearer") == true, "\(name)")
                #expect(try await app.write(token).status == 401, "\(name)")
            }
            // The forger's own genuine-looking token passes: the matrix fails for the right reasons.
            #expect(try await app.verify(forger.sign(promoted)).status == 200)
            #expect(try await app.verify(genuine).status == 200)
        }
    }
}
