import LookoutAuth
import LookoutFeeds
import LookoutHTTP
import LookoutJSON
import LookoutStore

/// The seed iOS app's endpoints that are its own (contract/seed-app.md): login and
/// verify, plus the placeholder images its demo thumbnails point at. Its four feeds are
/// collections declared in the data file (``CollectionRoutes``): `info_feed` with a page
/// envelope, `category_feeds` sorted by rank.
struct SeedRoutes: Sendable {
    let login: PasswordLogin
    let tokens: TokenService

    func register(in router: inout Router) {
        router.add("POST", "/v1/auth/login", .deferred(logIn))
        router.add("POST", "/v1/auth/verify", .immediate(verify))
        router.add("GET", "/images/{name}", .immediate(image))
    }

    /// `POST /v1/auth/login`: `{"email","password"}` → `{"token"}`. Any Authorization
    /// header is ignored: the app sends its stale token here too.
    func logIn(_ context: RequestContext) async throws -> HTTPResponse {
        let body = try context.jsonBody()
        guard case .object = body else { throw APIError.badRequest("invalid_body", "The body must be a JSON object.") }
        guard let email = body["email"]?.stringValue else {
            throw APIError.badRequest("invalid_body", "The body needs a string \"email\".")
        }
        guard let password = body["password"]?.stringValue else {
            throw APIError.badRequest("invalid_body", "The body needs a string \"password\".")
        }
        let user = try await login.authenticate(email: email, password: password, from: context.request.clientAddress)
        let token = tokens.issue(for: user).token
        return noStore(.json(["token": .string(token)], requestID: context.echoedRequestID))
    }

    /// `POST /v1/auth/verify`: answers the presented token if it is valid, else 401.
    func verify(_ context: RequestContext) throws -> HTTPResponse {
        if !context.request.body.isEmpty {
            _ = try context.jsonBody()
        }
        let token = try BearerToken.parse(context.request.headers["Authorization"])
        _ = try tokens.verify(token)
        return noStore(.json(["token": .string(token)], requestID: context.echoedRequestID))
    }

    /// `GET /images/<name>.png`: a generated placeholder, so demo thumbnails resolve.
    func image(_ context: RequestContext) throws -> HTTPResponse {
        let file = context.pathParameters["name"] ?? ""
        guard file.hasSuffix(".png") else { throw APIError.notFound }
        let name = file.dropLast(4)
        guard (1...64).contains(name.utf8.count),
            name.utf8.allSatisfy({
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "-")
            })
        else { throw APIError.notFound }
        var response = HTTPResponse(
            status: 200,
            headers: HTTPHeaders([("Content-Type", "image/png"), ("Cache-Control", "public, max-age=86400")]),
            body: PlaceholderImage.png(named: String(name)))
        response.headers.addRequestID(context.echoedRequestID)
        return response
    }

    private func noStore(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers.add("Cache-Control", "no-store")
        return response
    }
}
