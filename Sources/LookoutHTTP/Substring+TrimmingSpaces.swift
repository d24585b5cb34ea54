extension Substring {
    /// The text without the optional whitespace around a header value or list element
    /// (RFC 9110 §5.6.3: spaces and tabs).
    public func trimmingSpaces() -> Substring {
        // In ASCII each byte is a Character ("\r\n" aside, which holds no space or tab): the
        // same ends, found without grapheme breaking.
        let ends = withASCIIBytes { $0.rangeTrimmingSpaces() }
        if let ends { return self[index(atByte: ends.lowerBound)..<index(atByte: ends.upperBound)] }
        var text = self
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        return text
    }
}

// Header lists are read by Unicode scalar, not by Character: a combining mark after a
// quote, comma or space would otherwise merge with it into one Character, so that
// `"\u{65A}…` no longer starts with `"` (found by the entity-tag fuzzer). The elements
// stay scalar views: turning a slice that is not Character-aligned back into a Substring
// costs a scan of the string before it.

extension Substring.UnicodeScalarView {
    /// The scalars without the optional whitespace around a header value or list element
    /// (RFC 9110 §5.6.3: spaces and tabs).
    public func trimmingSpaces() -> Substring.UnicodeScalarView {
        var scalars = self
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return scalars
    }
}

extension String {
    /// The elements of a comma-separated header list, each without surrounding spaces
    /// (RFC 9110 §5.6.1); empty elements are left out.
    public func headerListElements() -> [Substring.UnicodeScalarView] {
        unicodeScalars.split(separator: ",").map { $0.trimmingSpaces() }.filter { !$0.isEmpty }
    }
}

extension UnsafeBufferPointer<UInt8> {
    /// The range of the bytes left once the spaces and tabs at both ends are dropped
    /// (RFC 9110 §5.6.3), for text read byte by byte.
    public func rangeTrimmingSpaces() -> Range<Int> {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        var start = 0
        var end = count
        while start < end, isSpace(self[start]) { start += 1 }
        while start < end, isSpace(self[end - 1]) { end -= 1 }
        return start..<end
    }
}
