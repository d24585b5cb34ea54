/// What a read depends on: one top-level field of one document, which fields a document
/// has, or the membership of a collection (which ids exist, in which order).
public enum StoreKey: Hashable, Sendable, CustomStringConvertible {
    case field(collection: String, id: Int, name: String)
    /// The set of field names of a document: a whole-document read depends on it, so a
    /// field added later wakes it too. Changes when a field that is not ignored is added
    /// or removed.
    case fieldNames(collection: String, id: Int)
    case membership(collection: String)

    /// `collection/id.field` for a field, `collection/id` for a document's field names,
    /// `collection` for a membership; this is how changed keys are named to clients.
    public var description: String {
        switch self {
        case .field(let collection, let id, let name): "\(collection)/\(id).\(name)"
        case .fieldNames(let collection, let id): "\(collection)/\(id)"
        case .membership(let collection): collection
        }
    }
}
