#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Unpadded base64url (RFC 4648 §5), as used in JWTs, JWKs and refresh tokens.
public enum Base64URL {
    /// Decodes unpadded base64url; nil for anything else (padding, other alphabets, bits
    /// left over in the last character) and for text longer than `limit` characters.
    public static func decode(_ text: some StringProtocol, limit: Int = 16_384) -> [UInt8]? {
        decode(bytes: Array(text.utf8)[...], limit: limit)
    }

    /// Decodes unpadded base64url from its ASCII bytes.
    public static func decode(bytes text: ArraySlice<UInt8>, limit: Int = 16_384) -> [UInt8]? {
        guard text.count <= limit, text.count % 4 != 1 else { return nil }
        var output = [UInt8]()
        output.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in text {
            let value = sextets[Int(character)]
            guard value != invalid else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        // Canonical only: the bits after the last whole byte must be zero (RFC 4648 §3.5).
        guard accumulator & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return output
    }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text = [UInt8]()
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in bytes {
            accumulator = accumulator << 8 | UInt32(byte)
            bits += 8
            while bits >= 6 {
                bits -= 6
                text.append(alphabet[Int(accumulator >> UInt32(bits) & 63)])
            }
        }
        if bits > 0 { text.append(alphabet[Int(accumulator << UInt32(6 - bits) & 63)]) }
        return String(decoding: text, as: UTF8.self)
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
    private static let invalid: UInt8 = 0xFF
    private static let sextets: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = UInt8(index) }
        return table
    }()
}

extension Base64URL {
    /// `byteCount` bytes from the system's secure random source, base64url.
    public static func random(byteCount: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return encode((0..<byteCount).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
