import LookoutHTTP
import LookoutJSON

/// One request on its way through a route: the request, its id, and what the router
/// took from the path and query.
struct RequestContext: Sendable {
    let request: HTTPRequest
    let requestID: String
    /// Values of the route's `{name}` path segments.
    let pathParameters: [String: String]
    let query: QueryParameters

    /// The body parsed as JSON.
    /// - Throws: 415 unless the body is declared `application/json`; 400 when it is not JSON.
    func jsonBody() throws(APIError) -> JSONValue {
        guard Self.isJSON(request.headers["Content-Type"]) else { throw .unsupportedMediaType }
        do {
            return try JSONParser.parse(request.body)
        } catch {
            throw .malformedJSON(error)
        }
    }

    /// `application/json` (or `application/merge-patch+json`), with or without
    /// parameters such as `charset=utf-8`.
    static func isJSON(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = (contentType.split(separator: ";", maxSplits: 1).first ?? "").trimmingSpaces().lowercased()
        return mediaType == "application/json" || mediaType == "application/merge-patch+json"
    }
}
