/// Why the store refused a collection or a document.
public enum StoreError: Error, Equatable, CustomStringConvertible {
    case invalidCollectionName(String)
    case duplicateCollection(String)
    case invalidOptions(collection: String, reason: String)
    case invalidDocument(collection: String, index: Int, reason: String)

    public var description: String {
        switch self {
        case .invalidCollectionName(let name):
            "collection name \"\(name)\" must be lowercase letters, digits and '_', starting with a letter"
        case .duplicateCollection(let name): "collection \"\(name)\" is declared twice"
        case .invalidOptions(let collection, let reason): "collection \"\(collection)\": \(reason)"
        case .invalidDocument(let collection, let index, let reason):
            "collection \"\(collection)\": document \(index) \(reason)"
        }
    }
}
