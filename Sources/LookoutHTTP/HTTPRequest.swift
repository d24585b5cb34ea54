/// A complete HTTP request as read from the wire: headers and the whole body.
public struct HTTPRequest: Sendable {
    /// The method as sent, e.g. `GET`.
    public let method: String
    /// The raw request target, e.g. `/v1/info_feed?page=2` (not percent-decoded).
    public let target: String
    public let headers: HTTPHeaders
    /// The body; empty when there was none.
    public let body: [UInt8]
    /// True when the body was larger than the configured limit; `body` is then empty
    /// and the request should be answered 413.
    public let bodyTooLarge: Bool
    /// The client's address as text, e.g. `127.0.0.1` or `::1`.
    public let clientAddress: String

    public init(
        method: String,
        target: String,
        headers: HTTPHeaders = HTTPHeaders(),
        body: [UInt8] = [],
        bodyTooLarge: Bool = false,
        clientAddress: String = ""
    ) {
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.bodyTooLarge = bodyTooLarge
        self.clientAddress = clientAddress
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
