/// Why authentication or token verification failed.
///
/// Each case names what a client can act on; none carries a secret or a stack.
public enum AuthError: Error, Equatable, Sendable {
    /// Unknown email or wrong password (deliberately not told apart).
    case invalidCredentials
    /// No `Authorization` header.
    case missingToken
    /// An `Authorization` header whose scheme is not `Bearer`.
    case notBearer
    /// Not a well-formed JWT, a wrong algorithm, an unknown key, or a bad signature.
    case invalidToken(String)
    case tokenExpired
    case tokenNotYetValid
    /// Revoked before it expired: by itself, or with its refresh-token family.
    case tokenRevoked
    /// A stored password hash or signing key that cannot be used.
    case invalidConfiguration(String)
}
