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
