import LookoutJSON

/// A document as the store keeps it: its fields and the revision that last changed each.
struct StoredDocument: Sendable {
    var fields: JSONObject
    /// Revision per field name; the `id` field is never tracked (it never changes).
    var revisions: [String: UInt64]
    /// When the document was created.
    var created: UInt64
    /// When a field that is not ignored was last added or removed.
    var fieldNamesRevision: UInt64

    init(fields: JSONObject, created: UInt64) {
        self.fields = fields
        self.revisions = [:]
        self.created = created
        self.fieldNamesRevision = created
    }

    init(_ image: DocumentImage) {
        fields = image.fields
        revisions = image.revisions
        created = image.created
        fieldNamesRevision = image.fieldNamesRevision
    }

    var image: DocumentImage {
        DocumentImage(fields: fields, revisions: revisions, created: created, fieldNamesRevision: fieldNamesRevision)
    }

    /// The highest revision of the document: its version for `If-Match`.
    var revision: UInt64 {
        revisions.values.reduce(max(created, fieldNamesRevision), max)
    }

    /// The revision that last changed field `name` (its creation if never written since).
    func revision(of name: String) -> UInt64 {
        // Most documents were never written since created: no name to hash then.
        revisions.isEmpty ? created : revisions[name] ?? created
    }
}

/// A collection as the store keeps it.
struct CollectionState: Sendable {
    let options: DocumentCollection.Options
    /// Ids in insertion order.
    var ids: [Int]
    var documents: DocumentTable
    var membershipRevision: UInt64
    /// How many documents have each field: a query may only name fields that exist.
    var fieldCounts: [String: Int]

    init(options: DocumentCollection.Options, image: CollectionImage) {
        self.options = options
        var table: [Int: StoredDocument] = [:]
        var ids: [Int] = []
        var counts: [String: Int] = [:]
        for document in image.documents {
            ids.append(document.id)
            table[document.id] = StoredDocument(document)
            for member in document.fields { counts[member.key, default: 0] += 1 }
        }
        self.ids = ids
        self.documents = DocumentTable(table)
        self.membershipRevision = image.membershipRevision
        self.fieldCounts = counts
    }

    /// The collection as storage keeps it, documents by id.
    func image(named name: String) -> CollectionImage {
        CollectionImage(
            name: name, membershipRevision: membershipRevision,
            documents: ids.sorted().compactMap { documents[$0]?.image })
    }

    /// Counts `old`'s fields out and `new`'s in.
    mutating func countFields(removing old: JSONObject?, adding new: JSONObject?) {
        for member in old ?? JSONObject() where new?[member.key] == nil {
            let count = fieldCounts[member.key, default: 1] - 1
            fieldCounts[member.key] = count > 0 ? count : nil
        }
        for member in new ?? JSONObject() where old?[member.key] == nil {
            fieldCounts[member.key, default: 0] += 1
        }
    }
}
