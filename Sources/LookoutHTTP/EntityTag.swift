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
    public init?(parsing text: Substring) {
        var tag = text.trimmingSpaces()
        if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
        if tag.hasPrefix("\""), tag.hasSuffix("\""), tag.count >= 2 { tag = tag.dropFirst().dropLast() }
        guard let dash = tag.lastIndex(of: "-"), let revision = UInt64(tag[tag.index(after: dash)...]) else {
            return nil
        }
        epoch = String(tag[..<dash])
        self.revision = revision
    }

    /// The tag of what was read at `revision` of the store with `epoch`.
    public init(epoch: String, revision: UInt64) {
        self.epoch = epoch
        self.revision = revision
    }

    /// The first tag listed in an `If-Match` or `If-None-Match` header.
    public static func first(in header: String?) -> EntityTag? {
        header?.split(separator: ",").lazy.compactMap { EntityTag(parsing: $0) }.first
    }

    /// Whether an `If-None-Match` header names this tag (or is `*`).
    public func isMatched(byIfNoneMatch header: String?) -> Bool {
        guard let header else { return false }
        return header.split(separator: ",").contains { candidate in
            candidate.trimmingSpaces() == "*" || EntityTag(parsing: candidate) == self
        }
    }
}
