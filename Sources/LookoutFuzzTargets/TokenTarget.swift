import LookoutAuth
import LookoutJSON

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The JWT verifier, with a fixed key ring and a fixed clock.
///
/// The ring has an active HS256 key and an Ed25519 key retired 100 s ago. The target
/// signs nine tokens with them: three current ones, and one each that is expired,
/// revoked by id, revoked with its family, not yet valid, signed by the retired key after
/// it retired, and carrying a critical header extension. Then, for the input as a token
/// and for the input read as edits to one of the nine:
///
/// - `verify` accepts only the three current tokens, exactly as signed, with their claims;
/// - `verifySignature` accepts only the tokens signed with a known key and no critical
///   extension, exactly as signed;
/// - each of the nine is answered as its kind says (expired, revoked, ...).
///
/// The input as an `Authorization` header gives `BearerToken.parse` the token or error
/// that reading it by `Character` gives; a fixture's token after `Bearer ` is that token.
enum TokenTarget {
    static func check(_ input: [UInt8]) throws(PropertyViolation) {
        guard let fixture = fixture.fixture else { throw fixture.failure! }
        let text = String(decoding: input, as: UTF8.self)
        try check(text, fixture)
        try checkHeader(text)
        if let edited = edit(fixture, input) {
            try check(edited, fixture)
            try checkHeader("Bearer \(edited)")
        }
    }

    private static func checkHeader(_ header: String) throws(PropertyViolation) {
        let parsed = Result { () throws(AuthError) in try BearerToken.parse(header) }
        try PropertyViolation.require(
            parsed == bearerByCharacter(header),
            "the header's token is not read as by Character: \(excerpt(header)) gives \(parsed)")
    }

    /// The token of an `Authorization` header read by `Character`: the first word, which
    /// must be `bearer` in any case, then what follows its space or tab, trimmed.
    private static func bearerByCharacter(_ header: String) -> Result<String, AuthError> {
        let characters = Array(header)
        let isSpace = { (character: Character) in character == " " || character == "\t" }
        guard let start = characters.firstIndex(where: { !isSpace($0) }) else { return .failure(.notBearer) }
        let end = characters[start...].firstIndex(where: isSpace) ?? characters.endIndex
        guard end + 1 < characters.count, String(characters[start..<end]).lowercased() == "bearer" else {
            return .failure(.notBearer)
        }
        let rest = characters[(end + 1)...]
        guard let first = rest.firstIndex(where: { !isSpace($0) }), let last = rest.lastIndex(where: { !isSpace($0) })
        else { return .failure(.invalidToken("the token is empty")) }
        return .success(String(characters[first...last]))
    }

    private static func check(_ token: String, _ fixture: Fixture) throws(PropertyViolation) {
        if let claims = try? fixture.service.verify(token) {
            try PropertyViolation.require(
                fixture.current[token] == claims, "a token it did not issue is accepted: \(excerpt(token))")
        }
        if let claims = try? fixture.service.verifySignature(token) {
            try PropertyViolation.require(
                fixture.signed[token] == claims, "a token it did not sign is accepted as signed: \(excerpt(token))")
        }
    }

    /// One of the fixture's tokens changed by the edits the input spells: its first byte
    /// picks the token, then each three bytes are an operation (replace, insert or
    /// delete), a position and a byte. Nil for an input too short to name a token.
    private static func edit(_ fixture: Fixture, _ input: [UInt8]) -> String? {
        guard let choice = input.first else { return nil }
        var token = Array(fixture.tokens[Int(choice) % fixture.tokens.count].utf8)
        var index = 1
        while index + 2 < input.count {
            let (operation, position, byte) = (input[index], Int(input[index + 1]), input[index + 2])
            switch operation % 3 {
            case 0 where !token.isEmpty: token[position % token.count] = byte
            case 1: token.insert(byte, at: position % (token.count + 1))
            case 2 where !token.isEmpty: token.remove(at: position % token.count)
            default: break
            }
            index += 3
        }
        return String(decoding: token, as: UTF8.self)
    }

    private struct Fixture: Sendable {
        let service: TokenService
        /// Every token signed, in a fixed order.
        let tokens: [String]
        /// Those `verify` accepts, with their claims.
        let current: [String: AccessClaims]
        /// Those `verifySignature` accepts, with their claims.
        let signed: [String: AccessClaims]
    }

