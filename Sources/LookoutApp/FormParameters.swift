import LookoutHTTP
import LookoutJSON

/// The parameters of an OAuth request body (RFC 6749 §3.2, RFC 7662 §2.1, RFC 7009 §2.1):
/// `application/x-www-form-urlencoded` as the RFCs say, or a JSON object of strings for
/// clients that only speak JSON.
struct FormParameters {
    private let values: [String: String]

    /// - Throws: 400 `invalid_request` for another content type, a malformed body, or a
    ///   parameter given twice (RFC 6749 §3.2).
    init(_ context: RequestContext) throws(APIError) {
        let contentType = context.request.headers["Content-Type"]
        var values: [String: String] = [:]
        if Self.isForm(contentType) {
            do {
                values = try FormBody(parsing: context.request.body).values
            } catch {
                switch error {
                case .repeatedName(let name):
                    throw .oauth("invalid_request", "The parameter '\(name.prefix(64))' is given more than once.")
                }
            }
        } else if RequestContext.isJSON(contentType) {
            guard case .object(let object) = try? JSONParser.parse(context.request.body) else {
                throw .oauth("invalid_request", "The body must be a JSON object of strings.")
            }
            for member in object {
                guard let value = member.value.stringValue else {
                    throw .oauth("invalid_request", "The parameter '\(member.key.prefix(64))' must be a string.")
                }
                values[member.key] = value
            }
        } else {
            throw .oauth("invalid_request", "Send the parameters as application/x-www-form-urlencoded.")
        }
        self.values = values
    }

    /// The value of `name`; a parameter sent without a value counts as omitted (RFC 6749 §3.1).
    subscript(name: String) -> String? {
        guard let value = values[name], !value.isEmpty else { return nil }
        return value
    }

    func required(_ name: String) throws(APIError) -> String {
        guard let value = self[name] else { throw .oauth("invalid_request", "The parameter '\(name)' is required.") }
        return value
    }

    private static func isForm(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        let mediaType = (contentType.split(separator: ";", maxSplits: 1).first ?? "").trimmingSpaces().lowercased()
        return mediaType == "application/x-www-form-urlencoded"
    }
}

extension APIError {
    /// A 400 in the OAuth shape.
    static func oauth(_ code: String, _ message: String, status: Int = 400) -> APIError {
        APIError(status: status, code: code, message: message, shape: .oauth)
    }

    /// Any error of an OAuth endpoint in the OAuth shape, with the RFCs' codes where they
    /// have one: wrong credentials are `invalid_grant` (RFC 6749 §5.2), storage trouble
    /// `temporarily_unavailable`.
    static func oauth(from error: any Error) -> APIError {
        var mapped = LookoutResponder.apiError(for: error)
        if mapped.code == "invalid_body" {
            mapped = .oauth("invalid_request", mapped.message)
        } else if mapped.code == "invalid_credentials" {
            mapped = .oauth("invalid_grant", "The username or password is wrong.")
        } else if mapped.code == APIError.storageUnavailableCode {
            mapped = APIError(
                status: 503, code: "temporarily_unavailable", message: "Storage is unavailable; retry later.",
                headers: [("Retry-After", "5")])
        }
        mapped.shape = .oauth
        // RFC 6749 §5.1 and §5.2: token answers, errors included, are never cached.
        mapped.headers += [("Cache-Control", "no-store"), ("Pragma", "no-cache")]
        return mapped
    }
}
