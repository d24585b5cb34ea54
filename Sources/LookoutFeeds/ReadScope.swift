import LookoutStore

/// How much of a collection a read may see: everything, for a reader with a valid token,
/// or only what the collection declares public, for anyone else.
///
/// A read applies its scope to each collection it touches, by that collection's own
/// declaration: in ``publicFields`` scope a list of a collection public as a whole shows
/// every field of it, and only the public fields of a collection it expands into.
///
/// A read in ``publicFields`` scope sees the collection as if it had only its public
/// fields: it returns, filters, sorts, searches and expands through those alone, so
/// what it records in its ``ReadSet`` (and a long-poll waits on) is public too. Naming
/// any other field is refused with a ``QueryError`` that needs a token, whether the
/// field exists or not, so an anonymous reader cannot learn which private fields exist.
public enum ReadScope: Sendable, Hashable {
    /// Every field.
    case everything
    /// Only the public fields (``DocumentCollection/Options/publicFields``) and `id`.
    case publicFields

    /// What this scope sees of a collection declared with `options`.
    public func visible(_ options: DocumentCollection.Options) -> PublicFields {
        self == .everything ? .all : options.publicFields
    }

    /// The fields this scope reads of a document of `collection` when no `fields=` is
    /// given: nil for all of them.
    /// - Throws: a ``QueryError`` that needs a token when the collection has no public fields.
    public func defaultFields(of collection: String, _ options: DocumentCollection.Options) throws(QueryError)
        -> [String]?
    {
        switch visible(options) {
        case .all: return nil
        case .only(let names): return names
        case .none: throw .tokenRequired(collection: collection)
        }
    }
}
