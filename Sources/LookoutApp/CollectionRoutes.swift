import LookoutAuth
import LookoutFeeds
import LookoutHTTP
import LookoutJSON
import LookoutOpenAPI
import LookoutStore
import LookoutTrace

/// Any declared collection, json-server style: `GET /v1/{collection}` and
/// `GET /v1/{collection}/{id}` (both views, so both can long-poll, with `fields=a,b` to
/// read and wait on fewer fields), and writes: `POST` (201 + `Location`), `PUT`,
/// `PATCH` (JSON merge patch) and `DELETE`, with `If-Match` and an editor's token.
///
/// Reads see what their reader may (``ReadAccess``) of each collection they touch, the
/// expanded ones included: a token holder every field, anyone else each collection's
/// public fields. Registered after the seed app's routes, whose literal paths win.
///
/// Writes keep to each collection's shape as inferred at start (``DocumentShape``, what
/// `GET /openapi.json` describes): a value of another type for a described field is 400
/// `invalid_body`; fields the shape does not know may be added with any type.
struct CollectionRoutes: Sendable {
    let store: Store
    let tokens: TokenService
    /// Each collection's document shape, by name.
    let shapes: [String: DocumentShape]
    /// Rendered lists, by grant, collection and query.
    let rendered = RenderCache<ViewCacheKey>()
    /// Rendered documents, by grant, collection, id and query.
    let renderedDocuments = RenderCache<ViewCacheKey>()

    private var access: ReadAccess { ReadAccess(tokens: tokens) }

    func register(in router: inout Router) {
        router.add("GET", "/v1/{collection}", .view(list))
        router.add("POST", "/v1/{collection}", .write(create))
        router.add("GET", "/v1/{collection}/{id}", .view(document))
        router.add("PUT", "/v1/{collection}/{id}", .write(replace))
        router.add("PATCH", "/v1/{collection}/{id}", .write(patch))
        router.add("DELETE", "/v1/{collection}/{id}", .write(delete))
    }

    /// `GET /v1/{collection}` with filters, search, sort, paging and projection
    /// (``ListQuery``), answered with `X-Total-Count` and, when paged, `Link`.
    func list(_ context: RequestContext, _ snapshot: StoreSnapshot) throws -> RenderedView {
        let collection = context.pathParameters["collection"] ?? ""
        guard let options = snapshot.options(of: collection) else { throw APIError.notFound }
        // Checked at every render, a held poll's too: its token may expire while it waits.
        let grant = try access.grant(of: context, reading: options, in: snapshot)
        // Every client asking the same query with the same grant at the same revision
        // shares one rendering; the long-poll's own parameters do not change what is rendered.
        let key = ViewCacheKey(grant: grant, view: context.viewKey)
        return try rendered.view(for: key, at: snapshot) { snapshot in
            var view = try renderList(collection, context.query, grant, snapshot)
            view.sharedAs = key
            return view
        }
    }

    private func renderList(
        _ collection: String,
        _ parameters: QueryParameters,
        _ grant: ReadGrant,
        _ snapshot: StoreSnapshot
    ) throws -> RenderedView {
        guard
            let query = try ListQuery(
                collection: collection, parameters: parameters.pairs, in: snapshot, scope: grant.scope)
        else { throw APIError.notFound }
        var reads = ReadSet()
        let result = query.evaluate(in: snapshot, reads: &reads)
        let items = JSONValue.array(result.documents.map(JSONValue.object))
        var body = items
        if let key = query.envelope, case .page(let page, _) = result.window {
            body = .object(
                JSONObject([("page", .int(page.number)), ("has_next_page", .bool(page.hasNextPage)), (key, items)]))
        }
        var headers = [("X-Total-Count", String(result.total))]
        let links = PageLinks(path: "/v1/\(collection)", keeping: parameters.encoded(excluding: ListQuery.linkOmitted))
        if let link = links.header(for: result.window) {
            guard link.utf8.count <= PageLinks.maxHeaderBytes else {
                throw APIError.queryTooLong(limit: PageLinks.maxHeaderBytes)
            }
            headers.append(("Link", link))
        }
        return RenderedView(
            body: JSONWriter.encode(body), headers: headers, caching: grant.cacheHeaders, reads: reads,
            revision: snapshot.revision)
    }

