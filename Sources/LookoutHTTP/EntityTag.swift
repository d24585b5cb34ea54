/// Cursors as entity tags: `"<epoch>-<revision>"`, the store's epoch and the highest
/// revision a response read. The same content at the same epoch has the same tag.
public struct EntityTag: Equatable, Sendable {
    /// The store's epoch: which history the revision counts in.
    public let epoch: String
    /// The highest revision the response read.
    public let revision: UInt64

    /// The quoted header form.
    ///
    /// Written byte by byte into a string of its exact size: as an interpolation it was
    /// ~1,800 instructions, four per single-wake round (callgrind, Benchmarks/README.md
    /// stop 54).
    public var header: String {
        var digits = 1
        var rest = revision / 10
        while rest > 0 {
            digits += 1
            rest /= 10
        }
        var epoch = epoch  // withUTF8 is mutating; a native string is not copied
        return epoch.withUTF8 { epoch in
            String(unsafeUninitializedCapacity: epoch.count + digits + 3) { text in
                text[0] = UInt8(ascii: "\"")
                let dash = text.dropFirst().initialize(fromContentsOf: epoch)
                text[dash] = UInt8(ascii: "-")
                // The revision's digits, the last first.
                var value = revision
                for index in stride(from: dash + digits, to: dash, by: -1) {
                    text[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: value % 10)
                    value /= 10
                }
                text[dash + digits + 1] = UInt8(ascii: "\"")
                return dash + digits + 2
            }
        }
    }

    /// Parses a tag with or without quotes and `W/`, as sent in `If-None-Match` or
    /// `?since=`.
    ///
    /// Only a tag whose ``header`` can carry it back is accepted: its epoch holds no
    /// space, control character or `"` (RFC 9110's etagc), and no `,`, which would split
    /// it in a header list.
    public init?(parsing text: Substring) {
        if let tag = text.withASCIIBytes(EntityTag.init(ascii:)) {
            guard let tag else { return nil }
            self = tag
        } else {
            self.init(parsing: text.unicodeScalars)
        }
    }

    /// Parses a tag given as Unicode scalars (an element of ``String/headerListElements()``):
    /// an epoch starting with a combining mark must not merge with the opening quote.
    public init?(parsing scalars: Substring.UnicodeScalarView) {
        var tag = scalars.trimmingSpaces()
        if tag.starts(with: "W/".unicodeScalars) { tag = tag.dropFirst(2) }
        if tag.first == "\"", tag.last == "\"", tag.index(after: tag.startIndex) < tag.endIndex {
            tag = tag.dropFirst().dropLast()
        }
        guard let dash = tag.lastIndex(of: "-") else { return nil }
        let epoch = String(String.UnicodeScalarView(tag[..<dash]))
        guard let revision = UInt64(String(String.UnicodeScalarView(tag[tag.index(after: dash)...]))),
            epoch.utf8.allSatisfy(Self.isEpochByte)
        else {
            return nil
        }
        self.epoch = epoch
        self.revision = revision
    }

    /// ``init(parsing:)-(Substring.UnicodeScalarView)`` for text that is all ASCII, where
    /// each byte is a scalar: the same steps on the bytes, without the scalar view's
    /// decoding. A poll's `If-None-Match` is parsed on every poll, and is ASCII in practice.
    private init?(ascii tag: UnsafeBufferPointer<UInt8>) {
        let trimmed = tag.rangeTrimmingSpaces()
        var start = trimmed.lowerBound
        var end = trimmed.upperBound
        if end - start >= 2, tag[start] == UInt8(ascii: "W"), tag[start + 1] == UInt8(ascii: "/") { start += 2 }
        if end - start >= 2, tag[start] == UInt8(ascii: "\""), tag[end - 1] == UInt8(ascii: "\"") {
            start += 1
            end -= 1
        }
        guard let dash = (start..<end).last(where: { tag[$0] == UInt8(ascii: "-") }),
            (start..<dash).allSatisfy({ Self.isEpochByte(tag[$0]) }),
            let revision = UInt64(String(decoding: UnsafeBufferPointer(rebasing: tag[(dash + 1)..<end]), as: UTF8.self))
        else {
            return nil
        }
        self.epoch = String(decoding: UnsafeBufferPointer(rebasing: tag[start..<dash]), as: UTF8.self)
        self.revision = revision
    }

    /// `body` over each element of a header list that is all ASCII, as
    /// ``String/headerListElements()`` splits it (elements of spaces only included), until
    /// it returns true; nil when the header is not ASCII.
    private static func firstASCIIElement(
        of header: String, where body: (UnsafeBufferPointer<UInt8>) -> Bool
    ) -> Bool? {
        header[...].withASCIIBytes { bytes in
            var start = 0
            for index in 0...bytes.count where index == bytes.count || bytes[index] == UInt8(ascii: ",") {
                if index > start, body(UnsafeBufferPointer(rebasing: bytes[start..<index])) { return true }
                start = index + 1
            }
            return false
        }
    }

    /// Whether a list element is `*`, spaces around it aside.
    private static func isStar(_ element: UnsafeBufferPointer<UInt8>) -> Bool {
        let trimmed = element.rangeTrimmingSpaces()
        return trimmed.count == 1 && element[trimmed.lowerBound] == UInt8(ascii: "*")
    }

    /// RFC 9110 §8.8.3's etagc (`!`, `#` to `~`, and obs-text), less `,`.
    private static func isEpochByte(_ byte: UInt8) -> Bool {
        byte == 0x21 || (0x23...0x7E).contains(byte) && byte != UInt8(ascii: ",") || byte >= 0x80
    }

    /// The tag of what was read at `revision` of the store with `epoch`.
    public init(epoch: String, revision: UInt64) {
        self.epoch = epoch
        self.revision = revision
    }

    /// The first tag listed in an `If-Match` or `If-None-Match` header.
    public static func first(in header: String?) -> EntityTag? {
        guard let header else { return nil }
        var found: EntityTag?
        let ascii = firstASCIIElement(of: header) { element in
            found = EntityTag(ascii: element)
            return found != nil
        }
        guard ascii != nil else {
            return header.headerListElements().lazy.compactMap { EntityTag(parsing: $0) }.first
        }
        return found
    }

    /// Whether an `If-None-Match` header names this tag (or is `*`).
    public func isMatched(byIfNoneMatch header: String?) -> Bool {
        guard let header else { return false }
        if let matched = Self.firstASCIIElement(
            of: header, where: { Self.isStar($0) || EntityTag(ascii: $0) == self })
        {
            return matched
        }
        return header.headerListElements().contains { candidate in
            candidate.elementsEqual("*".unicodeScalars) || EntityTag(parsing: candidate) == self
        }
    }
}
