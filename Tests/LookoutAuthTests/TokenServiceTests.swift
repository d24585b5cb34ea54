import Foundation
import LookoutJSON
import LookoutTestSupport
import Testing

@testable import LookoutAuth

@Suite("Tokens")
struct TokenServiceTests {
    let clock = ManualWallClock(Date(timeIntervalSince1970: 1_800_000_000))
    let user = User(
        email: "Demo@Example.com", role: .reader, passwordHash: try! PasswordHash.make(password: "x", logRounds: 4))

    func service(_ keys: SigningKeys = SigningKeys(fixed: KeyRing(.generate()))) -> TokenService {
        let clock = clock
        return TokenService(keys: keys, lifetime: .seconds(3600), now: { clock.now() })
    }

    @Test("an issued token verifies and carries sub, iat, exp (1 h), jti and scope, never a password")
    func issueAndVerify() throws {
        for algorithm in SigningKey.Algorithm.allCases {
            let tokens = service(SigningKeys(fixed: KeyRing(.generate(algorithm))))
            let issued = tokens.issue(for: user)
            let claims = try tokens.verify(issued.token)
            #expect(claims == issued.claims)
            #expect(claims.subject == "demo@example.com")
            #expect(claims.scope == "reader")
            #expect(claims.expires.timeIntervalSince(claims.issuedAt) == 3600)
            #expect(!claims.id.isEmpty)
            let header = try #require(JSONParser.parse(part(0, of: issued.token)).objectValue)
            #expect(header["alg"]?.stringValue == algorithm.rawValue)
            #expect(header["kid"]?.stringValue == tokens.keys.ring.active.id)
            let payload = String(decoding: part(1, of: issued.token), as: UTF8.self)
            #expect(!payload.contains("password") && !payload.contains("scrypt"))
            #expect(try tokens.verify(tokens.issue(for: user).token).id != claims.id)
        }
    }

    @Test("a token expires after its lifetime")
    func expiry() throws {
        let tokens = service()
        let token = tokens.issue(for: user).token
        clock.advance(seconds: 3599)
        _ = try tokens.verify(token)
        clock.advance(seconds: 1)
        #expect(throws: AuthError.tokenExpired) { try tokens.verify(token) }
    }

    @Test("a token issued in the future, or with nbf in the future, is not yet valid")
    func notYetValid() throws {
        let tokens = service()
        let token = tokens.issue(for: user).token
        clock.advance(seconds: -60)
        #expect(throws: AuthError.tokenNotYetValid) { try tokens.verify(token) }
        clock.advance(seconds: 60)

        var claims = tokens.issue(for: user).claims
        claims.notBefore = clock.now().addingTimeInterval(30)
        let early = tokens.sign(claims)
        #expect(throws: AuthError.tokenNotYetValid) { try tokens.verify(early) }
        clock.advance(seconds: 30)
        #expect(try tokens.verify(early).notBefore == claims.notBefore)
    }

