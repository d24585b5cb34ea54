import LookoutHTTP
import LookoutJSON

/// One request on its way through a route: the request, its id, and what the router
/// took from the path and query.
///
/// A class: a held poll's closures all capture it, and each capture of a class is one
/// reference where a struct's would copy (and later release) every field.
final class RequestContext: Sendable {
    let request: HTTPRequest
    /// The id the request is logged under, which its errors carry: the client's own
    /// `X-Request-Id` when it is short and plain, else one made here.
    let requestID: RequestID
    /// The client's own `X-Request-Id`, echoed on every answer; nil when it sent none (or
    /// one that was replaced), and then only errors carry an id. An answer without one
    /// can be shared between requests: ten thousand polls woken by one write, or a hot GET.
    var echoedRequestID: String? { requestID.echoed }
    /// Values of the route's `{name}` path segments.
    let pathParameters: PathParameters
    let query: QueryParameters
    /// What a view's rendering depends on in the request: its path and query as sent,
    /// without the long-poll's own parameters. Requests of the same grant with the same
    /// key see the same bytes at a revision, so renderings are cached and shared by it.
    let viewKey: String

    /// - Parameters:
    ///   - query: `request`'s query, parsed; `viewKey`: its ``viewKey(path:query:)``. Both
    ///     come from ``ParsedTargets``, which keeps them for a target seen again.
    init(
        request: HTTPRequest, requestID: RequestID, pathParameters: PathParameters, query: QueryParameters,
        viewKey: String
    ) {
        self.request = request
        self.requestID = requestID
        self.pathParameters = pathParameters
        self.query = query
        self.viewKey = viewKey
    }

    /// The view key of a request with `path` and `query`: both as sent, without the
    /// long-poll's own parameters.
    static func viewKey(path: Substring, query: QueryParameters) -> String {
        String(path) + "?" + query.encoded(excluding: LongPoll.parameters)
    }

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
    ///
    /// Read by byte: split, trimmed and compared as substrings, every write's header took
    /// ~2,000 instructions (callgrind, Benchmarks/README.md stop 54). Only the ASCII `;`
    /// ends the media type, and one with a byte outside ASCII is neither name, as RFC 9110
    /// §5.6.6 and §8.3.1 read it. Compared by `Character`, text outside ASCII differed in
    /// one way: a Greek question mark (U+037E), canonically equivalent to `;`, ended the
    /// type too.
    static func isJSON(_ contentType: String?) -> Bool {
        guard var contentType else { return false }
        return contentType.withUTF8 { bytes in
            let head = UnsafeBufferPointer(rebasing: bytes[..<(bytes.firstIndex(of: UInt8(ascii: ";")) ?? bytes.count)])
            let mediaType = UnsafeBufferPointer(rebasing: head[head.rangeTrimmingSpaces()])
            return mediaType.isLowercased(as: "application/json")
                || mediaType.isLowercased(as: "application/merge-patch+json")
        }
    }
}
