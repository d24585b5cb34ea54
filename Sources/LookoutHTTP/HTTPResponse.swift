/// A complete HTTP response: status, headers and body bytes.
///
/// `Content-Length` and `Date` are added by the server; do not set them.
public struct HTTPResponse: Sendable {
    public var status: Int { didSet { prepared = nil } }
    public var headers: HTTPHeaders { didSet { prepared = nil } }
    public var body: [UInt8] { didSet { prepared = nil } }
    /// The same response already handed to the server, sent as it is; dropped by any change.
    private(set) var prepared: PreparedResponse?

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `prepared`'s response, which the server sends without copying its headers or body.
    public init(_ prepared: PreparedResponse) {
        self = prepared.response
        self.prepared = prepared
    }
}

/// A response handed to the server once, to be sent as it is to any number of requests:
/// a hot GET answered again and again pays neither for building its headers nor for
/// copying its body.
public final class PreparedResponse: Sendable {
    public let response: HTTPResponse
    let shared: SharedResponse

    /// Nil when out of memory.
    public init?(_ response: HTTPResponse) {
        guard let shared = SharedResponse(response) else { return nil }
        self.response = response
        self.shared = shared
    }
}
