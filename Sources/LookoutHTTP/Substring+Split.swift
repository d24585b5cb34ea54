extension Substring {
    /// `split(maxSplits:omittingEmptySubsequences:whereSeparator:)` at any of some ASCII
    /// separators, by `Character`, as that method splits.
    ///
    /// Text that is all ASCII is split by byte instead, without grapheme breaking: in ASCII
    /// no Character holds a separator with anything else (only "\r\n" is two bytes), so
    /// the pieces are the same. Paths, queries and headers are split on every request.
    public func splitting(
        at separators: Unicode.Scalar..., maxSplits: Int = .max, omittingEmptySubsequences: Bool = true
    ) -> [Substring] {
        // The separators as a 128-bit set of ASCII bytes.
        var low: UInt64 = 0
        var high: UInt64 = 0
        for separator in separators {
            precondition(separator.isASCII, "ASCII separators")
            let byte = UInt64(separator.value)
            if byte < 64 { low |= 1 << byte } else { high |= 1 << (byte - 64) }
        }
        func isSeparator(_ byte: UInt8) -> Bool {
            (byte < 64 ? low >> UInt64(byte) : high >> UInt64(byte - 64)) & 1 == 1
        }
        let pieces = withASCIIBytes { bytes -> [Substring] in
            // The steps of the standard library's split, on the bytes, into an array sized
            // once: at most a piece per separator, and one more.
            var bound = 1
            for byte in bytes where isSeparator(byte) { bound += 1 }
            var pieces: [Substring] = []
            pieces.reserveCapacity(maxSplits < bound ? maxSplits + 1 : bound)
            var start = 0
            if maxSplits > 0 {
                for index in bytes.indices where isSeparator(bytes[index]) {
                    let appended = !(omittingEmptySubsequences && start == index)
                    if appended { pieces.append(self[self.index(atByte: start)..<self.index(atByte: index)]) }
                    start = index + 1
                    if appended && pieces.count == maxSplits { break }
                }
            }
            if start != bytes.count || !omittingEmptySubsequences {
                pieces.append(self[self.index(atByte: start)..<endIndex])
            }
            return pieces
        }
        if let pieces { return pieces }
        let characters = separators.map(Character.init)
        return split(
            maxSplits: maxSplits, omittingEmptySubsequences: omittingEmptySubsequences,
            whereSeparator: characters.contains)
    }

    /// `splitting(at: separator, maxSplits: 1, omittingEmptySubsequences: false)` without
    /// an array: the text before the first `separator` and the text after it, or the whole
    /// text and nil when there is none. A query's every `name=value` is split so.
    public func splittingOnce(at separator: Unicode.Scalar) -> (head: Substring, rest: Substring?) {
        precondition(separator.isASCII, "an ASCII separator")
        let byte = UInt8(separator.value)
        if let found = withASCIIBytes({ bytes in bytes.firstIndex(of: byte) }) {
            guard let found else { return (self, nil) }
            let at = index(atByte: found)
            return (self[..<at], self[index(after: at)...])
        }
        let parts = split(maxSplits: 1, omittingEmptySubsequences: false) { $0 == Character(separator) }
        return (parts[0], parts.count > 1 ? parts[1] : nil)
    }

    /// `body` over the text's bytes when they are all ASCII; nil otherwise.
    func withASCIIBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result? {
        var text = self  // withUTF8 is mutating: it makes a bridged string contiguous
        return text.withUTF8 { bytes -> Result? in
            for byte in bytes where byte >= 0x80 { return nil }
            return body(bytes)
        }
    }

    /// The index `offset` bytes from the start.
    func index(atByte offset: Int) -> Index {
        utf8.index(startIndex, offsetBy: offset)
    }
}

extension Substring {
    /// Whether `lowercased()` is `lowercase`, which is ASCII: compared byte by byte when
    /// the text is ASCII, where lowercasing maps only `A`–`Z`, without making a string.
    public func isLowercased(as lowercase: StaticString) -> Bool {
        withASCIIBytes { $0.isLowercased(as: lowercase) } ?? (lowercased() == lowercase.description)
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// Whether the bytes with `A`–`Z` lowercased are `lowercase`'s, which is ASCII: text
    /// read byte by byte, compared without making a string.
    public func isLowercased(as lowercase: StaticString) -> Bool {
        lowercase.withUTF8Buffer { expected in
            elementsEqual(expected) { byte, wanted in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 == wanted : byte == wanted
            }
        }
    }
}
