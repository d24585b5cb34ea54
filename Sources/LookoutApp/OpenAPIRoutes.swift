import LookoutDataFile
import LookoutHTTP
import LookoutOpenAPI
import LookoutStore

/// `GET /openapi.json`: the OpenAPI 3.1 description of this server (``APIDescription``),
/// built once at start from the collections it serves and their documents' shapes.
/// Public, like `/healthz`: it tells nothing a client could not learn by reading.
struct OpenAPIRoutes: Sendable {
    /// The encoded document.
    let document: [UInt8]

    func register(in router: inout Router) {
        router.add("GET", "/openapi.json", .immediate(serve))
    }

    func serve(_ context: RequestContext) -> HTTPResponse {
        var response = HTTPResponse.json(body: document, requestID: context.echoedRequestID)
        response.headers.add("Cache-Control", "no-cache")
        return response
    }
}

extension APIDescription {
    /// The description of what `store` serves now: each collection in name order, with
    /// the shape of the documents it holds.
    init(store: Store, maxWaitSeconds: Double) {
        let snapshot = store.snapshot()
        self.init(
            collections: store.image().collections.map { collection in
                Collection(
                    name: collection.name, options: snapshot.options(of: collection.name) ?? .init(),
                    shape: DocumentShape(documents: collection.documents.map(\.fields)))
            },
            maxWaitSeconds: maxWaitSeconds)
    }

    /// The description of a data file's collections, as a server started on it would
    /// serve them (`lookout openapi`).
    init(dataFile: DataFile, maxWaitSeconds: Double) {
        self.init(
            collections: dataFile.collections.sorted { $0.name < $1.name }.map { collection in
                Collection(
                    name: collection.name, options: collection.options,
                    shape: DocumentShape(documents: collection.documents))
            },
            maxWaitSeconds: maxWaitSeconds)
    }
}

/// What `lookout openapi` prints.
public enum OpenAPICommand {
    /// The OpenAPI document a server started with `configuration` on an empty data
    /// directory serves at `/openapi.json`: its data file's collections.
    public static func document(_ configuration: AppConfiguration) throws -> [UInt8] {
        let data = try DataFile.load(path: configuration.dataFile)
        return try APIDescription(dataFile: data, maxWaitSeconds: configuration.maxWaitSeconds).json()
    }
}
