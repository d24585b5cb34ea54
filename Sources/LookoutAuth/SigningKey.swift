import Crypto
import LookoutJSON

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// A key that signs access tokens, with its algorithm and key id (`kid`).
///
/// HS256 (HMAC-SHA256 over a secret of at least 256 bits) is the default: one secret,
/// nothing to publish. EdDSA (Ed25519, RFC 8037) is the option for clients or other
/// services that verify tokens themselves with the public key from
/// `/.well-known/jwks.json`.
public struct SigningKey: Sendable {
    /// A JWS `alg` value Lookout signs with.
    public enum Algorithm: String, Sendable, CaseIterable {
        case hs256 = "HS256"
        case edDSA = "EdDSA"
    }

    /// At least 256 bits, the HS256 digest size (RFC 7518 §3.2).
    public static let minimumSecretByteCount = 32

    private enum Material: Sendable {
        case secret(SymmetricKey)
        case ed25519(Curve25519.Signing.PrivateKey)
    }

    public let algorithm: Algorithm
    /// Sent as the token header's `kid`: for HS256 the first 8 bytes of the secret's
    /// SHA-256 in hex; for EdDSA the key's RFC 7638 JWK thumbprint.
    public let id: String
    private let material: Material

    /// An HS256 key from its secret.
    /// - Throws: ``AuthError/invalidConfiguration(_:)`` for a secret shorter than 32 bytes.
    public init(secret bytes: [UInt8]) throws(AuthError) {
        guard bytes.count >= Self.minimumSecretByteCount else {
            throw .invalidConfiguration("an HS256 signing key must be at least \(Self.minimumSecretByteCount) bytes")
        }
        algorithm = .hs256
        material = .secret(SymmetricKey(data: bytes))
        id = SHA256.hash(data: bytes).prefix(8).map { byte in
            let hex = String(byte, radix: 16)
            return hex.count == 1 ? "0" + hex : hex
        }.joined()
    }

    /// An EdDSA key from its 32-byte Ed25519 private key (the JWK's `d`).
    public init(ed25519PrivateKey bytes: [UInt8]) throws(AuthError) {
        guard let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: bytes) else {
            throw .invalidConfiguration("an Ed25519 private key must be 32 bytes")
        }
        algorithm = .edDSA
        material = .ed25519(key)
        id = Self.thumbprint(x: Base64URL.encode(key.publicKey.rawRepresentation))
    }

    /// An HS256 key given as base64 text (`--signing-key`, or the old key file).
    public init(base64 text: String) throws(AuthError) {
        let trimmed = text.filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: trimmed) else {
            throw .invalidConfiguration("signing key is not base64")
        }
        try self.init(secret: Array(data))
    }

    /// A new random key.
    public static func generate(_ algorithm: Algorithm = .hs256) -> SigningKey {
        // Both sizes are always valid.
        switch algorithm {
        case .hs256:
            return try! SigningKey(secret: SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
        case .edDSA:
            return try! SigningKey(ed25519PrivateKey: Array(Curve25519.Signing.PrivateKey().rawRepresentation))
        }
    }

    func signature(for input: some DataProtocol) -> [UInt8] {
        switch material {
        case .secret(let key):
            return Array(HMAC<SHA256>.authenticationCode(for: input, using: key))
        case .ed25519(let key):
            // Signing with a valid private key cannot fail.
            return Array(try! key.signature(for: input))
        }
    }

    /// Whether `signature` was made by this key over `input`; for HS256 compared in
    /// constant time.
    func isValidSignature(_ signature: [UInt8], for input: some DataProtocol) -> Bool {
        switch material {
        case .secret(let key):
            return HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: input, using: key)
        case .ed25519(let key):
            return key.publicKey.isValidSignature(signature, for: input)
        }
    }

    /// The public key as a JWK (RFC 8037 §2), for the JWKS; nil for a secret key.
    public var publicJWK: JSONValue? {
        guard case .ed25519(let key) = material else { return nil }
        return [
            "kty": "OKP", "crv": "Ed25519", "x": .string(Base64URL.encode(key.publicKey.rawRepresentation)),
            "kid": .string(id), "alg": .string(algorithm.rawValue), "use": "sig",
        ]
    }

    /// The private key material, base64url: what the key file keeps.
    var privateBytes: [UInt8] {
        switch material {
        case .secret(let key): key.withUnsafeBytes { Array($0) }
        case .ed25519(let key): Array(key.rawRepresentation)
        }
    }

    init(algorithm: Algorithm, privateBytes bytes: [UInt8]) throws(AuthError) {
        switch algorithm {
        case .hs256: try self.init(secret: bytes)
        case .edDSA: try self.init(ed25519PrivateKey: bytes)
        }
    }

    /// RFC 7638: SHA-256 of the required members in lexicographic order, no spaces.
    private static func thumbprint(x: String) -> String {
        Base64URL.encode(SHA256.hash(data: Array(#"{"crv":"Ed25519","kty":"OKP","x":"\#(x)"}"#.utf8)))
    }
}
