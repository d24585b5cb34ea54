/// Percent-encoding (RFC 3986 §2.1) of the bytes a context cannot carry as they are, for
/// client text that goes into a header: a query kept in a `Link` target, a field name in
/// a list of changed fields.
public enum PercentEncoding {
    /// `text` with every UTF-8 byte that `keep` refuses written as `%XX` (uppercase hex).
    public static func encode(_ text: String, keeping keep: (UInt8) -> Bool) -> String {
        guard text.utf8.contains(where: { !keep($0) }) else { return text }
        let hex = Array("0123456789ABCDEF".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 16)
        for byte in text.utf8 {
            if keep(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
