import Crypto
import CryptoExtras

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// An scrypt password hash in the PHC string format:
/// `$scrypt$ln=15,r=8,p=1$<salt>$<hash>`, salt and hash in unpadded base64.
///
/// `ln=15, r=8, p=1` costs 32 MiB and tens of milliseconds per check on this hardware: slow
/// enough to make guessing expensive, cheap enough for interactive logins.
public struct PasswordHash: Sendable, Equatable, CustomStringConvertible {
    public let logRounds: Int
    public let blockSize: Int
    public let parallelism: Int
    public let salt: [UInt8]
    public let hash: [UInt8]

    /// Parses a PHC scrypt string.
    /// - Throws: ``AuthError/invalidConfiguration(_:)`` when it is not one.
    public init(_ text: String) throws(AuthError) {
        let parts = text.split(separator: "$", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "scrypt" else {
            throw .invalidConfiguration("password hash is not a $scrypt$ PHC string")
        }
        var parameters: [Substring: Int] = [:]
        for pair in parts[2].split(separator: ",") {
            let keyValue = pair.split(separator: "=", maxSplits: 1)
            guard keyValue.count == 2, let value = Int(keyValue[1]) else {
                throw .invalidConfiguration("password hash has malformed parameters")
            }
            parameters[keyValue[0]] = value
        }
        guard let logRounds = parameters["ln"], (1...20).contains(logRounds),
            let blockSize = parameters["r"], (1...32).contains(blockSize),
            let parallelism = parameters["p"], (1...16).contains(parallelism),
            let salt = Self.decode(parts[3]), salt.count >= 8,
            let hash = Self.decode(parts[4]), hash.count >= 16
        else { throw .invalidConfiguration("password hash has unusable parameters") }
        self.init(logRounds: logRounds, blockSize: blockSize, parallelism: parallelism, salt: salt, hash: hash)
    }

    private init(logRounds: Int, blockSize: Int, parallelism: Int, salt: [UInt8], hash: [UInt8]) {
        self.logRounds = logRounds
        self.blockSize = blockSize
        self.parallelism = parallelism
        self.salt = salt
        self.hash = hash
    }

    /// A hash no password matches, costing as much to check as `template`.
    static func decoy(costing template: PasswordHash?) -> PasswordHash {
        PasswordHash(
            logRounds: template?.logRounds ?? 15, blockSize: template?.blockSize ?? 8,
            parallelism: template?.parallelism ?? 1, salt: randomSalt(), hash: [UInt8](repeating: 0, count: 32))
    }

    /// Hashes `password` with a fresh random salt.
    /// - Throws: ``AuthError/invalidConfiguration(_:)`` for an empty password.
    public static func make(
        password: String,
        logRounds: Int = 15,
        blockSize: Int = 8,
        parallelism: Int = 1
    ) throws(AuthError) -> PasswordHash {
        guard !password.isEmpty else { throw .invalidConfiguration("a password cannot be empty") }
        let salt = randomSalt()
        let probe = PasswordHash(
            logRounds: logRounds, blockSize: blockSize, parallelism: parallelism, salt: salt, hash: [])
        let hash = try probe.derive(Array(password.utf8), count: 32)
        return PasswordHash(
            logRounds: logRounds, blockSize: blockSize, parallelism: parallelism, salt: salt, hash: hash)
    }

    /// Whether `password` matches, compared in constant time.
    public func matches(_ password: String) -> Bool {
        let candidate = Array(password.utf8)
        // BoringSSL's scrypt wrapper cannot take an empty buffer; spend the same work anyway.
        guard let derived = try? derive(candidate.isEmpty ? [0] : candidate, count: hash.count) else { return false }
        return !candidate.isEmpty && ConstantTime.equal(derived, hash)
    }

    public var description: String {
        "$scrypt$ln=\(logRounds),r=\(blockSize),p=\(parallelism)$\(Self.encode(salt))$\(Self.encode(hash))"
    }

    private static func randomSalt() -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) }
    }

    private func derive(_ password: [UInt8], count: Int) throws(AuthError) -> [UInt8] {
        do {
            let key = try KDF.Scrypt.deriveKey(
                from: password, salt: salt, outputByteCount: count,
                rounds: 1 << logRounds, blockSize: blockSize, parallelism: parallelism)
            return key.withUnsafeBytes { Array($0) }
        } catch {
            throw .invalidConfiguration("scrypt failed")
        }
    }

    private static func decode(_ text: Substring) -> [UInt8]? {
        var padded = String(text)
        while padded.utf8.count % 4 != 0 { padded += "=" }
        return Data(base64Encoded: padded).map(Array.init)
    }

    private static func encode(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}

/// Comparisons whose time does not depend on where the inputs differ.
enum ConstantTime {
    static func equal(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices {
            difference |= lhs[index] ^ rhs[index]
        }
        return difference == 0
    }
}
