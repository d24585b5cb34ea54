import LookoutHTTP

/// Cross-origin reads and writes from web pages (CORS), off unless origins are configured
/// (`--cors-origins`): a list of origins, or `*` for any.
///
/// - A preflight (`OPTIONS` with `Origin` and `Access-Control-Request-Method`) from an
///   allowed origin is answered 204 with the route's methods, the request headers a
///   client may send, and how long the browser may keep the answer.
/// - Every other answer to an allowed origin, errors included, carries
///   `Access-Control-Allow-Origin` (the origin itself with `Vary: Origin`, or `*`) and
///   exposes the response headers a client reads.
/// - A request from any other origin gets no CORS header at all, so the browser keeps its
///   page from reading the answer; a preflight from one is answered 403.
///
/// Tokens are bearer tokens in `Authorization`, never cookies, so no
/// `Access-Control-Allow-Credentials` is needed: with `*`, a page can use only a token its
/// own code obtained.
struct CrossOrigin: Sendable {
    enum Allowed: Sendable, Equatable {
        case any
        case origins(Set<String>)
    }

    let allowed: Allowed

    /// The request header fields a page may send.
    static let requestHeaders = [
        "Authorization", "Content-Type", "If-Match", "If-None-Match", "X-Request-Id", "Last-Event-ID",
    ]
    /// The response header fields a page may read (besides the always-readable ones).
    static let exposedHeaders = [
        "ETag", "Link", "X-Total-Count", "Lookout-Changed", "X-Request-Id", "Retry-After", "Location",
    ]
    /// Seconds a browser may keep a preflight's answer.
    static let maxAge = 600

    /// Parses `--cors-origins`: `*`, or origins separated by commas (`https://app.example`,
    /// scheme, host and port as a browser sends them in `Origin`). Nil for an empty list.
    /// - Throws: a message naming the first entry that is not an origin.
    static func parse(_ text: String) throws(StartupError) -> CrossOrigin? {
        let entries = text.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty }
        if entries == ["*"] { return CrossOrigin(allowed: .any) }
        guard !entries.isEmpty else { return nil }
        for entry in entries where !isOrigin(entry) {
            throw StartupError(
                "--cors-origins: '\(entry)' is not an origin such as https://app.example.com or http://localhost:8000, nor *"
            )
        }
        return CrossOrigin(allowed: .origins(Set(entries)))
    }

    /// scheme://host[:port], nothing after: what a browser sends in `Origin`.
    private static func isOrigin(_ text: String) -> Bool {
        guard let schemeEnd = text.range(of: "://") else { return false }
        let scheme = text[..<schemeEnd.lowerBound]
        let rest = text[schemeEnd.upperBound...]
        return (scheme == "http" || scheme == "https") && !rest.isEmpty
            && !rest.contains(where: { $0 == "/" || $0 == "?" || $0 == "#" || $0 == " " || $0 == "*" })
    }

    /// The value of `Access-Control-Allow-Origin` for `request`, nil when it has no
    /// `Origin` or one not allowed.
    func allowOrigin(for request: HTTPRequest) -> String? {
        guard let origin = request.headers["Origin"] else { return nil }
        switch allowed {
        case .any: return "*"
        case .origins(let origins): return origins.contains(origin) ? origin : nil
        }
    }

    /// Whether `request` is a preflight: `OPTIONS` asking whether a method may be used.
    static func isPreflight(_ request: HTTPRequest) -> Bool {
        request.method == "OPTIONS" && request.headers.contains("Origin")
            && request.headers.contains("Access-Control-Request-Method")
    }

    /// The answer to a preflight for a route allowing `methods`; nil for an origin not
    /// allowed (answer ``APIError/originNotAllowed``).
    func preflight(_ request: HTTPRequest, methods: [String]) -> HTTPResponse? {
        guard let origin = allowOrigin(for: request) else { return nil }
        var response = HTTPResponse(status: 204)
        response.headers.add("Access-Control-Allow-Origin", origin)
        if origin != "*" { response.headers.add("Vary", "Origin") }
        response.headers.add("Access-Control-Allow-Methods", (methods + ["OPTIONS"]).joined(separator: ", "))
        response.headers.add("Access-Control-Allow-Headers", Self.requestHeaders.joined(separator: ", "))
        response.headers.add("Access-Control-Max-Age", String(Self.maxAge))
        return response
    }

    /// Adds the CORS header fields to an answer to `request`, when its origin is allowed.
    func decorate(_ response: inout HTTPResponse, for request: HTTPRequest) {
        guard let origin = allowOrigin(for: request) else { return }
        response.headers.add("Access-Control-Allow-Origin", origin)
        if origin != "*" { response.headers.add("Vary", "Origin") }
        response.headers.add("Access-Control-Expose-Headers", Self.exposedHeaders.joined(separator: ", "))
    }
}

extension APIError {
    static let originNotAllowed = APIError(
        status: 403, code: "origin_not_allowed",
        message: "This origin may not call the API from a web page (the server's --cors-origins).")
}