    @Test("alg none, another algorithm, a wrong signature, an unknown kid, crit and garbage are refused")
    func forged() throws {
        let tokens = service()
        let issued = tokens.issue(for: user)
        let parts = issued.token.split(separator: ".").map(String.init)

        var admin = issued.claims
        admin.scope = "admin"
        let tampered = [parts[0], encode(JSONWriter.encode(admin.json)), parts[2]].joined(separator: ".")
        #expect(throws: AuthError.invalidToken("the token's signature is wrong")) { try tokens.verify(tampered) }

        let kid = tokens.keys.ring.active.id
        for algorithm in ["none", "None", "HS512", "RS256", "EdDSA", "ES256"] {
            let header = encode(JSONWriter.encode(["alg": .string(algorithm), "typ": "JWT", "kid": .string(kid)]))
            for signature in ["", parts[2]] {
                #expect(throws: AuthError.invalidToken("the token's algorithm is not its key's, HS256")) {
                    try tokens.verify("\(header).\(parts[1]).\(signature)")
                }
            }
        }
        let noKid = encode(JSONWriter.encode(["alg": "HS256", "typ": "JWT"]))
        #expect(throws: AuthError.invalidToken("the token was not signed by a known key")) {
            try tokens.verify("\(noKid).\(parts[1]).\(parts[2])")
        }

        let foreign = service().issue(for: user).token
        #expect(throws: AuthError.invalidToken("the token was not signed by a known key")) {
            try tokens.verify(foreign)
        }
        // A foreign key that claims our kid: the signature check refuses it.
        let impostor = service(SigningKeys(fixed: KeyRing(.generate())))
        let impostorToken = impostor.sign(issued.claims, header: ["kid": .string(kid)])
        #expect(throws: AuthError.invalidToken("the token's signature is wrong")) { try tokens.verify(impostorToken) }

        let critical = tokens.sign(issued.claims, header: ["crit": ["exp"]])
        #expect(throws: AuthError.invalidToken("the token has critical extensions")) { try tokens.verify(critical) }

        for garbage in ["", "a.b", "a.b.c", "....", "\(parts[0]).\(parts[1])", String(repeating: "x", count: 10_000)] {
            #expect(throws: AuthError.self) { try tokens.verify(garbage) }
        }
    }

    @Test("an EdDSA key never verifies an HS256 token keyed with its public key (algorithm confusion)")
    func algorithmConfusion() throws {
        let key = SigningKey.generate(.edDSA)
        let tokens = service(SigningKeys(fixed: KeyRing(key)))
        let claims = tokens.issue(for: user).claims
        let publicKey = try #require(key.publicJWK?["x"]?.stringValue)
        let confused = service(SigningKeys(fixed: KeyRing(try SigningKey(secret: Array(publicKey.utf8)))))
        let token = confused.sign(claims, header: ["kid": .string(key.id)])
        #expect(throws: AuthError.invalidToken("the token's algorithm is not its key's, EdDSA")) {
            try tokens.verify(token)
        }
    }

    @Test("a revoked token fails, by its id or by its refresh-token family, until it expires")
    func revoked() throws {
        let tokens = service()
        let plain = tokens.issue(for: user)
        let fromSession = tokens.issue(for: user, session: "family-1")
        let other = tokens.issue(for: user, session: "family-2")
        tokens.revocations.revoke(tokenID: plain.claims.id, until: plain.claims.expires)
        tokens.revocations.revoke(session: "family-1", until: fromSession.claims.expires)
        #expect(throws: AuthError.tokenRevoked) { try tokens.verify(plain.token) }
        #expect(throws: AuthError.tokenRevoked) { try tokens.verify(fromSession.token) }
        #expect(try tokens.verify(other.token).session == "family-2")
        tokens.revocations.prune(at: clock.now().addingTimeInterval(3599))
        #expect(tokens.revocations.count == 2)
        tokens.revocations.prune(at: clock.now().addingTimeInterval(3600))
        #expect(tokens.revocations.count == 0)
    }

    @Test("a token verified before is remembered, but expiry and revocation still count at every use")
    func rememberedTokens() throws {
        let tokens = service()
        let issued = tokens.issue(for: user)
        #expect(try tokens.verify(issued.token) == issued.claims)
        #expect(try tokens.verify(issued.token) == issued.claims)
        tokens.revocations.revoke(tokenID: issued.claims.id, until: issued.claims.expires)
        #expect(throws: AuthError.tokenRevoked) { try tokens.verify(issued.token) }
        let other = tokens.issue(for: user).token
        _ = try tokens.verify(other)
        clock.advance(seconds: 3600)
        #expect(throws: AuthError.tokenExpired) { try tokens.verify(other) }
    }

    @Test("a token with a remembered token's signature but another payload is not taken for it")
    func rememberedByWholeText() throws {
        let tokens = service()
        let issued = tokens.issue(for: user)
        #expect(try tokens.verify(issued.token) == issued.claims)  // remembered now
        // The remembered token's signature on another payload: found by the hash of its
        // end, and refused because the whole text differs.
        let parts = issued.token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let payload = Base64URL.encode(Array(#"{"sub":"someone-else","role":"admin"}"#.utf8))
        let forged = [parts[0], payload, parts[2]].joined(separator: ".")
        #expect(throws: AuthError.self) { try tokens.verify(forged) }

        let cache = VerifiedTokens(capacity: 8)
        let end = String(repeating: "s", count: VerifiedTokens.TokenText.hashedBytes)
        cache.remember("header.payload." + end, issued.claims, ring: 0)
        #expect(cache.claims(for: "header.payload." + end, ring: 0) == issued.claims)
        #expect(cache.claims(for: "header.other-payload." + end, ring: 0) == nil)
        #expect(cache.claims(for: "x" + end, ring: 0) == nil)
    }

    @Test("the remembered tokens are bounded: two generations, the oldest dropped")
    func rememberedBound() {
        let cache = VerifiedTokens(capacity: 2)
        let claims = service().issue(for: user).claims
        for token in ["a", "b", "c"] { cache.remember(token, claims, ring: 0) }
        #expect(cache.count == 3)
        #expect(cache.claims(for: "a", ring: 0) != nil)  // moved back to the young generation
        for token in ["d", "e"] { cache.remember(token, claims, ring: 0) }
        #expect(cache.count <= 4)
        #expect(cache.claims(for: "b", ring: 0) == nil)
        #expect(cache.claims(for: "e", ring: 0) != nil)
        #expect(cache.claims(for: "e", ring: 1) == nil)
        cache.remember("f", claims, ring: 1)
        #expect(cache.count == 1)
    }

    @Test(
        "after rotation new tokens use the new key; old ones verify until they expire; a retired key signs nothing new")
    func rotation() throws {
        let ring = KeyRing(.generate(), created: clock.now())
        let before = service(SigningKeys(fixed: ring)).issue(for: user)
        clock.advance(seconds: 600)
        let rotated = ring.rotated(to: .edDSA, at: clock.now(), droppingRetiredBefore: clock.now())
        let tokens = service(SigningKeys(fixed: rotated))
        let after = tokens.issue(for: user)
        #expect(try tokens.verify(before.token) == before.claims)
        #expect(try tokens.verify(after.token) == after.claims)
        #expect(try JSONParser.parse(part(0, of: after.token))["alg"] == "EdDSA")
        #expect(rotated.jwks["keys"]?.arrayValue?.count == 1)

        // Someone holding the retired key forges a fresh token: refused.
        clock.advance(seconds: 60)
        let stolen = service(SigningKeys(fixed: ring)).issue(for: user)
        #expect(throws: AuthError.invalidToken("the token was signed by a retired key")) {
            try tokens.verify(stolen.token)
        }
        clock.advance(seconds: 2940)
        #expect(throws: AuthError.tokenExpired) { try tokens.verify(before.token) }

        // Rotating again drops keys retired before the cutoff.
        let again = rotated.rotated(to: .hs256, at: clock.now(), droppingRetiredBefore: clock.now())
        #expect(again.entries.map(\.key.id).contains(rotated.active.id))
        #expect(!again.entries.map(\.key.id).contains(ring.active.id))
    }

    @Test("RFC 7515 A.1: HS256 gives the RFC's signature")
    func hs256Vector() throws {
        let secret = try #require(
            Base64URL.decode("AyM1SysPpbyDfgZld3umj1qzKObwVMkoqQ-EstJQLr_T-1qS0gZH75aKtMN3Yj0iPS4hcgUuTwjAzZr1Z9CAow"))
        let key = try SigningKey(secret: secret)
        let input =
            "eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ"
        #expect(encode(key.signature(for: Array(input.utf8))) == "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")
    }

    @Test("RFC 8037 A: the Ed25519 key's thumbprint is its kid, and the RFC's signature verifies")
    func edDSAVector() throws {
        let d = try #require(Base64URL.decode("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"))
        let key = try SigningKey(ed25519PrivateKey: d)
        #expect(key.publicJWK?["x"] == "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
        #expect(key.id == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k")
        let input = Array("eyJhbGciOiJFZERTQSJ9.RXhhbXBsZSBvZiBFZDI1NTE5IHNpZ25pbmc".utf8)
        let signature = try #require(
            Base64URL.decode(
                "hgyY0il_MGCjP0JzlnLWG1PPOt7-09PGcvMg3AIbQR6dWbhijcNR4ki4iylGjg5BhVsPt9g7sVvpAr_MuM0KAg"))
        #expect(key.isValidSignature(signature, for: input))
        #expect(!key.isValidSignature(signature, for: input.dropLast()))
    }

    private func part(_ index: Int, of token: String) -> [UInt8] {
        Base64URL.decode(token.split(separator: ".")[index]) ?? []
    }

    private func encode(_ bytes: [UInt8]) -> String {
        Base64URL.encode(bytes)
    }
}
