import LookoutAuth
import LookoutFeeds
import LookoutHTTP
import LookoutJSON
import LookoutStore

/// An error as the client sees it: a status, a stable machine-readable code and a
/// human-readable message. Every error answer of the service is made from one of these,
/// as `{"error":{"code","message","requestId"}}`.
///
/// Domain errors are mapped here, in one place; anything unmapped becomes 500 `internal`
/// with no detail on the wire (it is logged in full instead).
struct APIError: Error, Equatable {
    let status: Int
    let code: String
    let message: String
    var headers: [(String, String)] = []
    /// How the body is shaped: Lookout's own, or RFC 6749 §5.2's for the OAuth endpoints.
    var shape = Shape.lookout

    enum Shape {
        /// `{"error":{"code","message","requestId"}}`.
        case lookout
        /// `{"error": code, "error_description": message}`, what OAuth clients parse.
        case oauth
    }

    static func == (lhs: APIError, rhs: APIError) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.message == rhs.message
    }

    static func badRequest(_ code: String, _ message: String) -> APIError {
        APIError(status: 400, code: code, message: message)
    }

    static func invalidParameter(_ name: String, _ message: String) -> APIError {
        APIError(status: 400, code: "invalid_parameter", message: "Parameter '\(name)': \(message)")
    }

    static let notFound = APIError(status: 404, code: "not_found", message: "No resource at this path.")

    static func methodNotAllowed(_ allowed: [String]) -> APIError {
        APIError(
            status: 405, code: "method_not_allowed",
            message: "This path accepts \(allowed.joined(separator: ", ")).",
            headers: [("Allow", allowed.joined(separator: ", "))])
    }

    /// A paged list's `Link` header, which repeats the query in each link, would be too long.
    static func queryTooLong(limit: Int) -> APIError {
        APIError(
            status: 414, code: "query_too_long",
            message: "The query is too long for this page's Link header (at most \(limit) bytes); shorten it.")
    }

    static func payloadTooLarge(limit: Int) -> APIError {
        APIError(status: 413, code: "payload_too_large", message: "The request body is larger than \(limit) bytes.")
    }

    /// A write (or a login's lookup) that storage could not take.
    static let storageUnavailableCode = "storage_unavailable"

    static func tooManyAttempts(retryAfter seconds: Int) -> APIError {
        APIError(
            status: 429, code: "too_many_attempts",
            message: "Too many failed logins for this account or address; retry in \(seconds) s.",
            headers: [("Retry-After", String(seconds))])
    }

    /// A read that names what only a token holder may read (RFC 6750 §3: a request
    /// without a token gets the challenge and no error code of its own).
    static func tokenRequired(_ message: String) -> APIError {
        APIError(
            status: 401, code: "token_required", message: message,
            headers: [("WWW-Authenticate", #"Bearer realm="lookout""#)])
    }

    static func forbidden(_ message: String) -> APIError {
        APIError(status: 403, code: "forbidden", message: message)
    }

    static func preconditionFailed(_ message: String) -> APIError {
        APIError(status: 412, code: "precondition_failed", message: message)
    }

    static let unsupportedMediaType = APIError(
        status: 415, code: "unsupported_media_type",
        message: "The request body must be sent as Content-Type: application/json.")

    static let internalError = APIError(status: 500, code: "internal", message: "Something went wrong on our side.")

    static let shuttingDown = APIError(
        status: 503, code: "shutting_down", message: "The server is shutting down; retry shortly.",
        headers: [("Retry-After", "1")])

    static func malformedJSON(_ error: JSONParseError) -> APIError {
        .badRequest("malformed_json", "The body is not valid JSON: \(error.description).")
    }

}

extension APIError {
    /// A query parameter that cannot be used: 400, or 401 when a token would allow it.
    init(_ error: QueryError) {
        self = error.needsToken ? .tokenRequired(error.message) : .invalidParameter(error.parameter, error.message)
    }

    /// What a refused write means to the client.
    init(_ error: StoreError) {
        switch error {
        case .unknownCollection, .documentNotFound:
            self = .notFound
        case .invalidWrite(let reason):
            self = .badRequest("invalid_body", reason.prefix(1).uppercased() + reason.dropFirst() + ".")
        case .idTaken, .idsExhausted:
            self = APIError(
                status: 409, code: "conflict",
                message: error.description.prefix(1).uppercased() + error.description.dropFirst() + ".")
        case .revisionMismatch:
            self = .preconditionFailed("The document has changed since the version named in If-Match.")
        case .storageFailed:
            // The cause (a full disk, a lost database) is logged, not sent.
            self = APIError(
                status: 503, code: APIError.storageUnavailableCode,
                message: "The write could not be stored, so it was not made; reads still work. Retry later.",
                headers: [("Retry-After", "5")])
        case .invalidCollectionName, .duplicateCollection, .invalidOptions, .invalidDocument:
            self = .internalError
        }
    }

    /// 401 for a failed authentication, with the RFC 6750 challenge.
    init(_ error: AuthError) {
        switch error {
        case .invalidCredentials:
            self = .unauthorized(
                "invalid_credentials", "The email or password is wrong.", challenge: #"Bearer realm="lookout""#)
        case .missingToken:
            self = .unauthorized(
                "missing_token", "Send the token as Authorization: Bearer <token>.",
                challenge: #"Bearer realm="lookout""#)
        case .notBearer:
            self = .unauthorized(
                "invalid_token", "The Authorization scheme must be Bearer.", challenge: #"Bearer realm="lookout""#)
        case .invalidToken(let reason):
            self = .unauthorized(
                "invalid_token", "The token is invalid: \(reason).",
                challenge: #"Bearer realm="lookout", error="invalid_token""#)
        case .tokenExpired:
            self = .unauthorized(
                "token_expired", "The token has expired; log in again.",
                challenge: #"Bearer realm="lookout", error="invalid_token""#)
        case .tokenNotYetValid:
            self = .unauthorized(
                "invalid_token", "The token is not valid yet.",
                challenge: #"Bearer realm="lookout", error="invalid_token""#)
        case .tokenRevoked:
            self = .unauthorized(
                "token_revoked", "The token has been revoked; log in again.",
                challenge: #"Bearer realm="lookout", error="invalid_token""#)
        case .invalidConfiguration:
            self = .internalError
        }
    }

    private static func unauthorized(_ code: String, _ message: String, challenge: String) -> APIError {
        APIError(status: 401, code: code, message: message, headers: [("WWW-Authenticate", challenge)])
    }

    /// The wire form of this error for the request `requestID`.
    func response(requestID: String) -> HTTPResponse {
        let body: JSONValue =
            switch shape {
            case .lookout:
                ["error": ["code": .string(code), "message": .string(message), "requestId": .string(requestID)]]
            case .oauth:
                ["error": .string(code), "error_description": .string(message)]
            }
        var response = HTTPResponse.json(body, status: status, requestID: requestID)
        for (name, value) in headers {
            response.headers.add(name, value)
        }
        return response
    }
}
