import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession

/// Logs in as the demo reader and lists the reviews with the token, through the client
/// that swift-openapi-generator made from Lookout's OpenAPI document.
///
///     swift run --package-path examples/swift-client --scratch-path .build-client LookoutClientExample http://localhost:3001
@main
struct LookoutClientExample {
    static func main() async throws {
        let serverURL = URL(string: CommandLine.arguments.dropFirst().first ?? "http://localhost:3001")!
        let anonymous = Client(serverURL: serverURL, transport: URLSessionTransport())
        let login = try await anonymous.login(
            body: .json(.init(email: "demo@example.com", password: "demo-password")))
        let token = try login.ok.body.json.token

        let client = Client(
            serverURL: serverURL, transport: URLSessionTransport(), middlewares: [BearerToken(token: token)])
        // A token holder sees every field, author_email included (see "Who may read what").
        let reviews = try await client.listReviews(query: .init(sort: "-rating"))
        for review in try reviews.ok.body.json {
            print(review.id, review.rating ?? 0, review.authorEmail ?? "-", review.comment ?? "")
        }
    }
}

/// Sends `Authorization: Bearer` with every request.
struct BearerToken: ClientMiddleware {
    let token: String

    func intercept(
        _ request: HTTPRequest,
        body: HTTPBody?,
        baseURL: URL,
        operationID: String,
        next: (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(token)"
        return try await next(request, body, baseURL)
    }
}
