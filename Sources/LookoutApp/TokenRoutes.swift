import Logging
import LookoutAuth
import LookoutHTTP
import LookoutJSON

#if canImport(Foundation)
    import Foundation
#endif

/// The OAuth-style endpoints beside the seed app's login and verify (DESIGN.md §4):
///
/// - `POST /v1/auth/token`: the password grant and the refresh-token grant (RFC 6749
///   §4.3 and §6), answered `{access_token, token_type, expires_in, refresh_token, scope}`;
/// - `POST /v1/auth/introspect` (RFC 7662), for a caller with a valid token: admins may
///   look at any token, others at their own;
/// - `POST /v1/auth/revoke` (RFC 7009): whoever holds a token may revoke it; a refresh
///   token takes its whole family with it, access tokens included;
/// - `GET /.well-known/jwks.json`: the public keys (EdDSA) that verify access tokens.
///
/// Errors come in the RFC 6749 §5.2 shape, `{"error", "error_description"}`.
struct TokenRoutes: Sendable {
    let login: PasswordLogin
    let tokens: TokenService
    let sessions: RefreshSessions
    let users: UserDirectory
    let now: @Sendable () -> Date
    /// Where a replayed refresh token is reported: it means a token was copied.
    let logger: Logger

    func register(in router: inout Router) {
        router.add("POST", "/v1/auth/token", .deferred(oauth(token)))
        router.add("POST", "/v1/auth/introspect", .deferred(oauth(introspect)))
        router.add("POST", "/v1/auth/revoke", .deferred(oauth(revoke)))
        router.add("GET", "/.well-known/jwks.json", .immediate(jwks))
    }

    /// `POST /v1/auth/token`.
    func token(_ context: RequestContext) async throws -> HTTPResponse {
        let form = try FormParameters(context)
        switch try form.required("grant_type") {
        case "password":
            let user = try await login.authenticate(
                email: try form.required("username"), password: try form.required("password"),
                from: context.request.clientAddress)
            let scope = try Self.scope(requested: form["scope"], allowed: user.role)
            let (refresh, family) = try await sessions.start(subject: user.email, scope: scope)
            return tokenResponse(tokens.issue(for: user, scope: scope, session: family.id), refresh: refresh, context)
        case "refresh_token":
            switch try await sessions.use(try form.required("refresh_token")) {
            case .refused(let reason):
                throw APIError.oauth("invalid_grant", reason.prefix(1).uppercased() + reason.dropFirst() + ".")
            case .reused(let family):
                logger.warning(
                    "a retired refresh token was presented; its family is revoked",
                    metadata: [
                        "request-id": "\(context.requestID)", "sub": "\(family.subject)", "family": "\(family.id)",
                        "client": "\(context.request.clientAddress)",
                    ])
                throw APIError.oauth(
                    "invalid_grant",
                    "The refresh token was already used once, so it may have been copied: every token of its login is revoked. Log in again."
                )
            case .rotated(let refresh, let family):
                guard let user = try users.user(email: family.subject) else {
                    _ = try await sessions.revokeFamily(of: refresh)
                    throw APIError.oauth("invalid_grant", "The refresh token's user no longer exists.")
                }
                // Never more than first granted, nor than the user's role today.
                let allowed = min(family.scope, user.role, by: \.rank)
                let scope = try Self.scope(requested: form["scope"], allowed: allowed)
                return tokenResponse(
                    tokens.issue(for: user, scope: scope, session: family.id), refresh: refresh, context)
            }
        case let other:
            throw APIError.oauth(
                "unsupported_grant_type", "The grant_type '\(other.prefix(64))' is not password or refresh_token.")
        }
    }

