/// Cursors as entity tags: `"<epoch>-<revision>"`, the store's epoch and the highest
/// revision a response read. The same content at the same epoch has the same tag.
public struct EntityTag: Equatable, Sendable {
    /// The store's epoch: which history the revision counts in.
    public let epoch: String
    /// The highest revision the response read.
    public let revision: UInt64

    /// The quoted header form.
    public var header: String { "\"\(epoch)-\(revision)\"" }

    /// Parses a tag with or without quotes and `W/`, as sent in `If-None-Match` or
    /// `?since=`.
    ///
    /// Only a tag whose ``header`` can carry it back is accepted: its epoch holds no
    /// space, control character or `"` (RFC 9110's etagc), and no `,`, which would split
    /// it in a header list.
    public init?(parsing text: Substring) {
        if text.utf8.allSatisfy(Self.isASCII) {
            self.init(ascii: text.utf8)
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
    private init?(ascii bytes: Substring.UTF8View) {
        var tag = bytes
        while let first = tag.first, first == UInt8(ascii: " ") || first == UInt8(ascii: "\t") { tag.removeFirst() }
        while let last = tag.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") { tag.removeLast() }
        if tag.starts(with: "W/".utf8) { tag = tag.dropFirst(2) }
        if tag.count >= 2, tag.first == UInt8(ascii: "\""), tag.last == UInt8(ascii: "\"") {
            tag = tag.dropFirst().dropLast()
        }
        guard let dash = tag.lastIndex(of: UInt8(ascii: "-")),
            let revision = UInt64(Substring(tag[tag.index(after: dash)...])),
            tag[..<dash].allSatisfy(Self.isEpochByte)
        else {
            return nil
        }
        self.epoch = String(Substring(tag[..<dash]))
        self.revision = revision
    }

    private static func isASCII(_ byte: UInt8) -> Bool { byte < 0x80 }

    /// The tags of a header list that is all ASCII, as ``String/headerListElements()`` splits it.
    private static func asciiListElements(_ header: String) -> [Substring.UTF8View] {
        header[...].utf8.split(separator: UInt8(ascii: ","), omittingEmptySubsequences: true)
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
        guard header.utf8.allSatisfy(isASCII) else {
            return header.headerListElements().lazy.compactMap { EntityTag(parsing: $0) }.first
        }
        // An element of spaces only is empty once trimmed, and parses to nothing either way.
        return asciiListElements(header).lazy.compactMap { EntityTag(ascii: $0) }.first
    }

    /// Whether an `If-None-Match` header names this tag (or is `*`).
    public func isMatched(byIfNoneMatch header: String?) -> Bool {
        guard let header else { return false }
        guard header.utf8.allSatisfy(Self.isASCII) else {
            return header.headerListElements().contains { candidate in
                candidate.elementsEqual("*".unicodeScalars) || EntityTag(parsing: candidate) == self
            }
        }
        return Self.asciiListElements(header).contains { candidate in
            Self.isStar(candidate) || EntityTag(ascii: candidate) == self
        }
    }

    /// Whether a list element is `*`, spaces around it aside.
    private static func isStar(_ element: Substring.UTF8View) -> Bool {
        let spaces = [UInt8(ascii: " "), UInt8(ascii: "\t")]
        return element.drop(while: spaces.contains).reversed().drop(while: spaces.contains).elementsEqual(
            [UInt8(ascii: "*")])
    }
}
