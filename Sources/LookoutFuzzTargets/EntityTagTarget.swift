import LookoutHTTP

/// Entity tags, as one tag (`?since=`) and as a header list (`If-None-Match`).
///
/// A tag is never accepted that cannot be printed back: its header form is an RFC 9110
/// entity-tag (`"` etagc... `"`), parses to the same tag, is the first tag of a header
/// holding just it, and matches it in `If-None-Match`. Any header list that also names a
/// tag matches that tag. Text that is all ASCII takes a faster path over its bytes; it
/// must give what the path over Unicode scalars gives.
enum EntityTagTarget {
    static func check(_ input: [UInt8]) throws(PropertyViolation) {
        let text = String(decoding: input, as: UTF8.self)
        try checkSamePaths(text)
        if let tag = EntityTag(parsing: text[...]) {
            try checkPrintable(tag, parsedFrom: text)
        }
        if let tag = EntityTag.first(in: text) {
            try checkPrintable(tag, parsedFrom: text)
        }
        let current = EntityTag(epoch: "0a1b2c3d4e5f6071", revision: 42)
        try PropertyViolation.require(
            current.isMatched(byIfNoneMatch: text + ", " + current.header),
            "If-None-Match: \(excerpt(text)), \(current.header) does not match \(current.header)")
    }

    /// The parses of `text` agree with those by Unicode scalar, which any text takes.
    private static func checkSamePaths(_ text: String) throws(PropertyViolation) {
        try PropertyViolation.require(
            EntityTag(parsing: text[...]) == EntityTag(parsing: text[...].unicodeScalars),
            "\(excerpt(text)) parses to another tag than by scalar")
        let elements = text.headerListElements()
        try PropertyViolation.require(
            EntityTag.first(in: text) == elements.lazy.compactMap({ EntityTag(parsing: $0) }).first,
            "the first tag of \(excerpt(text)) is another than by scalar")
        // A few candidates, not one per element: each match scans the whole header, and an
        // amplified template lists a hundred thousand tags.
        let listed = elements.lazy.compactMap(EntityTag.init).prefix(3)
        for candidate in [EntityTag(epoch: "0a1b2c3d4e5f6071", revision: 42)] + listed {
            let byScalar = elements.contains {
                $0.elementsEqual("*".unicodeScalars) || EntityTag(parsing: $0) == candidate
            }
            try PropertyViolation.require(
                candidate.isMatched(byIfNoneMatch: text) == byScalar,
                "If-None-Match: \(excerpt(text)) matches \(candidate.header) otherwise than by scalar")
        }
    }

    private static func checkPrintable(_ tag: EntityTag, parsedFrom text: String) throws(PropertyViolation) {
        let header = tag.header
        let inner = header.utf8.dropFirst().dropLast()
        try PropertyViolation.require(
            inner.allSatisfy(isTagCharacter),
            "\(excerpt(text)) is accepted as a tag whose header form \(excerpt(header)) is not an entity-tag")
        try PropertyViolation.require(
            EntityTag(parsing: header[...]) == tag, "the header form \(excerpt(header)) parses to another tag")
        try PropertyViolation.require(
            EntityTag.first(in: header) == tag, "the header \(excerpt(header)) does not list its own tag first")
        try PropertyViolation.require(
            tag.isMatched(byIfNoneMatch: header), "If-None-Match: \(excerpt(header)) does not match its own tag")
    }

    /// RFC 9110 §8.8.3: etagc = %x21 / %x23-7E / obs-text.
    private static func isTagCharacter(_ byte: UInt8) -> Bool {
        byte == 0x21 || (0x23...0x7E).contains(byte) || byte >= 0x80
    }
}
