/// Cursors as entity tags: `"<epoch>-<revision>"`, the store's epoch and the highest
/// revision a response read. The same content at the same epoch has the same tag.
struct EntityTag: Equatable, Sendable {
    let epoch: String
    let revision: UInt64

    /// The quoted header form.
    var header: String { "\"\(epoch)-\(revision)\"" }

    /// Parses a tag with or without quotes and `W/`, as sent in `If-None-Match` or
    /// `?since=`.
    init?(parsing text: Substring) {
        var tag = text.trimmingSpaces()
        if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
        if tag.hasPrefix("\""), tag.hasSuffix("\""), tag.count >= 2 { tag = tag.dropFirst().dropLast() }
        guard let dash = tag.lastIndex(of: "-"), let revision = UInt64(tag[tag.index(after: dash)...]) else {
            return nil
        }
        epoch = String(tag[..<dash])
        self.revision = revision
    }

    init(epoch: String, revision: UInt64) {
        self.epoch = epoch
        self.revision = revision
    }

    /// The first tag listed in an `If-Match` or `If-None-Match` header.
    static func first(in header: String?) -> EntityTag? {
        header?.split(separator: ",").lazy.compactMap { EntityTag(parsing: $0) }.first
    }

    /// Whether an `If-None-Match` header names this tag (or is `*`).
    func isMatched(byIfNoneMatch header: String?) -> Bool {
        guard let header else { return false }
        return header.split(separator: ",").contains { candidate in
            candidate.trimmingSpaces() == "*" || EntityTag(parsing: candidate) == self
        }
    }
}
