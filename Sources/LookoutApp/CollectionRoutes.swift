import LookoutAuth
import LookoutFeeds
import LookoutHTTP
import LookoutJSON
import LookoutStore

/// Any declared collection, json-server style: `GET /v1/{collection}` and
/// `GET /v1/{collection}/{id}` (both views, so both can long-poll, with `fields=a,b` to
/// read and wait on fewer fields), and writes: `POST` (201 + `Location`), `PUT`,
/// `PATCH` (JSON merge patch) and `DELETE`, with `If-Match` and an editor's token.
///
/// Registered after the seed app's routes, whose literal paths win.
struct CollectionRoutes: Sendable {
    let store: Store
    let tokens: TokenService
    let feeds = SeedFeeds()
    /// Rendered plain lists (no `fields` or `expand`), by collection.
    let rendered = RenderCache<String>()

    func register(in router: inout Router) {
        router.add("GET", "/v1/{collection}", .view(list))
        router.add("POST", "/v1/{collection}", .deferred(create))
        router.add("GET", "/v1/{collection}/{id}", .view(document))
        router.add("PUT", "/v1/{collection}/{id}", .deferred(replace))
        router.add("PATCH", "/v1/{collection}/{id}", .deferred(patch))
        router.add("DELETE", "/v1/{collection}/{id}", .deferred(delete))
    }

    func list(_ context: RequestContext, _ snapshot: StoreSnapshot) throws -> RenderedView {
        let collection = context.pathParameters["collection"] ?? ""
        if context.query["fields"] == nil, context.query["expand"] == nil {
            // The common case, the seed app's lists among it: one rendering per revision.
            let view = rendered.view(for: collection, at: snapshot) { reads in
                feeds.list(collection, in: snapshot, reads: &reads).map { (JSONWriter.encode($0), keep: true) }
            }
            guard let view else { throw APIError.notFound }
            return view
        }
        var reads = ReadSet()
        guard let ids = snapshot.orderedIDs(in: collection, reads: &reads) else { throw APIError.notFound }
        let expand = try expansions(context, collection, snapshot)
        let fields = projection(context, including: expand)
        let documents = ids.compactMap { id in
            snapshot.document(id, in: collection, fields: fields, reads: &reads).map {
                snapshot.expanding($0, of: collection, expand, reads: &reads)
            }
        }
        return RenderedView(
            body: JSONWriter.encode(.array(documents.map(JSONValue.object))), reads: reads, revision: snapshot.revision)
    }

    func document(_ context: RequestContext, _ snapshot: StoreSnapshot) throws -> RenderedView {
        let (collection, id) = try target(context)
        var reads = ReadSet()
        let expand = try expansions(context, collection, snapshot)
        let fields = projection(context, including: expand)
        guard let document = snapshot.document(id, in: collection, fields: fields, reads: &reads) else {
            throw APIError.notFound
        }
        let expanded = snapshot.expanding(document, of: collection, expand, reads: &reads)
        return RenderedView(body: JSONWriter.encode(.object(expanded)), reads: reads, revision: snapshot.revision)
    }

    func create(_ context: RequestContext) async throws -> HTTPResponse {
        try await authorizeWrite(context)
        let collection = context.pathParameters["collection"] ?? ""
        let commit = try write(.create(collection: collection, document: try objectBody(context)), context)
        var response = documentResponse(commit, status: 201, context: context)
        response.headers.add("Location", "/v1/\(collection)/\(commit.id)")
        return response
    }

    func replace(_ context: RequestContext) async throws -> HTTPResponse {
        try await authorizeWrite(context)
        let (collection, id) = try target(context)
        let commit = try write(.replace(collection: collection, id: id, document: try objectBody(context)), context)
        return documentResponse(commit, status: 200, context: context)
    }

    func patch(_ context: RequestContext) async throws -> HTTPResponse {
        try await authorizeWrite(context)
        let (collection, id) = try target(context)
        let commit = try write(.patch(collection: collection, id: id, patch: try objectBody(context)), context)
        return documentResponse(commit, status: 200, context: context)
    }

    func delete(_ context: RequestContext) async throws -> HTTPResponse {
        try await authorizeWrite(context)
        let (collection, id) = try target(context)
        _ = try write(.delete(collection: collection, id: id), context)
        return HTTPResponse(status: 204, headers: HTTPHeaders([("X-Request-Id", context.requestID)]))
    }

    /// Writes need a valid token whose scope allows writing.
    private func authorizeWrite(_ context: RequestContext) async throws {
        let token = try BearerToken.parse(context.request.headers["Authorization"])
        let claims = try await tokens.verify(token)
        guard claims.scope == User.Role.editor.rawValue || claims.scope == User.Role.admin.rawValue else {
            throw APIError.forbidden("Writing needs an editor's or an admin's token.")
        }
    }

    /// Applies a write with the request's `If-Match`, mapping store errors to HTTP.
    private func write(_ mutation: Mutation, _ context: RequestContext) throws -> Commit {
        var expected: UInt64?
        if let header = context.request.headers["If-Match"] {
            guard let tag = EntityTag.first(in: header), tag.epoch == store.epoch
            else { throw APIError.preconditionFailed("If-Match does not name a current version of this document.") }
            expected = tag.revision
        }
        do {
            // The long-polls this write wakes are answered first and resumed together.
            return try SuspendedRequest.resumingTogether { try store.apply(mutation, expectedRevision: expected) }
        } catch let error as StoreError {
            throw APIError(error)
        }
    }

    /// The document after a write, with its version as `ETag` for the next `If-Match`.
    private func documentResponse(_ commit: Commit, status: Int, context: RequestContext) -> HTTPResponse {
        let body = JSONWriter.encode(.object(commit.document ?? JSONObject()))
        guard let revision = commit.documentRevision else {
            return .json(body: body, status: status, requestID: context.requestID)
        }
        return .json(
            body: body, tag: EntityTag(epoch: store.epoch, revision: revision), status: status,
            requestID: context.requestID)
    }

    private func target(_ context: RequestContext) throws -> (collection: String, id: Int) {
        guard let collection = context.pathParameters["collection"], let text = context.pathParameters["id"],
            let id = Int(text)
        else { throw APIError.notFound }
        return (collection, id)
    }

    /// `expand=a,b`: reference fields to resolve; each must be declared in the data file.
    private func expansions(_ context: RequestContext, _ collection: String, _ snapshot: StoreSnapshot) throws
        -> [String]
    {
        guard let text = context.query["expand"] else { return [] }
        let references = snapshot.options(of: collection)?.references ?? [:]
        return try text.split(separator: ",").map { part in
            let field = String(part.trimmingSpaces())
            guard references[field] != nil else {
                throw APIError.invalidParameter(
                    "expand",
                    "'\(field.prefix(64))' is not a reference of \(collection) (declared: \(references.keys.sorted().joined(separator: ", ")))."
                )
            }
            return field
        }
    }

    /// `fields=a,b`: the fields to read and return (`id` always comes along, and so do
    /// the references being expanded).
    private func projection(_ context: RequestContext, including expand: [String]) -> [String]? {
        guard let text = context.query["fields"] else { return nil }
        let fields = text.split(separator: ",").map { String($0.trimmingSpaces()) }
        return fields + expand.filter { !fields.contains($0) }
    }

    /// The body as a JSON object; `application/merge-patch+json` is accepted too.
    private func objectBody(_ context: RequestContext) throws -> JSONObject {
        guard case .object(let object) = try context.jsonBody() else {
            throw APIError.badRequest("invalid_body", "The body must be a JSON object.")
        }
        return object
    }
}
