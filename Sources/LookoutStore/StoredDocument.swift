import LookoutJSON

/// A document as the store keeps it: its fields and the revision that last changed each.
struct StoredDocument: Sendable {
    var fields: JSONObject
    /// Revision per field name; the `id` field is never tracked (it never changes).
    var revisions: [String: UInt64]
    /// When the document was created.
    var created: UInt64

    /// The highest revision of the document: its version for `If-Match`.
    var revision: UInt64 {
        revisions.values.reduce(created, max)
    }
}

/// A collection as the store keeps it.
struct CollectionState: Sendable {
    let options: DocumentCollection.Options
    /// Ids in insertion order.
    var ids: [Int]
    var documents: DocumentTable
    var membershipRevision: UInt64
}
