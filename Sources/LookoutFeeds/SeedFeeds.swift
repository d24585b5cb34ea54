import LookoutJSON
import LookoutStore

/// The seed iOS app's views of the store (contract/seed-app.md): whole lists in their
/// declared order, and the information feed in numbered pages.
public struct SeedFeeds: Sendable {
    /// The collection that `GET /v1/info_feed?page=N` pages through.
    public static let informationCollection = "info_feed"

    private let store: DocumentStore

    public init(store: DocumentStore) {
        self.store = store
    }

    /// Every document of `collection` in its declared order, or nil for an unknown collection.
    public func list(_ collection: String) -> JSONValue? {
        guard let documents = store[collection]?.sortedDocuments else { return nil }
        return .array(documents.map(JSONValue.object))
    }

    /// Page `number` of the information feed: `{"page", "has_next_page", "information"}`.
    /// - Precondition: `number >= 1`.
    public func informationPage(_ number: Int) -> JSONValue? {
        guard let collection = store[Self.informationCollection] else { return nil }
        let documents = collection.sortedDocuments
        let window = PageWindow(number: number, size: collection.options.pageSize, total: documents.count)
        return [
            "page": .int(number),
            "has_next_page": .bool(window.hasNextPage),
            "information": .array(documents[window.range].map(JSONValue.object)),
        ]
    }
}
