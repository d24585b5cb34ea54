import Crypto

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

#if canImport(Glibc)
    import Glibc
#endif

/// The secret that signs access tokens (HS256), and its key id.
///
/// Kept in the data directory as base64 text in a file only its owner can read, so that
/// tokens stay valid across restarts; generated on first start.
public struct SigningKey: Sendable {
    /// At least 256 bits, the HS256 digest size (RFC 7518 §3.2).
    public static let minimumByteCount = 32

    public let bytes: [UInt8]
    /// A short id derived from the key, sent as the token header's `kid`.
    public let id: String

    /// - Throws: ``AuthError/invalidConfiguration(_:)`` for a key shorter than 32 bytes.
    public init(bytes: [UInt8]) throws(AuthError) {
        guard bytes.count >= Self.minimumByteCount else {
            throw .invalidConfiguration("signing key must be at least \(Self.minimumByteCount) bytes")
        }
        self.bytes = bytes
        let digest = SHA256.hash(data: bytes)
        id = digest.prefix(8).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
    }

    /// Decodes a key given as base64 text (configuration or the key file).
    public init(base64 text: String) throws(AuthError) {
        let trimmed = text.filter { !$0.isWhitespace }
        guard let data = Data(base64Encoded: trimmed) else {
            throw .invalidConfiguration("signing key is not base64")
        }
        try self.init(bytes: Array(data))
    }

    /// A new random key.
    public static func generate() -> SigningKey {
        let key = SymmetricKey(size: .bits256)
        // A 256-bit key always satisfies the minimum.
        return try! SigningKey(bytes: key.withUnsafeBytes { Array($0) })
    }

    /// Loads the key stored at `path`, or generates one and stores it there (mode 0600).
    /// - Throws: ``AuthError/invalidConfiguration(_:)`` when the file exists but is unusable
    ///   or cannot be written.
    public static func loadOrCreate(at path: String) throws(AuthError) -> SigningKey {
        if let text = try? String(contentsOfFile: path, encoding: .utf8) {
            return try SigningKey(base64: text)
        }
        guard access(path, F_OK) != 0 else {
            throw .invalidConfiguration("signing key file \(path) exists but cannot be read")
        }
        let key = generate()
        let contents = Array((Data(key.bytes).base64EncodedString() + "\n").utf8)
        // O_EXCL: if another process created the file meanwhile, do not overwrite its key.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else {
            throw .invalidConfiguration("cannot create signing key file \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        let written = contents.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == contents.count, fsync(descriptor) == 0 else {
            throw .invalidConfiguration("cannot write signing key file \(path)")
        }
        return key
    }
}

extension String {
    fileprivate func leftPadded(to length: Int) -> String {
        String(repeating: "0", count: max(0, length - count)) + self
    }
}
