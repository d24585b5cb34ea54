import LookoutFeeds
import LookoutHTTP
import LookoutJSON
import LookoutStore

/// The multi-read watch: one long-poll over any fields across documents.
///
/// `GET /v1/watch?read=galleries/3.title,pickup_feeds/1.rating`, or `POST /v1/watch` with
/// `{"read": [...]}` for long lists; `wait`, `since` and `If-None-Match` as on every view.
/// Each read is `collection/id.field` (one field) or `collection/id` (the whole
/// document). The answer is `{"values": {read: value or null}, "cursor": "<epoch>-<rev>"}`.
///
/// Each read follows the rules of a read of its collection (``ReadAccess``): without a
/// token, only public fields, and a whole document is its public fields.
struct WatchRoutes: Sendable {
    /// Most reads in one watch.
    static let maxReads = 1_000

    let access: ReadAccess

    func register(in router: inout Router) {
        router.add("GET", "/v1/watch", .view(watch))
        router.add("POST", "/v1/watch", .view(watch))
    }

    func watch(_ context: RequestContext, _ snapshot: StoreSnapshot) throws -> RenderedView {
        let names = try readNames(context)
        var reads = ReadSet()
        var values = JSONObject()
        // The token is verified once per render, and only if a read needs it.
        var reader: Reader?
        // The answer's grant: for everyone until a read depends on the token.
        var answer = ReadGrant.everyone
        for name in names {
            let target = try Self.parse(name)
            guard let options = snapshot.options(of: target.collection) else {
                throw APIError.invalidParameter("read", "no collection '\(target.collection)' in '\(name.prefix(64))'.")
            }
            // Each read is a read of its own collection: one that is public as a whole is
            // the same for everyone.
            var grant = ReadGrant.everyone
            if options.publicFields != .all {
                let current = reader ?? access.reader(of: context)
                reader = current
                grant = try current.grant(reading: options)
                answer = grant
            }
            let fields = try Self.fields(read: name, target, options, grant.scope)
            let document = snapshot.document(target.id, in: target.collection, fields: fields, reads: &reads)
            if let field = target.field {
                values[name] = document?[field] ?? .null
            } else {
                values[name] = document.map(JSONValue.object) ?? .null
            }
        }
        let body: JSONValue = [
            "values": .object(values),
            "cursor": .string("\(snapshot.epoch)-\(reads.revision)"),
        ]
        return RenderedView(
            body: JSONWriter.encode(body), caching: answer.cacheHeaders, reads: reads,
            revision: snapshot.revision)
    }

    /// The fields a read reads in `scope`: its one field, or nil for a whole document in
    /// full; in ``ReadScope/publicFields`` the field must be public, and a whole document
    /// is its public fields.
    private static func fields(
        read name: String,
        _ target: (collection: String, id: Int, field: String?),
        _ options: DocumentCollection.Options,
        _ scope: ReadScope
    ) throws(QueryError) -> [String]? {
        let all = try scope.defaultFields(of: target.collection, options)
        guard let field = target.field else { return all }
        guard scope.visible(options).contains(field) else {
            throw .tokenRequired("read", field: field, of: target.collection)
        }
        return [field]
    }

    private func readNames(_ context: RequestContext) throws -> [String] {
        let names: [String]
        if context.request.method == "POST" {
            guard let list = try context.jsonBody()["read"]?.arrayValue else {
                throw APIError.badRequest(
                    "invalid_body", "The body must be {\"read\": [\"collection/id.field\", ...]}.")
            }
            names = try list.map { item in
                guard let name = item.stringValue else {
                    throw APIError.badRequest(
                        "invalid_body", "Each read must be a string such as \"galleries/3.title\".")
                }
                return name
            }
        } else {
            guard let text = context.query["read"], !text.isEmpty else {
                throw APIError.invalidParameter("read", "required, e.g. read=galleries/3.title,pickup_feeds/1.rating.")
            }
            names = text.split(separator: ",").map { String($0.trimmingSpaces()) }
        }
        guard !names.isEmpty, names.count <= Self.maxReads else {
            throw APIError.invalidParameter("read", "give between 1 and \(Self.maxReads) reads.")
        }
        return names
    }

    /// `collection/id.field` or `collection/id`.
    static func parse(_ name: String) throws -> (collection: String, id: Int, field: String?) {
        let parts = name.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else {
            throw APIError.invalidParameter("read", "'\(name.prefix(64))' is not collection/id.field.")
        }
        let rest = parts[1].split(separator: ".", maxSplits: 1)
        guard let id = Int(rest[0]) else {
            throw APIError.invalidParameter("read", "'\(name.prefix(64))' has no integer id.")
        }
        return (String(parts[0]), id, rest.count == 2 ? String(rest[1]) : nil)
    }
}
