import LookoutHTTP
import LookoutJSON

extension HTTPResponse {
    /// A JSON response in UTF-8, carrying `requestID` as `X-Request-Id` when given.
    static func json(_ value: JSONValue, status: Int = 200, requestID: String?) -> HTTPResponse {
        json(body: JSONWriter.encode(value), status: status, requestID: requestID)
    }

    /// A JSON response from an already encoded body.
    static func json(body: [UInt8], status: Int = 200, requestID: String?) -> HTTPResponse {
        var response = HTTPResponse(
            status: status, headers: HTTPHeaders([("Content-Type", "application/json; charset=utf-8")]), body: body)
        response.headers.addRequestID(requestID)
        return response
    }
}

extension HTTPResponse {
    /// A rendered view with its cursor as `ETag`; 304 without a body when the request's
    /// `If-None-Match` already names that cursor.
    static func view(_ view: RenderedView, epoch: String, context: RequestContext) -> HTTPResponse {
        let tag = EntityTag(epoch: epoch, revision: view.reads.revision)
        if tag.isMatched(byIfNoneMatch: context.request.headers["If-None-Match"]) {
            return notModified(tag, caching: view.caching, requestID: context.echoedRequestID)
        }
        return rendering(view, tag: tag, requestID: context.echoedRequestID)
    }

    /// A rendered view's 200, with its cursor as `ETag`.
    static func rendering(_ view: RenderedView, tag: EntityTag, requestID: String?) -> HTTPResponse {
        var response = json(body: view.body, tag: tag, requestID: requestID)
        for (name, value) in view.headers + view.caching { response.headers.add(name, value) }
        return response
    }

    /// 304 with the unchanged cursor, and the caching headers its 200 would have had
    /// (RFC 9110 §15.4.5).
    static func notModified(_ tag: EntityTag, caching: [(String, String)] = [], requestID: String?) -> HTTPResponse {
        var response = HTTPResponse(status: 304, headers: HTTPHeaders([("ETag", tag.header)] + caching))
        response.headers.addRequestID(requestID)
        return response
    }

    /// A JSON body with its `ETag`.
    static func json(body: [UInt8], tag: EntityTag, status: Int = 200, requestID: String?) -> HTTPResponse {
        var response = json(body: body, status: status, requestID: requestID)
        response.headers.add("ETag", tag.header)
        return response
    }
}

extension HTTPHeaders {
    /// `X-Request-Id`, when there is one to send: every error carries the request's id,
    /// other answers only the id the client sent (``RequestContext/echoedRequestID``).
    mutating func addRequestID(_ id: String?) {
        if let id { add("X-Request-Id", id) }
    }
}
