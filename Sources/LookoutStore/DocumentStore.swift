/// The service's collections, looked up by name.
///
/// Read-only for now: the observable store with revisions, writes and waiters grows
/// from this type (see DESIGN.md §2).
public struct DocumentStore: Sendable {
    private let collections: [String: DocumentCollection]
    /// Collection names in declaration order.
    public let names: [String]

    /// - Throws: ``StoreError/duplicateCollection(_:)`` when two collections share a name.
    public init(_ collections: [DocumentCollection]) throws(StoreError) {
        var byName: [String: DocumentCollection] = [:]
        for collection in collections {
            guard byName.updateValue(collection, forKey: collection.name) == nil else {
                throw .duplicateCollection(collection.name)
            }
        }
        self.collections = byName
        self.names = collections.map(\.name)
    }

    public subscript(name: String) -> DocumentCollection? {
        collections[name]
    }
}
