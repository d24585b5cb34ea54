import LookoutJSON
import LookoutStore

/// The seed iOS app's views of the store (contract/seed-app.md): whole lists in their
/// declared order, and the information feed in numbered pages.
///
/// Each view reads a snapshot and records what it read, so a long-poll on it waits for
/// exactly that: a list on its membership, its sort fields and every field it returns; a
/// page on the membership and sort fields that decide it and the fields of its items.
public struct SeedFeeds: Sendable {
    /// The collection that `GET /v1/info_feed?page=N` pages through.
    public static let informationCollection = "info_feed"

    public init() {}

    /// Every document of `collection` in its declared order, or nil for an unknown collection.
    public func list(_ collection: String, in snapshot: StoreSnapshot, reads: inout ReadSet) -> JSONValue? {
        guard let ids = snapshot.orderedIDs(in: collection, reads: &reads) else { return nil }
        return .array(ids.compactMap { snapshot.document($0, in: collection, reads: &reads).map(JSONValue.object) })
    }

    /// Page `number` of the information feed: `{"page", "has_next_page", "information"}`.
    /// - Precondition: `number >= 1`.
    public func informationPage(_ number: Int, in snapshot: StoreSnapshot, reads: inout ReadSet) -> JSONValue? {
        let collection = Self.informationCollection
        guard let options = snapshot.options(of: collection),
            let ids = snapshot.orderedIDs(in: collection, reads: &reads)
        else { return nil }
        let window = PageWindow(number: number, size: options.pageSize, total: ids.count)
        let items = ids[window.range].compactMap { snapshot.document($0, in: collection, reads: &reads) }
        return [
            "page": .int(number),
            "has_next_page": .bool(window.hasNextPage),
            "information": .array(items.map(JSONValue.object)),
        ]
    }
}