    /// `POST /v1/auth/introspect`: `{"active": false}` for anything not current, unknown,
    /// or not the caller's to see.
    func introspect(_ context: RequestContext) async throws -> HTTPResponse {
        let caller = try tokens.verify(try BearerToken.parse(context.request.headers["Authorization"]))
        let token = try FormParameters(context).required("token")
        var answer: JSONObject = ["active": false]
        if token.hasPrefix(RefreshSessions.prefix) {
            if let (family, current) = try await sessions.family(of: token), current, family.revoked == nil,
                family.expires > now(), caller.may(see: family.subject)
            {
                answer = [
                    "active": true, "token_type": "refresh_token", "scope": .string(family.scope.rawValue),
                    "sub": .string(family.subject), "username": .string(family.subject),
                    "exp": .int(Int(family.expires.timeIntervalSince1970)),
                ]
            }
        } else if let claims = try? tokens.verify(token), caller.may(see: claims.subject) {
            answer = [
                "active": true, "token_type": "Bearer", "scope": .string(claims.scope),
                "sub": .string(claims.subject), "username": .string(claims.subject),
                "iat": .int(Int(claims.issuedAt.timeIntervalSince1970)),
                "exp": .int(Int(claims.expires.timeIntervalSince1970)), "jti": .string(claims.id),
            ]
            if let notBefore = claims.notBefore { answer["nbf"] = .int(Int(notBefore.timeIntervalSince1970)) }
        }
        return Self.noStore(.json(.object(answer), requestID: context.echoedRequestID))
    }

    /// `POST /v1/auth/revoke`: 200 whether or not the token was valid (RFC 7009 §2.2), so
    /// the answer tells a guesser nothing.
    func revoke(_ context: RequestContext) async throws -> HTTPResponse {
        let token = try FormParameters(context).required("token")
        if token.hasPrefix(RefreshSessions.prefix) {
            _ = try await sessions.revokeFamily(of: token)
        } else if let claims = try? tokens.verifySignature(token), claims.expires > now() {
            try await sessions.revokeAccessToken(claims)
        }
        return Self.noStore(.json([:], requestID: context.echoedRequestID))
    }

    /// `GET /.well-known/jwks.json`.
    func jwks(_ context: RequestContext) throws -> HTTPResponse {
        var response = HTTPResponse.json(tokens.keys.ring.jwks, requestID: context.echoedRequestID)
        // Short, so a client sees a rotated key soon; clients refetch on an unknown kid anyway.
        response.headers.add("Cache-Control", "public, max-age=60")
        return response
    }

    private func tokenResponse(_ access: TokenService.Issued, refresh: String, _ context: RequestContext)
        -> HTTPResponse
    {
        let body: JSONValue = [
            "access_token": .string(access.token), "token_type": "Bearer",
            "expires_in": .int(Int(tokens.lifetimeSeconds)), "refresh_token": .string(refresh),
            "scope": .string(access.claims.scope),
        ]
        return Self.noStore(.json(body, requestID: context.echoedRequestID))
    }

    /// The role a token is granted: the requested one (one role name, RFC 6749 §3.3), or
    /// `allowed` when none is requested.
    /// - Throws: 400 `invalid_scope` for anything above `allowed` or not a role.
    static func scope(requested: String?, allowed: User.Role) throws(APIError) -> User.Role {
        guard let requested else { return allowed }
        guard let role = User.Role(rawValue: requested) else {
            throw .oauth("invalid_scope", "The scope must be one of reader, editor, admin.")
        }
        guard role.rank <= allowed.rank else {
            throw .oauth("invalid_scope", "The scope '\(role.rawValue)' is more than this login may have.")
        }
        return role
    }

    /// RFC 6749 §5.1: token responses are never cached.
    static func noStore(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers.add("Cache-Control", "no-store")
        response.headers.add("Pragma", "no-cache")
        return response
    }

    /// Runs `handler`, giving any error the OAuth shape.
    private func oauth(_ handler: @escaping @Sendable (RequestContext) async throws -> HTTPResponse)
        -> @Sendable (RequestContext) async throws -> HTTPResponse
    {
        { context in
            do {
                return try await handler(context)
            } catch {
                throw APIError.oauth(from: error)
            }
        }
    }
}

extension User.Role {
    /// reader < editor < admin.
    var rank: Int {
        switch self {
        case .reader: 0
        case .editor: 1
        case .admin: 2
        }
    }
}

extension AccessClaims {
    /// Admins see every token; others only their own.
    func may(see subject: String) -> Bool {
        role == .admin || self.subject == subject
    }
}

private func min<T>(_ a: T, _ b: T, by rank: (T) -> Int) -> T {
    rank(a) <= rank(b) ? a : b
}
