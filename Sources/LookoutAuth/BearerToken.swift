/// The token in an `Authorization: Bearer <token>` header (RFC 6750 §2.1): the scheme,
/// matched without regard to case, after any spaces and tabs; then one or more of them;
/// then the token, without the spaces and tabs around it.
public enum BearerToken {
    public static func parse(_ header: String?) throws(AuthError) -> String {
        guard let header else { throw .missingToken }
        var text = header  // withUTF8 is mutating: it makes a bridged string contiguous
        // Read by byte, as every authorized request's header is: splitting it into pieces
        // was 2% of a single wake's CPU (Benchmarks/README.md, stop 40). Only text that is
        // not ASCII goes by Character, where a combining mark can join a space.
        let ascii = text.withUTF8 { bytes -> Result<String, AuthError>? in
            guard isASCII(bytes) else { return nil }
            return token(in: bytes)
        }
        if let ascii { return try ascii.get() }
        return try token(byCharacter: header)
    }

    /// Whether every byte is below 0x80, tested eight at a time: byte by byte, a header of
    /// ~290 bytes took ~1,100 instructions, on every write (callgrind, Benchmarks/README.md
    /// stop 54).
    static func isASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        let words = UnsafeRawPointer(base)
        var index = 0
        while index + 8 <= bytes.count {
            guard words.loadUnaligned(fromByteOffset: index, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 else {
                return false
            }
            index += 8
        }
        while index < bytes.count {
            guard bytes[index] < 0x80 else { return false }
            index += 1
        }
        return true
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t")
    }

    private static func token(in bytes: UnsafeBufferPointer<UInt8>) -> Result<String, AuthError> {
        var start = 0
        while start < bytes.count, isSpace(bytes[start]) { start += 1 }
        var end = start
        while end < bytes.count, !isSpace(bytes[end]) { end += 1 }
        // A scheme, a space or tab, and something after it.
        guard end + 1 < bytes.count else { return .failure(.notBearer) }
        guard end - start == 6, isBearer(bytes[start..<end]) else { return .failure(.notBearer) }
        var first = end + 1
        var last = bytes.count
        while first < last, isSpace(bytes[first]) { first += 1 }
        while first < last, isSpace(bytes[last - 1]) { last -= 1 }
        guard first < last else { return .failure(.invalidToken("the token is empty")) }
        return .success(String(decoding: UnsafeBufferPointer(rebasing: bytes[first..<last]), as: UTF8.self))
    }

    /// Whether the six bytes of `scheme` spell "bearer" in any case. Each of its letters is
    /// matched with 0x20 set, which turns only that letter's capital into it. (Zipped with a
    /// `String`'s UTF-8 view, this was 0.5% of a single wake's CPU, more than the rest of
    /// the header's reading; Benchmarks/README.md, stop 41.)
    private static func isBearer(_ scheme: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        var lowered: UInt64 = 0
        for byte in scheme { lowered = lowered << 8 | UInt64(byte | 0x20) }
        return lowered == 0x62_65_61_72_65_72  // "bearer"
    }

    /// The same, by `Character`, as every header was read before.
    private static func token(byCharacter header: String) throws(AuthError) -> String {
        let parts = header.split(maxSplits: 1, whereSeparator: { $0 == " " || $0 == "\t" })
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { throw .notBearer }
        var token = parts[1]
        while token.first == " " || token.first == "\t" { token.removeFirst() }
        while token.last == " " || token.last == "\t" { token.removeLast() }
        guard !token.isEmpty else { throw .invalidToken("the token is empty") }
        return String(token)
    }
}
