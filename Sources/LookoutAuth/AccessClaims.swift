import JWTKit

/// The claims of an access token: who, when issued, until when, which token, what scope.
///
/// Never holds a password or its hash.
public struct AccessClaims: JWTPayload, Equatable {
    /// The user's email.
    public var sub: SubjectClaim
    public var iat: IssuedAtClaim
    public var exp: ExpirationClaim
    /// A unique token id, for revocation.
    public var jti: IDClaim
    /// The user's role when the token was issued: `reader`, `editor` or `admin`.
    public var scope: String

    public init(sub: SubjectClaim, iat: IssuedAtClaim, exp: ExpirationClaim, jti: IDClaim, scope: String) {
        self.sub = sub
        self.iat = iat
        self.exp = exp
        self.jti = jti
        self.scope = scope
    }

    /// Time checks happen in ``TokenService`` against its injected clock, not here.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}
