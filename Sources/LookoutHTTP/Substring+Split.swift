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
        precondition(separators.allSatisfy(\.isASCII), "ASCII separators")
        guard utf8.allSatisfy({ $0 < 0x80 }) else {
            let characters = separators.map(Character.init)
            return split(
                maxSplits: maxSplits, omittingEmptySubsequences: omittingEmptySubsequences,
                whereSeparator: characters.contains)
        }
        // The steps of the standard library's split, on the bytes.
        let bytes = utf8
        let separatorBytes = separators.map { UInt8(ascii: $0) }
        var pieces: [Substring] = []
        var start = bytes.startIndex
        var index = start
        if maxSplits > 0 {
            while index != bytes.endIndex {
                guard separatorBytes.contains(bytes[index]) else {
                    bytes.formIndex(after: &index)
                    continue
                }
                let appended = !(omittingEmptySubsequences && start == index)
                if appended { pieces.append(self[start..<index]) }
                bytes.formIndex(after: &index)
                start = index
                if appended && pieces.count == maxSplits { break }
            }
        }
        if start != bytes.endIndex || !omittingEmptySubsequences {
            pieces.append(self[start..<bytes.endIndex])
        }
        return pieces
    }
}

extension Substring {
    /// Whether `lowercased()` is `lowercase`, which is ASCII: compared byte by byte when
    /// the text is ASCII, where lowercasing maps only `A`–`Z`, without making a string.
    public func isLowercased(as lowercase: StaticString) -> Bool {
        guard utf8.allSatisfy({ $0 < 0x80 }) else { return lowercased() == lowercase.description }
        return lowercase.withUTF8Buffer { expected in
            utf8.elementsEqual(expected) { byte, wanted in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 == wanted : byte == wanted
            }
        }
    }
}