    /// `GET /v1/{collection}/{id}` with `fields=` and `expand=`.
    func document(_ context: RequestContext, _ snapshot: StoreSnapshot) throws -> RenderedView {
        let (collection, id) = try target(context)
        guard let options = snapshot.options(of: collection) else { throw APIError.notFound }
        let grant = try access.grant(of: context, reading: options, in: snapshot)
        // Shared like lists: ten thousand polls woken on one document render it once.
        let key = ViewCacheKey(grant: grant, view: context.viewKey)
        return try renderedDocuments.view(for: key, at: snapshot) { snapshot in
            let projection = try Projection(
                fields: context.query["fields"], expand: context.query["expand"], collection: collection,
                options: options, scope: grant.scope, in: snapshot)
            var reads = ReadSet()
            guard let document = projection.read(id, in: collection, from: snapshot, reads: &reads) else {
                throw APIError.notFound
            }
            return RenderedView(
                body: JSONWriter.encode(.object(document)), caching: grant.cacheHeaders, reads: reads,
                revision: snapshot.revision, sharedAs: key)
        }
    }

    func create(_ context: RequestContext) throws -> PreparedWrite {
        let authorized = try authorizeWrite(context)
        let collection = context.pathParameters["collection"] ?? ""
        let document = try objectBody(context, collection)
        return prepared(.create(collection: collection, document: document), context, authorized) {
            commit in
            var response = documentResponse(commit, status: 201, context: context)
            response.headers.add("Location", "/v1/\(collection)/\(commit.id)")
            return response
        }
    }

    func replace(_ context: RequestContext) throws -> PreparedWrite {
        let authorized = try authorizeWrite(context)
        let (collection, id) = try target(context)
        return prepared(
            .replace(collection: collection, id: id, document: try objectBody(context, collection)), context, authorized
        ) { documentResponse($0, status: 200, context: context) }
    }

    func patch(_ context: RequestContext) throws -> PreparedWrite {
        let authorized = try authorizeWrite(context)
        let (collection, id) = try target(context)
        let patch = try objectBody(context, collection, patch: true)
        return prepared(.patch(collection: collection, id: id, patch: patch), context, authorized) {
            documentResponse($0, status: 200, context: context)
        }
    }

    func delete(_ context: RequestContext) throws -> PreparedWrite {
        let authorized = try authorizeWrite(context)
        let (collection, id) = try target(context)
        return prepared(.delete(collection: collection, id: id), context, authorized) { _ in
            var response = HTTPResponse(status: 204)
            response.headers.addRequestID(context.echoedRequestID)
            return response
        }
    }

    /// Writes need a valid token whose scope allows writing. The first step of each write.
    /// - Returns: when the token was verified, for the wake trace (0 unless tracing).
    private func authorizeWrite(_ context: RequestContext) throws -> UInt64 {
        let token = try BearerToken.parse(context.request.headers["Authorization"])
        let claims = try tokens.verify(token)
        guard claims.role == .editor || claims.role == .admin else {
            throw APIError.forbidden("Writing needs an editor's or an admin's token.")
        }
        return WakeTrace.isEnabled ? WakeTrace.now() : 0
    }

    /// A write with the request's `If-Match` (``IfMatch``: `*` passes for any existing
    /// document, a weak or foreign tag never matches), answered by `answer` once applied.
    private func prepared(
        _ mutation: Mutation,
        _ context: RequestContext,
        _ authorizedAt: UInt64,
        answer: @escaping @Sendable (Commit) -> HTTPResponse
    ) -> PreparedWrite {
        let condition = IfMatch(header: context.request.headers["If-Match"], epoch: store.epoch)
        // A StoreError is mapped to its status by the responder.
        return PreparedWrite(
            write: Store.Write(mutation, expectedRevisions: condition?.expectedRevisions),
            answer: { outcome in answer(try outcome.get()) },
            receivedAt: context.request.receivedAt, authorizedAt: authorizedAt)
    }

    /// The document after a write, with its version as `ETag` for the next `If-Match`.
    private func documentResponse(_ commit: Commit, status: Int, context: RequestContext) -> HTTPResponse {
        let body = JSONWriter.encode(.object(commit.document ?? JSONObject()))
        guard let revision = commit.documentRevision else {
            return .json(body: body, status: status, requestID: context.echoedRequestID)
        }
        return .json(
            body: body, tag: EntityTag(epoch: store.epoch, revision: revision), status: status,
            requestID: context.echoedRequestID)
    }

    private func target(_ context: RequestContext) throws -> (collection: String, id: Int) {
        guard let collection = context.pathParameters["collection"], let text = context.pathParameters["id"],
            let id = Int(text)
        else { throw APIError.notFound }
        return (collection, id)
    }

    /// The body as a JSON object that keeps to `collection`'s shape; `application/merge-patch+json`
    /// is accepted too.
    /// - Parameter patch: a merge patch, whose `null` removes a field whatever its type.
    private func objectBody(_ context: RequestContext, _ collection: String, patch: Bool = false) throws -> JSONObject {
        guard case .object(let object) = try context.jsonBody() else {
            throw APIError.badRequest("invalid_body", "The body must be a JSON object.")
        }
        if let violation = shapes[collection]?.violation(in: object, removing: patch) {
            throw APIError.badRequest("invalid_body", violation)
        }
        return object
    }
}
