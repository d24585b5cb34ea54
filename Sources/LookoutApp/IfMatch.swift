import LookoutHTTP

/// An `If-Match` header as RFC 9110 §13.1.1 has it: `*`, which any current document
/// satisfies, or a list of entity tags compared strongly, so a weak tag (`W/"…"`) never
/// matches.
enum IfMatch: Equatable {
    /// `*`: the document must exist (which every write to a document requires anyway).
    case any
    /// The store revisions of the strong tags of this store's epoch listed; empty when
    /// none is, so that nothing matches.
    case revisions(Set<UInt64>)

    /// The condition of `header` for documents of the store with `epoch`; nil when absent.
    init?(header: String?, epoch: String) {
        guard let header else { return nil }
        if header.unicodeScalars[...].trimmingSpaces().elementsEqual("*".unicodeScalars) {
            self = .any
            return
        }
        var revisions = Set<UInt64>()
        for text in header.headerListElements() {
            guard text.first == "\"", let tag = EntityTag(parsing: text), tag.epoch == epoch
            else { continue }
            revisions.insert(tag.revision)
        }
        self = .revisions(revisions)
    }

    /// The revisions a write may find the document at; nil for any.
    var expectedRevisions: Set<UInt64>? {
        switch self {
        case .any: nil
        case .revisions(let revisions): revisions
        }
    }
}
