/// What a read depends on: one top-level field of one document, or the membership of a
/// collection (which ids exist, in which order).
public enum StoreKey: Hashable, Sendable, CustomStringConvertible {
    case field(collection: String, id: Int, name: String)
    case membership(collection: String)

    /// `collection/id.field` for a field, `collection` for a membership; this is how
    /// changed keys are named to clients.
    public var description: String {
        switch self {
        case .field(let collection, let id, let name): "\(collection)/\(id).\(name)"
        case .membership(let collection): collection
        }
    }
}
