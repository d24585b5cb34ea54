import LookoutJSON

/// Works out what a ``Mutation`` does to a snapshot: the next snapshot and the keys
/// whose values changed. Pure: nothing is published until the ``Store`` does it.
struct WritePlanner {
    /// What a write will do.
    struct Plan {
        let id: Int
        let document: JSONObject?
        let changed: [StoreKey]
        /// The document's revision after the write, for its `ETag`; nil after a delete.
        var documentRevision: UInt64?
    }

    let snapshot: StoreSnapshot
    /// The snapshot after the planned write (the same one when nothing changes).
    private(set) var result: StoreSnapshot

    init(snapshot: StoreSnapshot) {
        self.snapshot = snapshot
        self.result = snapshot
    }

    mutating func plan(_ mutation: Mutation, expectedRevisions: Set<UInt64>?) throws(StoreError) -> Plan {
        let name = mutation.collection
        guard var state = snapshot.collections[name] else { throw .unknownCollection(name) }
        let revision = snapshot.revision + 1
        var changed: [StoreKey] = []
        var plan: Plan

        switch mutation {
        case .create(_, let body):
            let id: Int
            let range = DocumentCollection.ids
            if let given = body["id"] {
                guard let integer = given.intValue, range.contains(integer) else {
                    throw .invalidWrite("\"id\" must be an integer from \(range.lowerBound) to \(range.upperBound)")
                }
                guard state.documents[integer] == nil else { throw .idTaken(collection: name, id: integer) }
                id = integer
            } else {
                // Documents stored before ids were bounded may lie outside the range; the
                // next id follows the highest one inside it.
                let highest = state.ids.lazy.filter(range.contains).max() ?? 0
                guard highest < range.upperBound else { throw .idsExhausted(collection: name) }
                id = highest + 1
            }
            let fields = Self.withID(id, body)
            state.ids.append(id)
            state.documents[id] = StoredDocument(fields: fields, created: revision)
            state.countFields(removing: nil, adding: fields)
            state.membershipRevision = revision
            changed.append(.membership(collection: name))
            changed.append(.fieldNames(collection: name, id: id))
            changed += fields.keys.filter { $0 != "id" }.map { .field(collection: name, id: id, name: $0) }
            plan = Plan(id: id, document: fields, changed: changed)

        case .replace(_, let id, let body):
            let old = try existing(id, in: state, name: name, expectedRevisions: expectedRevisions)
            try checkID(body["id"], matches: id)
            let fields = Self.withID(id, body)
            changed = Self.update(&state, name, id, from: old, to: fields, at: revision)
            plan = Plan(id: id, document: fields, changed: changed)

        case .patch(_, let id, let patch):
            let old = try existing(id, in: state, name: name, expectedRevisions: expectedRevisions)
            try checkID(patch["id"], matches: id)
            let merged = MergePatch.apply(.object(patch), to: .object(old.fields)).objectValue ?? JSONObject()
            let fields = Self.withID(id, merged)
            changed = Self.update(&state, name, id, from: old, to: fields, at: revision)
            plan = Plan(id: id, document: fields, changed: changed)

        case .delete(_, let id):
            let old = try existing(id, in: state, name: name, expectedRevisions: expectedRevisions)
            state.ids.removeAll { $0 == id }
            state.documents[id] = nil
            state.countFields(removing: old.fields, adding: nil)
            state.membershipRevision = revision
            changed.append(.membership(collection: name))
            changed.append(.fieldNames(collection: name, id: id))
            changed += old.fields.keys.filter { $0 != "id" }.map { .field(collection: name, id: id, name: $0) }
            plan = Plan(id: id, document: nil, changed: changed)
        }

        plan.documentRevision = state.documents[plan.id]?.revision
        if !plan.changed.isEmpty {
            var collections = snapshot.collections
            collections[name] = state
            result = StoreSnapshot(epoch: snapshot.epoch, revision: revision, collections: collections)
        }
        return plan
    }

    private func existing(
        _ id: Int,
        in state: CollectionState,
        name: String,
        expectedRevisions: Set<UInt64>?
    ) throws(StoreError) -> StoredDocument {
        guard let document = state.documents[id] else { throw .documentNotFound(collection: name, id: id) }
        if let expectedRevisions, !expectedRevisions.contains(document.revision) {
            throw .revisionMismatch(current: document.revision)
        }
        return document
    }

    private func checkID(_ given: JSONValue?, matches id: Int) throws(StoreError) {
        if let given, given.intValue != id {
            throw .invalidWrite("\"id\" cannot change: it is \(id)")
        }
    }

    /// The document's fields with `id` first.
    private static func withID(_ id: Int, _ body: JSONObject) -> JSONObject {
        // A patched document already starts with its id (keys are unique): kept as it is,
        // with no copy of its members.
        if let first = body.members.first, first.key == "id", first.value == .int(id) { return body }
        return JSONObject([("id", .int(id))] + body.members.filter { $0.key != "id" }.map { ($0.key, $0.value) })
    }

    /// Names of fields added, removed, or given a value that is not equivalent.
    private static func changedFields(from old: JSONObject, to new: JSONObject) -> [String] {
        var names: [String] = []
        for member in new where member.key != "id" {
            if let previous = old[member.key], previous.isEquivalent(to: member.value) { continue }
            names.append(member.key)
        }
        for member in old where member.key != "id" && new[member.key] == nil {
            names.append(member.key)
        }
        return names
    }

    /// Stores `fields` as the new content of document `id` and returns the keys that
    /// changed: the fields whose values differ and, when a field that is not ignored was
    /// added or removed, the document's field names.
    private static func update(
        _ state: inout CollectionState,
        _ name: String,
        _ id: Int,
        from old: StoredDocument,
        to fields: JSONObject,
        at revision: UInt64
    ) -> [StoreKey] {
        let names = changedFields(from: old.fields, to: fields)
        guard !names.isEmpty else { return [] }
        var document = old
        document.fields = fields
        var changed: [StoreKey] = []
        var reshaped = false
        for field in names {
            document.revisions[field] = revision
            changed.append(.field(collection: name, id: id, name: field))
            if (old.fields[field] == nil) != (fields[field] == nil), !state.options.ignored.contains(field) {
                reshaped = true
            }
        }
        if reshaped {
            document.fieldNamesRevision = revision
            changed.append(.fieldNames(collection: name, id: id))
        }
        state.countFields(removing: old.fields, adding: fields)
        state.documents[id] = document
        return changed
    }
}
