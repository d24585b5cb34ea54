import LookoutHTTP
import LookoutJSON

extension HTTPResponse {
    /// A JSON response in UTF-8 carrying the request id.
    static func json(_ value: JSONValue, status: Int = 200, requestID: String) -> HTTPResponse {
        json(body: JSONWriter.encode(value), status: status, requestID: requestID)
    }

    /// A JSON response from an already encoded body.
    static func json(body: [UInt8], status: Int = 200, requestID: String) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: HTTPHeaders([("Content-Type", "application/json; charset=utf-8"), ("X-Request-Id", requestID)]),
            body: body)
    }
}

extension HTTPResponse {
    /// A rendered view with its cursor as `ETag`; 304 without a body when the request's
    /// `If-None-Match` already names that cursor.
    static func view(_ view: RenderedView, epoch: String, context: RequestContext) -> HTTPResponse {
        let tag = EntityTag(epoch: epoch, revision: view.reads.revision)
        if tag.isMatched(byIfNoneMatch: context.request.headers["If-None-Match"]) {
            return notModified(tag, caching: view.caching, requestID: context.requestID)
        }
        var response = json(body: view.body, tag: tag, requestID: context.requestID)
        for (name, value) in view.headers + view.caching { response.headers.add(name, value) }
        return response
    }

    /// 304 with the unchanged cursor, and the caching headers its 200 would have had
    /// (RFC 9110 §15.4.5).
    static func notModified(_ tag: EntityTag, caching: [(String, String)] = [], requestID: String) -> HTTPResponse {
        HTTPResponse(
            status: 304, headers: HTTPHeaders([("ETag", tag.header), ("X-Request-Id", requestID)] + caching))
    }

    /// A JSON body with its `ETag`.
    static func json(body: [UInt8], tag: EntityTag, status: Int = 200, requestID: String) -> HTTPResponse {
        var response = json(body: body, status: status, requestID: requestID)
        response.headers.add("ETag", tag.header)
        return response
    }
}
