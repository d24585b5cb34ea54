/// A complete HTTP request as read from the wire: headers and the whole body.
public struct HTTPRequest: Sendable {
    /// Why the server refused a request before it could be read as one: its framing was
    /// faulty or ambiguous, a limit was passed, or it arrived too slowly. The request has
    /// no method, target, headers or body of the client's then; answer it with `status`.
    public struct Refusal: Sendable, Equatable {
        /// 400, 408, 413, 414, 417, 431, 501, 503 or 505.
        public let status: Int
        /// A stable machine-readable code, e.g. `malformed_request`.
        public let code: String
        /// A sentence for the client.
        public let message: String

        public init(status: Int, code: String, message: String) {
            self.status = status
            self.code = code
            self.message = message
        }
    }

    /// The method as sent, e.g. `GET`.
    public let method: String
    /// The raw request target, e.g. `/v1/info_feed?page=2` (not percent-decoded).
    public let target: String
    public let headers: HTTPHeaders
    /// The body; empty when there was none.
    public let body: [UInt8]
    /// Set when the server refused the request as read; answer with it, ignoring the rest.
    public let refusal: Refusal?
    /// The client's address.
    public let address: ClientAddress
    /// The client's address as text, e.g. `127.0.0.1` or `::1`.
    public var clientAddress: String { address.description }
    /// When it was read whole, in CLOCK_MONOTONIC nanoseconds; 0 unless tracing
    /// (``WakeTrace``).
    public var receivedAt: UInt64 = 0

    public init(
        method: String,
        target: String,
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        refusal: Refusal? = nil,
        clientAddress: String = ""
    ) {
        self.init(
            method: method, target: target, headers: headers, body: body, refusal: refusal,
            address: ClientAddress(clientAddress))
    }

    init(method: String, target: String, headers: HTTPHeaders, body: [UInt8], refusal: Refusal?, address: ClientAddress)
    {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.refusal = refusal
        self.address = address
    }

    /// This request with another target and header fields, as a route is to see it.
    public func with(target: String, headers: HTTPHeaders) -> HTTPRequest {
        var request = HTTPRequest(
            method: method, target: target, headers: headers, body: body, refusal: refusal, address: address)
        request.receivedAt = receivedAt
        return request
    }

    /// The path part of the target, still percent-encoded.
    public var path: Substring {
        // Searched as UTF-8: a Character search would break the text into graphemes.
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return target[...] }
        return target[..<mark]
    }

    /// The query part of the target after `?`, still percent-encoded; empty when absent.
    public var rawQuery: Substring {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return "" }
        return target[target.utf8.index(after: mark)...]
    }
}
