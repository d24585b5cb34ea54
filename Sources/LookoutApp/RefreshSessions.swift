import Crypto
import LookoutAuth
import LookoutJSON
import LookoutPersistence

#if canImport(Foundation)
    import Foundation
#endif

/// Refresh tokens (RFC 6749 §6): opaque, stored only as their SHA-256, and rotating —
/// each use gives a new one and retires the old. Every token descends from one password
/// login; that line is a family. Presenting a retired token of a family means it was
/// copied, so the whole family is revoked, with every access token issued from it
/// (they carry the family as `sid`).
///
/// Kept as records: `refresh_tokens` (hash → family) and `refresh_families` (id →
/// subject, scope, current hash, expiry, revocation); revoked access tokens as
/// `revoked_tokens` (jti → expiry), revoked families also as `revoked_families` (id → until
/// when their access tokens are refused). Changes run one at a time on their own queue, so
/// two uses of one token on one instance cannot both succeed.
///
/// Instances sharing a database see each other's revocations through
/// ``followRevocations()``, which the application runs every second.
struct RefreshSessions: Sendable {
    static let tokenKind = "refresh_tokens"
    static let familyKind = "refresh_families"
    static let revokedKind = "revoked_tokens"
    static let revokedFamilyKind = "revoked_families"
    /// Marks Lookout's refresh tokens for secret scanners and for the eye.
    static let prefix = "lkr_"

    let persistence: any Persistence
    let tokens: TokenService
    /// How long a refresh token stays usable after it is issued.
    let lifetime: Duration
    let now: @Sendable () -> Date
    private let queue = BlockingQueue(label: "lookout.sessions")

    init(persistence: any Persistence, tokens: TokenService, lifetime: Duration, now: @escaping @Sendable () -> Date) {
        self.persistence = persistence
        self.tokens = tokens
        self.lifetime = lifetime
        self.now = now
    }

    /// One family: whose, with what scope, which token is current, until when.
    struct Family: Sendable {
        let id: String
        let subject: String
        let scope: User.Role
        /// The hash of the one token that may be used next.
        var current: String
        var expires: Date
        var revoked: Date?
    }

    /// What presenting a refresh token came to.
    enum Use: Sendable {
        /// The family's current token: here is its successor.
        case rotated(token: String, family: Family)
        /// Unknown, expired, or its family already revoked.
        case refused(String)
        /// A retired token: the family is revoked now.
        case reused(Family)
    }

    /// A new family for `subject`, and its first token.
    func start(subject: String, scope: User.Role) async throws -> (token: String, family: Family) {
        try await queue.run { [self] in
            let token = Self.newToken()
            let family = Family(
                id: Base64URL.random(byteCount: 16), subject: subject, scope: scope, current: Self.digest(token),
                expires: now().addingTimeInterval(seconds(lifetime)), revoked: nil)
            try persistence.putRecord(family.record, kind: Self.familyKind, key: family.id)
            try persistence.putRecord(["family": .string(family.id)], kind: Self.tokenKind, key: family.current)
            return (token, family)
        }
    }

    /// Uses `token`: rotates it if it is its family's current one.
    func use(_ token: String) async throws -> Use {
        try await queue.run { [self] in
            guard let (family, current) = try lookUp(token) else { return .refused("the refresh token is unknown") }
            if family.revoked != nil { return .refused("the refresh token has been revoked") }
            guard current else {
                try revoke(family)
                return .reused(family)
            }
            guard family.expires > now() else { return .refused("the refresh token has expired") }
            let next = Self.newToken()
            var rotated = family
            rotated.current = Self.digest(next)
            rotated.expires = now().addingTimeInterval(seconds(lifetime))
            // The successor is stored before the family points at it: a crash between the
            // two leaves the presented token current, and the client never saw the new one.
            try persistence.putRecord(["family": .string(family.id)], kind: Self.tokenKind, key: rotated.current)
            try persistence.putRecord(rotated.record, kind: Self.familyKind, key: family.id)
            return .rotated(token: next, family: rotated)
        }
    }

    /// The family of `token`, and whether `token` is its current one; nil if unknown.
    func family(of token: String) async throws -> (Family, current: Bool)? {
        try await queue.run { [self] in try lookUp(token) }
    }

    /// Revokes the family `token` belongs to, if any.
    /// - Returns: whether `token` was a refresh token of Lookout's.
    func revokeFamily(of token: String) async throws -> Bool {
        try await queue.run { [self] in
            guard let (family, _) = try lookUp(token) else { return false }
            if family.revoked == nil { try revoke(family) }
            return true
        }
    }

    /// Revokes one access token until it expires, durably.
    func revokeAccessToken(_ claims: AccessClaims) async throws {
        try await queue.run { [self] in
            try persistence.putRecord(
                ["expires": .int(Int(claims.expires.timeIntervalSince1970))], kind: Self.revokedKind, key: claims.id)
            tokens.revocations.revoke(tokenID: claims.id, until: claims.expires)
            tokens.revocations.prune(at: now())
        }
    }

