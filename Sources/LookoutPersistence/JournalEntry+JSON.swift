import LookoutJSON
import LookoutStore

/// Journal entries and documents as JSON text, the way PostgreSQL's changes table keeps
/// them: field values exactly as written (key order and number spelling kept), with the
/// revisions that a cursor depends on.
extension JournalEntry {
    /// `{"revision":…,"memberships":[…],"documents":[{"collection":…,"id":…,"document":…|null}]}`.
    var json: String {
        let documents = documents.map { change -> JSONValue in
            .object(
                JSONObject([
                    ("collection", .string(change.collection)), ("id", .int(change.id)),
                    ("document", change.document.map { .object($0.json) } ?? .null),
                ]))
        }
        let value = JSONValue.object(
            JSONObject([
                ("revision", .int(Int(revision))), ("memberships", .array(memberships.map(JSONValue.string))),
                ("documents", .array(documents)),
            ]))
        return String(decoding: JSONWriter.encode(value), as: UTF8.self)
    }

    /// The entry stored as `text`.
    /// - Throws: ``PersistenceError/corrupt(_:)`` when it is not one.
    init(json text: String) throws(PersistenceError) {
        guard case .object(let object)? = try? JSONParser.parse(text),
            let revision = object["revision"]?.intValue, revision > 0,
            let memberships = object["memberships"]?.arrayValue?.compactMap(\.stringValue),
            let documents = object["documents"]?.arrayValue
        else { throw .corrupt("a change is not a journal entry: \(text.prefix(80))") }
        var changes: [DocumentChange] = []
        for value in documents {
            guard let change = value.objectValue, let collection = change["collection"]?.stringValue,
                let id = change["id"]?.intValue
            else { throw .corrupt("change \(revision) has a bad document") }
            let document: DocumentImage? =
                switch change["document"] {
                case .object(let fields)?: try DocumentImage(json: fields)
                default: nil
                }
            changes.append(DocumentChange(collection: collection, id: id, document: document))
        }
        self.init(revision: UInt64(revision), memberships: memberships, documents: changes)
    }
}

extension DocumentImage {
    /// `{"fields":{…},"revisions":{…},"created":…,"fieldNamesRevision":…}`.
    var json: JSONObject {
        JSONObject([
            ("fields", .object(fields)), ("revisions", .object(Self.json(revisions))),
            ("created", .int(Int(created))), ("fieldNamesRevision", .int(Int(fieldNamesRevision))),
        ])
    }

    init(json object: JSONObject) throws(PersistenceError) {
        guard let fields = object["fields"]?.objectValue, let revisions = object["revisions"]?.objectValue,
            let created = object["created"]?.intValue, let fieldNames = object["fieldNamesRevision"]?.intValue
        else { throw .corrupt("a stored document lacks its fields or revisions") }
        self.init(
            fields: fields, revisions: try Self.revisions(revisions), created: UInt64(created),
            fieldNamesRevision: UInt64(fieldNames))
    }

    /// Revisions by field name as a JSON object, in name order.
    static func json(_ revisions: [String: UInt64]) -> JSONObject {
        JSONObject(revisions.sorted { $0.key < $1.key }.map { ($0.key, .int(Int($0.value))) })
    }

    /// Revisions by field name from their JSON object.
    static func revisions(_ object: JSONObject) throws(PersistenceError) -> [String: UInt64] {
        var byField: [String: UInt64] = [:]
        for member in object {
            guard case .int(let value) = member.value, value >= 0 else {
                throw .corrupt("a stored document has a bad revision for \(member.key)")
            }
            byField[member.key] = UInt64(value)
        }
        return byField
    }
}
