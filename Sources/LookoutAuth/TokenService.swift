import JWTKit
import LookoutJSON

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Issues and verifies access tokens: HS256 JWTs with `kid`, `sub`, `iat`, `exp`, `jti`
/// and `scope`.
///
/// Time is injected (`now`), so expiry is tested without waiting.
public struct TokenService: Sendable {
    public static let algorithm = "HS256"

    private let keys: JWTKeyCollection
    private let keyID: String
    private let lifetime: Duration
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - key: signs and verifies every token.
    ///   - lifetime: how long an issued token stays valid.
    ///   - now: the wall clock.
    public init(key: SigningKey, lifetime: Duration = .seconds(3600), now: @escaping @Sendable () -> Date) async {
        keys = JWTKeyCollection()
        await keys.add(
            hmac: HMACKey(from: key.bytes), digestAlgorithm: .sha256, kid: JWKIdentifier(string: key.id))
        keyID = key.id
        self.lifetime = lifetime
        self.now = now
    }

    /// A signed token for `user`, valid for the configured lifetime from now.
    public func issue(for user: User) async throws -> String {
        // Whole seconds: NumericDate may carry fractions, but many clients expect integers.
        let issued = Date(timeIntervalSince1970: now().timeIntervalSince1970.rounded(.down))
        let seconds = Double(lifetime.components.seconds) + Double(lifetime.components.attoseconds) / 1e18
        let claims = AccessClaims(
            sub: SubjectClaim(value: user.email),
            iat: IssuedAtClaim(value: issued),
            exp: ExpirationClaim(value: issued.addingTimeInterval(seconds)),
            jti: IDClaim(value: UUID().uuidString.lowercased()),
            scope: user.role.rawValue)
        return try await keys.sign(claims, kid: JWKIdentifier(string: keyID))
    }

    /// The claims of `token` if it is ours, intact and current.
    /// - Throws: ``AuthError/invalidToken(_:)``, ``AuthError/tokenExpired`` or
    ///   ``AuthError/tokenNotYetValid``.
    public func verify(_ token: String) async throws(AuthError) -> AccessClaims {
        try checkHeader(of: token)
        let claims: AccessClaims
        do {
            claims = try await keys.verify(token, as: AccessClaims.self)
        } catch {
            throw .invalidToken("the token's signature or claims are invalid")
        }
        let current = now()
        // One second of leeway for clocks that tick between issue and check.
        if claims.iat.value.timeIntervalSince(current) > 1 { throw .tokenNotYetValid }
        if claims.exp.value <= current { throw .tokenExpired }
        return claims
    }

    /// Refuses tokens not made by this service before any cryptography: only HS256 with
    /// our key id. jwt-kit would fall back to its default key for an unknown `kid`.
    private func checkHeader(of token: String) throws(AuthError) {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3, let headerBytes = Base64URL.decode(segments[0]),
            let header = try? JSONParser.parse(headerBytes)
        else { throw .invalidToken("not a JWT") }
        guard header["alg"]?.stringValue == Self.algorithm else {
            throw .invalidToken("the token's algorithm is not \(Self.algorithm)")
        }
        guard header["kid"]?.stringValue == keyID else {
            throw .invalidToken("the token was not signed by a known key")
        }
    }
}

/// Unpadded base64url (RFC 4648 §5), as used in JWTs.
enum Base64URL {
    static func decode(_ text: Substring) -> [UInt8]? {
        guard text.utf8.count <= 8192 else { return nil }
        var standard = String(text.map { $0 == "-" ? "+" : $0 == "_" ? "/" : $0 })
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
