/// Percent-encoding (RFC 3986 §2.1) of the bytes a context cannot carry as they are, for
/// client text that goes into a header: a query kept in a `Link` target, a field name in
/// a list of changed fields.
public enum PercentEncoding {
    /// `text` with every UTF-8 byte that `keep` refuses written as `%XX` (uppercase hex).
    public static func encode(_ text: String, keeping keep: (UInt8) -> Bool) -> String {
        guard text.utf8.contains(where: { !keep($0) }) else { return text }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 16)
        for byte in text.utf8 {
            if keep(byte) {
                bytes.append(byte)
            } else {
                bytes.append(UInt8(ascii: "%"))
                bytes.append(hexDigits[Int(byte >> 4)])
                bytes.append(hexDigits[Int(byte & 0xF)])
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// RFC 3986 §2.3's unreserved bytes: letters, digits, `-`, `.`, `_` and `~`.
    public static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)
}
