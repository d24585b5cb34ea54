import LookoutJSON

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Issues and verifies access tokens: compact JWS (RFC 7515) JWTs signed by the key
/// ring's active key, with `kid` in the header and the claims of ``AccessClaims``.
///
/// Verification is strict and needs no other library: the header must name a key of the
/// ring and exactly that key's algorithm (so `alg: none`, HS256 with a public key and any
/// other confusion fail before any cryptography), the signature must match, a retired key
/// must not have signed after it retired, the times must be current and the token must
/// not be revoked. Time is injected (`now`), so expiry is tested without waiting.
public final class TokenService: Sendable {
    /// Clocks may tick between issuing and checking, or differ a little between machines.
    public static let leeway: TimeInterval = 1
    /// Longer tokens are refused unread.
    public static let maxTokenBytes = 8192

    public let keys: SigningKeys
    public let lifetime: Duration
    public let revocations: Revocations
    private let now: @Sendable () -> Date
    private let verified = VerifiedTokens()

    /// - Parameters:
    ///   - keys: the active key signs; every key of the ring verifies.
    ///   - lifetime: how long an issued token stays valid.
    ///   - revocations: tokens refused before they expire.
    ///   - now: the wall clock.
    public init(
        keys: SigningKeys, lifetime: Duration = .seconds(3600), revocations: Revocations = Revocations(),
        now: @escaping @Sendable () -> Date
    ) {
        self.keys = keys
        self.lifetime = lifetime
        self.revocations = revocations
        self.now = now
    }

    /// An access token and what it says.
    public struct Issued: Sendable {
        public let token: String
        public let claims: AccessClaims
    }

    /// A signed token for `user`, valid for the configured lifetime from now.
    /// - Parameters:
    ///   - scope: the role it acts with; the user's own when nil.
    ///   - session: the refresh-token family it is issued from, if any.
    public func issue(for user: User, scope: User.Role? = nil, session: String? = nil) -> Issued {
        let issued = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
        let claims = AccessClaims(
            subject: user.email, issuedAt: issued, expires: issued.addingTimeInterval(lifetimeSeconds),
            id: UUID().uuidString.lowercased(), scope: (scope ?? user.role).rawValue, session: session)
        return Issued(token: sign(claims), claims: claims)
    }

    /// The token's lifetime in whole seconds, as `expires_in` reports it.
    public var lifetimeSeconds: TimeInterval {
        TimeInterval(lifetime.components.seconds)
    }

    /// Signs any claims with the active key (tests forge tokens this way).
    public func sign(_ claims: AccessClaims, header extra: JSONObject = [:]) -> String {
        let key = keys.ring.active
        var header: JSONObject = ["alg": .string(key.algorithm.rawValue), "typ": "JWT", "kid": .string(key.id)]
        for member in extra { header[member.key] = member.value }
        let input =
            Base64URL.encode(JSONWriter.encode(.object(header))) + "."
            + Base64URL.encode(JSONWriter.encode(claims.json))
        return input + "." + Base64URL.encode(key.signature(for: Array(input.utf8)))
    }

    /// The claims of `token` if this service made it, it is intact, current and not revoked.
    /// - Throws: ``AuthError/invalidToken(_:)``, ``AuthError/tokenExpired``,
    ///   ``AuthError/tokenNotYetValid`` or ``AuthError/tokenRevoked``.
    public func verify(_ token: String) throws(AuthError) -> AccessClaims {
        let claims = try verifySignature(token)
        let current = now()
        if let notBefore = claims.notBefore, notBefore.timeIntervalSince(current) > Self.leeway {
            throw .tokenNotYetValid
        }
        if claims.issuedAt.timeIntervalSince(current) > Self.leeway { throw .tokenNotYetValid }
        if claims.expires <= current { throw .tokenExpired }
        if revocations.isRevoked(claims) { throw .tokenRevoked }
        return claims
    }

    /// The claims of a token whose signature is ours, whatever its times or revocation:
    /// for revoking a token, which needs no current token.
    public func verifySignature(_ token: String) throws(AuthError) -> AccessClaims {
        let (ring, version) = keys.current
        if let claims = verified.claims(for: token, ring: version) { return claims }
        let claims = try verifySignature(token, ring: ring)
        verified.remember(token, claims, ring: version)
        return claims
    }

    private func verifySignature(_ token: String, ring: KeyRing) throws(AuthError) -> AccessClaims {
        guard token.utf8.count <= Self.maxTokenBytes else { throw .invalidToken("the token is too long") }
        let bytes = Array(token.utf8)
        guard let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")),
            let secondDot = bytes[(firstDot + 1)...].firstIndex(of: UInt8(ascii: ".")),
            !bytes[(secondDot + 1)...].contains(UInt8(ascii: ".")),
            let headerBytes = Base64URL.decode(bytes: bytes[..<firstDot]),
            case .object(let header)? = try? JSONParser.parse(headerBytes)
        else { throw .invalidToken("not a JWT") }
        // RFC 7515 §4.1.11: extensions that must be understood; Lookout knows none.
        guard header["crit"] == nil else { throw .invalidToken("the token has critical extensions") }
        guard let kid = header["kid"]?.stringValue, let entry = ring.entry(id: kid) else {
            throw .invalidToken("the token was not signed by a known key")
        }
        guard header["alg"]?.stringValue == entry.key.algorithm.rawValue else {
            throw .invalidToken("the token's algorithm is not its key's, \(entry.key.algorithm.rawValue)")
        }
        guard let signature = Base64URL.decode(bytes: bytes[(secondDot + 1)...]),
            entry.key.isValidSignature(signature, for: bytes[..<secondDot])
        else { throw .invalidToken("the token's signature is wrong") }
        guard let payloadBytes = Base64URL.decode(bytes: bytes[(firstDot + 1)..<secondDot]),
            let payload = try? JSONParser.parse(payloadBytes), let claims = AccessClaims(json: payload)
        else { throw .invalidToken("the token's claims are malformed") }
        // A retired key signs nothing new: a later token was made with a stolen key.
        if let retired = entry.retired, claims.issuedAt.timeIntervalSince(retired) > Self.leeway {
            throw .invalidToken("the token was signed by a retired key")
        }
        return claims
    }
}
