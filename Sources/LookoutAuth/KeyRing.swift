import LookoutJSON

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The signing keys in use: one active key that signs new tokens, and retired keys that
/// still verify the tokens they signed before they were retired, until those expire.
///
/// Rotation (``rotated(to:at:droppingRetiredBefore:)``) makes a new active key and
/// retires the old one; keys retired long enough ago that no token they signed can still
/// be current are dropped.
public struct KeyRing: Sendable {
    public struct Entry: Sendable {
        public let key: SigningKey
        public let created: Date
        /// When it stopped signing; nil for the active key.
        public let retired: Date?
    }

    /// Every key, the active one first, then retired ones, newest first.
    public let entries: [Entry]

    public var active: SigningKey { entries[0].key }

    /// A ring of one key.
    public init(_ key: SigningKey, created: Date = Date(timeIntervalSince1970: 0)) {
        entries = [Entry(key: key, created: created, retired: nil)]
    }

    private init(entries: [Entry]) {
        self.entries = entries
    }

    /// The key with this id, and when it was retired (nil while active).
    func entry(id: String) -> Entry? {
        entries.first { $0.key.id == id }
    }

    /// A new active key of `algorithm`; the current one retires at `now`. Keys retired
    /// before `cutoff` are dropped.
    public func rotated(to algorithm: SigningKey.Algorithm, at now: Date, droppingRetiredBefore cutoff: Date)
        -> KeyRing
    {
        var kept = [Entry(key: SigningKey.generate(algorithm), created: now, retired: nil)]
        kept.append(Entry(key: active, created: entries[0].created, retired: now))
        kept += entries.dropFirst().filter { ($0.retired ?? now) >= cutoff }
        return KeyRing(entries: kept)
    }

    /// The public keys, as a JWK Set (RFC 7517 §5): EdDSA keys only; secrets never leave.
    public var jwks: JSONValue {
        ["keys": .array(entries.compactMap(\.key.publicJWK))]
    }
}

extension KeyRing {
    /// The ring as the key file keeps it:
    /// `{"keys": [{"kid", "alg", "key", "created", "retired"?}, ...]}`, private key
    /// material in base64url, times in seconds since 1970.
    public var fileContents: JSONValue {
        let keys = entries.map { entry -> JSONValue in
            var object: JSONObject = [
                "kid": .string(entry.key.id), "alg": .string(entry.key.algorithm.rawValue),
                "key": .string(Base64URL.encode(entry.key.privateBytes)),
                "created": .int(Int(entry.created.timeIntervalSince1970)),
            ]
            if let retired = entry.retired { object["retired"] = .int(Int(retired.timeIntervalSince1970)) }
            return .object(object)
        }
        return ["keys": .array(keys)]
    }

    /// Reads a key file's contents.
    /// - Throws: ``AuthError/invalidConfiguration(_:)`` naming what is wrong.
    public init(fileContents value: JSONValue) throws(AuthError) {
        guard let list = value["keys"]?.arrayValue, !list.isEmpty else {
            throw .invalidConfiguration("the key file has no \"keys\"")
        }
        var entries: [Entry] = []
        for item in list {
            guard let algorithmName = item["alg"]?.stringValue,
                let algorithm = SigningKey.Algorithm(rawValue: algorithmName),
                let material = item["key"]?.stringValue.flatMap({ Base64URL.decode($0) }),
                let created = item["created"]?.intValue
            else { throw .invalidConfiguration("the key file has a malformed key") }
            let key = try SigningKey(algorithm: algorithm, privateBytes: material)
            guard item["kid"]?.stringValue == key.id else {
                throw .invalidConfiguration("the key file's key \(item["kid"]?.stringValue ?? "?") has a wrong kid")
            }
            let retired = item["retired"]?.intValue.map { Date(timeIntervalSince1970: Double($0)) }
            entries.append(Entry(key: key, created: Date(timeIntervalSince1970: Double(created)), retired: retired))
        }
        guard entries.filter({ $0.retired == nil }).count == 1, entries[0].retired == nil else {
            throw .invalidConfiguration("the key file must list exactly one active key, first")
        }
        guard Set(entries.map(\.key.id)).count == entries.count else {
            throw .invalidConfiguration("the key file lists a key twice")
        }
        self.init(entries: entries)
    }
}
