import LookoutJSON

/// The store at one revision: immutable, so a render reads a consistent state without
/// holding a lock. Every read records what it depended on in a ``ReadSet``.
public final class StoreSnapshot: Sendable {
    /// Identifies the store's history; cursors from another epoch are never compared.
    public let epoch: String
    /// The revision of the last committed write.
    public let revision: UInt64
    let collections: [String: CollectionState]

    init(epoch: String, revision: UInt64, collections: [String: CollectionState]) {
        self.epoch = epoch
        self.revision = revision
        self.collections = collections
    }

    /// Whether `collection` exists (not a tracked read: collections are declared, not written).
    public func hasCollection(_ collection: String) -> Bool {
        collections[collection] != nil
    }

    /// The declared options of `collection`.
    public func options(of collection: String) -> DocumentCollection.Options? {
        collections[collection]?.options
    }

    /// Whether some document of `collection` has the top-level field `name` (`id` always
    /// exists). Not a tracked read: it decides whether a query is valid, not its answer.
    public func hasField(_ name: String, in collection: String) -> Bool {
        name == "id" || collections[collection]?.fieldCounts[name] != nil
    }

    /// The ids of `collection` in insertion order; records the membership.
    public func ids(in collection: String, reads: inout ReadSet) -> [Int]? {
        guard let state = collections[collection] else { return nil }
        reads.record(.membership(collection: collection), revision: state.membershipRevision)
        return state.ids
    }

    /// The value at `path` in document `id`; records the path's top-level field (its
    /// appearance is a change too, so a missing field is recorded as well).
    /// - Precondition: the document exists (its id came from this snapshot).
    public func value(at path: FieldPath, of id: Int, in collection: String, reads: inout ReadSet) -> JSONValue? {
        self.collection(collection)!.value(at: path, of: id, reads: &reads)
    }

    /// The names of document `id`'s fields, `id` first; records them as a set, so a field
    /// added or removed later is a change.
    /// - Precondition: the document exists (its id came from this snapshot).
    public func fieldNames(of id: Int, in collection: String, reads: inout ReadSet) -> [String] {
        self.collection(collection)!.fieldNames(of: id, reads: &reads)
    }

    /// `ids` of `collection` ordered by `keys`, then by id, each with its sort values;
    /// records each document's sort fields, since the order depends on them.
    public func sortedRows(_ ids: [Int], in collection: String, by keys: [SortKey], reads: inout ReadSet)
        -> [(values: [JSONValue?], id: Int)]
    {
        guard !keys.isEmpty else { return ids.sorted().map { (values: [], id: $0) } }
        let rows = self.collection(collection)!.rows(ids, by: keys, reads: &reads)
        return rows.sorted { SortKey.compare($0, $1, by: keys) == .orderedAscending }
    }

    /// The ids of `collection` in its declared order: by its sort keys, then by id.
    /// Records the membership and every document's sort fields.
    public func orderedIDs(in collection: String, reads: inout ReadSet) -> [Int]? {
        guard let sort = collections[collection]?.options.sort, let ids = ids(in: collection, reads: &reads) else {
            return nil
        }
        return sortedRows(ids, in: collection, by: sort, reads: &reads).map(\.id)
    }

    /// The document `id` of `collection`, or only its `fields` (and `id`) when given.
    ///
    /// Records each field returned, so a projection waits on fewer fields. A missing
    /// document records the membership: it waits for the document to appear.
    public func document(_ id: Int, in collection: String, fields: [String]? = nil, reads: inout ReadSet) -> JSONObject?
    {
        guard let state = collections[collection] else { return nil }
        guard let document = state.documents[id] else {
            reads.record(.membership(collection: collection), revision: state.membershipRevision)
            return nil
        }
        guard let fields else {
            reads.record(.fieldNames(collection: collection, id: id), revision: document.fieldNamesRevision)
            for member in document.fields where member.key != "id" {
                reads.record(
                    .field(collection: collection, id: id, name: member.key),
                    revision: document.revision(of: member.key))
            }
            return document.fields
        }
        var projected = JSONObject()
        projected["id"] = .int(id)
        for name in fields where name != "id" {
            // A field that does not exist yet is read too: its appearance is a change.
            reads.record(.field(collection: collection, id: id, name: name), revision: document.revision(of: name))
            if let value = document.fields[name] {
                projected[name] = value
            }
        }
        return projected
    }

    /// `document` with the references named in `expand` resolved alongside them:
    /// `category_id` adds `category` (a field without the `_id` suffix adds `<field>_expanded`)
    /// holding the referenced document, or null when it does not exist.
    ///
    /// Reads through a reference are recorded on the referenced document, like a nested
    /// observable: a change to it wakes whoever expanded it.
    /// - Parameter fields: per referenced collection, the only fields (and `id`) to read
    ///   and return of its documents; a collection not listed gives whole documents.
    public func expanding(
        _ document: JSONObject,
        of collection: String,
        _ expand: [String],
        fields: [String: [String]] = [:],
        reads: inout ReadSet
    ) -> JSONObject {
        guard let references = collections[collection]?.options.references else { return document }
        var result = document
        for field in expand {
            guard let target = references[field] else { continue }
            let name = field.hasSuffix("_id") ? String(field.dropLast(3)) : field + "_expanded"
            if let id = document[field]?.intValue,
                let referenced = self.document(id, in: target, fields: fields[target], reads: &reads)
            {
                result[name] = .object(referenced)
            } else {
                if document[field]?.intValue != nil {
                    _ = count(of: target, reads: &reads)  // wait for it to appear
                }
                result[name] = .null
            }
        }
        return result
    }

    /// The revision of a document as a whole, for `ETag`/`If-Match` on it.
    public func documentRevision(_ id: Int, in collection: String) -> UInt64? {
        collections[collection]?.documents[id]?.revision
    }

    /// The number of documents in `collection`; records the membership.
    public func count(of collection: String, reads: inout ReadSet) -> Int? {
        guard let state = collections[collection] else { return nil }
        reads.record(.membership(collection: collection), revision: state.membershipRevision)
        return state.ids.count
    }
}
