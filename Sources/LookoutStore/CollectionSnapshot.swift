import LookoutJSON

/// One collection of a ``StoreSnapshot``, looked up once by name.
///
/// A list query reads a field or two of every document of its collection: finding the
/// collection by name for each of those reads (hashing the name, copying its state) cost
/// more than the read itself. Reads record what they depend on as the snapshot's do.
public struct CollectionSnapshot: Sendable {
    /// The collection's name.
    public let name: String
    let state: CollectionState

    init(name: String, state: CollectionState) {
        self.name = name
        self.state = state
    }

    /// The declared options.
    public var options: DocumentCollection.Options { state.options }

    /// The ids in insertion order; records the membership.
    public func ids(reads: inout ReadSet) -> [Int] {
        reads.record(.membership(collection: name), revision: state.membershipRevision)
        return state.ids
    }

    /// The value at `path` in document `id`; records the path's top-level field (its
    /// appearance is a change too, so a missing field is recorded as well).
    /// - Precondition: the document exists (its id came from this snapshot).
    public func value(at path: FieldPath, of id: Int, reads: inout ReadSet) -> JSONValue? {
        let (value, revision) = state.documents.field(path.field, of: id)!
        reads.record(.field(collection: name, id: id, name: path.field), revision: revision)
        return path.value(below: value)
    }

    /// The names of document `id`'s fields, `id` first; records them as a set, so a field
    /// added or removed later is a change.
    /// - Precondition: the document exists (its id came from this snapshot).
    public func fieldNames(of id: Int, reads: inout ReadSet) -> [String] {
        let document = state.documents[id]!
        reads.record(.fieldNames(collection: name, id: id), revision: document.fieldNamesRevision)
        return document.fields.keys
    }

    /// `ids` with their values for `keys`, in the order given; records each document's
    /// sort fields, since an order by them depends on them.
    public func rows(_ ids: [Int], by keys: [SortKey], reads: inout ReadSet) -> [(values: [JSONValue?], id: Int)] {
        guard !keys.isEmpty else { return ids.map { (values: [], id: $0) } }
        return ids.map { id in
            (values: keys.map { value(at: $0.path, of: id, reads: &reads) }, id: id)
        }
    }
}

extension StoreSnapshot {
    /// The collection `name`, for many reads of its documents; nil when there is none.
    public func collection(_ name: String) -> CollectionSnapshot? {
        collections[name].map { CollectionSnapshot(name: name, state: $0) }
    }
}