    /// Takes in the revocations in force that storage holds, including those other
    /// instances sharing the database have made since: each table is small, holding only
    /// what revokes tokens that have not expired yet.
    func followRevocations() throws {
        let current = now()
        for (id, record) in try persistence.records(Self.revokedKind) {
            if let expires = Self.date(record["expires"]), expires > current {
                tokens.revocations.revoke(tokenID: id, until: expires)
            }
        }
        for (id, record) in try persistence.records(Self.revokedFamilyKind) {
            if let until = Self.date(record["until"]), until > current {
                tokens.revocations.revoke(session: id, until: until)
            }
        }
    }

    /// At start: forgets what has expired, and loads the revocations still in force.
    func restore() throws {
        let current = now()
        for (id, record) in try persistence.records(Self.revokedFamilyKind) {
            let until = Self.date(record["until"]) ?? current
            if until > current {
                tokens.revocations.revoke(session: id, until: until)
            } else {
                try persistence.putRecord(nil, kind: Self.revokedFamilyKind, key: id)
            }
        }
        for (id, record) in try persistence.records(Self.revokedKind) {
            let expires = Self.date(record["expires"]) ?? current
            if expires > current {
                tokens.revocations.revoke(tokenID: id, until: expires)
            } else {
                try persistence.putRecord(nil, kind: Self.revokedKind, key: id)
            }
        }
        var dropped: Set<String> = []
        for (id, record) in try persistence.records(Self.familyKind) {
            guard let family = Family(id: id, record: record) else { continue }
            let accessTokensEnd = (family.revoked ?? family.expires).addingTimeInterval(tokens.lifetimeSeconds)
            if let revoked = family.revoked, accessTokensEnd > current {
                tokens.revocations.revoke(session: id, until: revoked.addingTimeInterval(tokens.lifetimeSeconds))
            }
            // Kept while a retired token of it could still be presented and should revoke it.
            if family.expires <= current, accessTokensEnd <= current {
                try persistence.putRecord(nil, kind: Self.familyKind, key: id)
                dropped.insert(id)
            }
        }
        guard !dropped.isEmpty else { return }
        for (hash, record) in try persistence.records(Self.tokenKind) {
            if let family = record["family"]?.stringValue, dropped.contains(family) {
                try persistence.putRecord(nil, kind: Self.tokenKind, key: hash)
            }
        }
    }

    private func lookUp(_ token: String) throws -> (Family, current: Bool)? {
        guard token.hasPrefix(Self.prefix), token.utf8.count < 200 else { return nil }
        let hash = Self.digest(token)
        guard let id = try persistence.record(Self.tokenKind, key: hash)?["family"]?.stringValue,
            let record = try persistence.record(Self.familyKind, key: id), let family = Family(id: id, record: record)
        else { return nil }
        return (family, family.current == hash)
    }

    private func revoke(_ family: Family) throws {
        var revoked = family
        let current = now()
        revoked.revoked = current
        let until = current.addingTimeInterval(tokens.lifetimeSeconds)
        try persistence.putRecord(
            ["until": .int(Int(until.timeIntervalSince1970.rounded(.up)))], kind: Self.revokedFamilyKind, key: family.id
        )
        try persistence.putRecord(revoked.record, kind: Self.familyKind, key: family.id)
        tokens.revocations.revoke(session: family.id, until: until)
    }

    private func seconds(_ duration: Duration) -> TimeInterval {
        TimeInterval(duration.components.seconds)
    }

    /// 256 random bits, base64url, after the prefix.
    static func newToken() -> String {
        prefix + Base64URL.random(byteCount: 32)
    }

    /// What is stored instead of the token: its SHA-256 in hex. A plain hash is enough for
    /// 256 random bits; a slow hash is for guessable secrets such as passwords.
    static func digest(_ token: String) -> String {
        SHA256.hash(data: Array(token.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    static func date(_ value: JSONValue?) -> Date? {
        value?.intValue.map { Date(timeIntervalSince1970: Double($0)) }
    }
}

extension RefreshSessions.Family {
    var record: JSONValue {
        var object: JSONObject = [
            "sub": .string(subject), "scope": .string(scope.rawValue), "current": .string(current),
            "expires": .int(Int(expires.timeIntervalSince1970)),
        ]
        if let revoked { object["revoked"] = .int(Int(revoked.timeIntervalSince1970)) }
        return .object(object)
    }

    init?(id: String, record: JSONValue) {
        guard let subject = record["sub"]?.stringValue,
            let scope = record["scope"]?.stringValue.flatMap(User.Role.init(rawValue:)),
            let current = record["current"]?.stringValue, let expires = RefreshSessions.date(record["expires"])
        else { return nil }
        self.init(
            id: id, subject: subject, scope: scope, current: current, expires: expires,
            revoked: RefreshSessions.date(record["revoked"]))
    }
}
