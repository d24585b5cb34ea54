/// Why the store refused a collection, a document or a write.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    case invalidCollectionName(String)
    case duplicateCollection(String)
    case invalidOptions(collection: String, reason: String)
    case invalidDocument(collection: String, index: Int, reason: String)
    case unknownCollection(String)
    case documentNotFound(collection: String, id: Int)
    /// A written body that cannot be a document: not an object, a bad `id`, ...
    case invalidWrite(String)
    /// Creating a document whose id is taken.
    case idTaken(collection: String, id: Int)
    /// Creating a document without an id when the collection holds the highest id allowed.
    case idsExhausted(collection: String)
    /// `If-Match` named another revision of the document.
    case revisionMismatch(current: UInt64)
    /// The write could not be made durable; nothing of it was kept or published.
    case storageFailed(String)

    public var description: String {
        switch self {
        case .invalidCollectionName(let name):
            "collection name \"\(name)\" must be lowercase letters, digits and '_', starting with a letter, and not auth or watch"
        case .duplicateCollection(let name): "collection \"\(name)\" is declared twice"
        case .invalidOptions(let collection, let reason): "collection \"\(collection)\": \(reason)"
        case .invalidDocument(let collection, let index, let reason):
            "collection \"\(collection)\": document \(index) \(reason)"
        case .unknownCollection(let name): "no collection \"\(name)\""
        case .documentNotFound(let collection, let id): "no document \(id) in \"\(collection)\""
        case .invalidWrite(let reason): reason
        case .idTaken(let collection, let id): "\"\(collection)\" already has a document \(id)"
        case .idsExhausted(let collection):
            "\"\(collection)\" holds the highest id allowed, \(DocumentCollection.ids.upperBound); give the new document an \"id\""
        case .revisionMismatch(let current): "the document has changed (now at revision \(current))"
        case .storageFailed(let reason): "storage failed: \(reason)"
        }
    }
}
