#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// Unpadded base64url (RFC 4648 §5), as used in JWTs, JWKs and refresh tokens.
public enum Base64URL {
    /// Decodes unpadded base64url; nil for anything else, padding included, and for text
    /// longer than `limit` characters.
    public static func decode(_ text: some StringProtocol, limit: Int = 16_384) -> [UInt8]? {
        let utf8 = text.utf8
        guard utf8.count <= limit, utf8.count % 4 != 1 else { return nil }
        var standard = [UInt8]()
        standard.reserveCapacity(utf8.count + 3)
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "-"): standard.append(UInt8(ascii: "+"))
            case UInt8(ascii: "_"): standard.append(UInt8(ascii: "/"))
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                standard.append(byte)
            default: return nil
            }
        }
        while standard.count % 4 != 0 { standard.append(UInt8(ascii: "=")) }
        return Data(base64Encoded: Data(standard)).map(Array.init)
    }

    public static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var text = Data(bytes).base64EncodedString()
        text.removeAll { $0 == "=" }
        return String(text.map { $0 == "+" ? "-" : $0 == "/" ? "_" : $0 })
    }
}

extension Base64URL {
    /// `byteCount` bytes from the system's secure random source, base64url.
    public static func random(byteCount: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return encode((0..<byteCount).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
