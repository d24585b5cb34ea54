import LookoutJSON

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The claims of an access token (RFC 7519 §4.1): who, when issued, from when and until
/// when valid, which token, what scope, and which refresh-token session it came from.
///
/// Never holds a password or its hash. Times are whole seconds.
public struct AccessClaims: Sendable, Equatable {
    /// `sub`: the user's email.
    public var subject: String
    /// `iat`.
    public var issuedAt: Date
    /// `nbf`, when the token carries one.
    public var notBefore: Date?
    /// `exp`.
    public var expires: Date
    /// `jti`: a unique token id, for revocation.
    public var id: String
    /// `scope`: the role the token acts with, `reader`, `editor` or `admin`.
    public var scope: String
    /// `sid`: the refresh-token family the token was issued from, so revoking the family
    /// revokes its access tokens too; nil for tokens from a plain login.
    public var session: String?

    public init(
        subject: String, issuedAt: Date, notBefore: Date? = nil, expires: Date, id: String, scope: String,
        session: String? = nil
    ) {
        self.subject = subject
        self.issuedAt = issuedAt
        self.notBefore = notBefore
        self.expires = expires
        self.id = id
        self.scope = scope
        self.session = session
    }

    /// The role the token's scope names; nil for a scope that names none.
    public var role: User.Role? { User.Role(rawValue: scope) }

    var json: JSONValue {
        var object: JSONObject = [
            "sub": .string(subject), "iat": .int(Self.seconds(issuedAt)), "exp": .int(Self.seconds(expires)),
            "jti": .string(id), "scope": .string(scope),
        ]
        if let notBefore { object["nbf"] = .int(Self.seconds(notBefore)) }
        if let session { object["sid"] = .string(session) }
        return .object(object)
    }

    /// Reads a payload; nil unless every required claim is there with its type.
    init?(json value: JSONValue) {
        guard let subject = value["sub"]?.stringValue, let issuedAt = Self.date(value["iat"]),
            let expires = Self.date(value["exp"]), let id = value["jti"]?.stringValue,
            let scope = value["scope"]?.stringValue
        else { return nil }
        let notBefore = Self.date(value["nbf"])
        guard value["nbf"] == nil || notBefore != nil else { return nil }
        let session = value["sid"]?.stringValue
        guard value["sid"] == nil || session != nil else { return nil }
        self.init(
            subject: subject, issuedAt: issuedAt, notBefore: notBefore, expires: expires, id: id, scope: scope,
            session: session)
    }

    private static func seconds(_ date: Date) -> Int {
        Int(date.timeIntervalSince1970.rounded(.down))
    }

    /// A NumericDate: seconds since 1970, fractions allowed.
    private static func date(_ value: JSONValue?) -> Date? {
        switch value {
        case .int(let seconds): Date(timeIntervalSince1970: Double(seconds))
        case .double(let seconds) where seconds.isFinite: Date(timeIntervalSince1970: seconds)
        default: nil
        }
    }
}