    /// Built once; a fixture whose tokens are not answered as their kind says fails
    /// every input. Two optionals, not a `Result`: a multi-payload enum keeps its case in
    /// the spare bits of the pointers it holds, which LeakSanitizer then cannot follow.
    private static let fixture: (fixture: Fixture?, failure: PropertyViolation?) = {
        () -> (fixture: Fixture?, failure: PropertyViolation?) in
        do throws(PropertyViolation) {
            return (try makeFixture(), nil)
        } catch {
            return (nil, error)
        }
    }()

    private static func makeFixture() throws(PropertyViolation) -> Fixture {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let hmac = try! SigningKey(secret: Array(0..<32))
        let ed25519 = try! SigningKey(ed25519PrivateKey: Array(32..<64))
        let file: JSONValue = [
            "keys": [
                [
                    "kid": .string(hmac.id), "alg": "HS256", "key": .string(Base64URL.encode(Array(0..<32))),
                    "created": 1_799_990_000,
                ],
                [
                    "kid": .string(ed25519.id), "alg": "EdDSA", "key": .string(Base64URL.encode(Array(32..<64))),
                    "created": 1_799_900_000, "retired": 1_799_999_900,
                ],
            ]
        ]
        let revocations = Revocations()
        revocations.revoke(tokenID: "revoked", until: now.addingTimeInterval(3600))
        revocations.revoke(session: "family-revoked", until: now.addingTimeInterval(3600))
        let service = TokenService(
            keys: SigningKeys(fixed: try! KeyRing(fileContents: file)), revocations: revocations, now: { now })
        let retired = TokenService(keys: SigningKeys(fixed: KeyRing(ed25519)), now: { now })

        func claims(_ id: String, issued: Double, expires: Double, notBefore: Double? = nil, session: String? = nil)
            -> AccessClaims
        {
            AccessClaims(
                subject: "\(id)@example.com", issuedAt: now.addingTimeInterval(issued),
                notBefore: notBefore.map { now.addingTimeInterval($0) }, expires: now.addingTimeInterval(expires),
                id: id, scope: id == "admin" ? "admin" : "editor", session: session)
        }
        let current = [
            (service.sign(claims("reader", issued: -10, expires: 3600)), claims("reader", issued: -10, expires: 3600)),
            (
                service.sign(claims("family", issued: -10, expires: 60, notBefore: -5, session: "f")),
                claims("family", issued: -10, expires: 60, notBefore: -5, session: "f")
            ),
            (retired.sign(claims("admin", issued: -200, expires: 3600)), claims("admin", issued: -200, expires: 3600)),
        ]
        let refused: [(String, AccessClaims?, AuthError)] = [
            (
                service.sign(claims("expired", issued: -7200, expires: -3600)),
                claims("expired", issued: -7200, expires: -3600), .tokenExpired
            ),
            (
                service.sign(claims("revoked", issued: -10, expires: 600)),
                claims("revoked", issued: -10, expires: 600), .tokenRevoked
            ),
            (
                service.sign(claims("member", issued: -10, expires: 600, session: "family-revoked")),
                claims("member", issued: -10, expires: 600, session: "family-revoked"), .tokenRevoked
            ),
            (
                service.sign(claims("early", issued: 600, expires: 4200)), claims("early", issued: 600, expires: 4200),
                .tokenNotYetValid
            ),
            (
                retired.sign(claims("late", issued: -50, expires: 3600)), nil,
                .invalidToken("the token was signed by a retired key")
            ),
            (
                service.sign(claims("critical", issued: -10, expires: 600), header: ["crit": ["exp"]]), nil,
                .invalidToken("the token has critical extensions")
            ),
        ]
        for (token, expected) in current {
            let verified = try? service.verify(token)
            try PropertyViolation.require(verified == expected, "the fixture's token \(expected.id) is refused")
        }
        for (token, _, error) in refused {
            let outcome = Result { () throws(AuthError) in try service.verify(token) }
            guard case .failure(let thrown) = outcome, thrown == error else {
                throw PropertyViolation("the fixture's token \(token) is answered \(outcome), not \(error)")
            }
        }
        var signed = Dictionary(uniqueKeysWithValues: current)
        for case (let token, let claims?, _) in refused { signed[token] = claims }
        return Fixture(
            service: service, tokens: current.map(\.0) + refused.map(\.0),
            current: Dictionary(uniqueKeysWithValues: current), signed: signed)
    }
}
