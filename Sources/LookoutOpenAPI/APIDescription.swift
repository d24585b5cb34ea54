import Foundation
import LookoutStore
import OpenAPIKit

/// The OpenAPI 3.1 description of what a configured Lookout serves, built with OpenAPIKit:
/// the seed app's endpoints, the token endpoints, every collection with its list
/// parameters and its documents' inferred shape (``DocumentShape``), the watch, the
/// operations routes, the error shapes, long-polls and event streams, and the bearer
/// security scheme.
///
/// The server builds it once at start from its collections (`GET /openapi.json`);
/// `lookout openapi` prints it for a data file.
public struct APIDescription: Sendable {
    /// A served collection: its name, declared options and inferred document shape.
    public struct Collection: Sendable {
        public var name: String
        public var options: DocumentCollection.Options
        public var shape: DocumentShape

        public init(name: String, options: DocumentCollection.Options, shape: DocumentShape) {
            self.name = name
            self.options = options
            self.shape = shape
        }
    }

    /// The collections, described in this order.
    public var collections: [Collection]
    /// The longest `wait` a long-poll may ask for (`--max-wait`).
    public var maxWaitSeconds: Double
    /// `info.version`.
    public var version: String

    public init(collections: [Collection], maxWaitSeconds: Double, version: String = "1") {
        self.collections = collections
        self.maxWaitSeconds = maxWaitSeconds
        self.version = version
    }

    /// The name of the bearer security scheme in `components.securitySchemes`.
    static let bearer = "bearerAuth"

    /// The document.
    public func document() -> OpenAPI.Document {
        var paths: OpenAPI.PathItem.Map = [:]
        for (path, item) in authPaths() + collectionPaths() + servicePaths() {
            paths[OpenAPI.Path(rawValue: path)] = .b(item)
        }
        return OpenAPI.Document(
            openAPIVersion: .v3_1_1,
            info: .init(
                title: "Lookout",
                description: Self.overview,
                version: version),
            servers: [.init(url: URL(string: "/")!, description: "The server that serves this document.")],
            paths: paths,
            components: components(),
            security: [],
            tags: [
                .init(name: "auth", description: "Log in, verify, and OAuth 2.0 tokens."),
                .init(name: "collections", description: "The data file's collections, json-server style."),
                .init(name: "watch", description: "One long-poll over fields of several documents."),
                .init(name: "operations", description: "Health, readiness, metrics and this document."),
            ])
    }

    /// The document as JSON: keys sorted, two-space indented, so that equal descriptions
    /// give equal bytes.
    public func json() throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(document())) + [UInt8(ascii: "\n")]
    }

    static let overview = """
        An HTTP JSON service whose every GET can wait for a change to exactly what it read.

        - Long-poll: every GET answers with an `ETag` (the store's epoch and the highest \
        revision of what the answer read). Send it back in `If-None-Match` or `since`, with \
        `wait=SECONDS`, and the request is held until something it read changes (200, with \
        `Lookout-Changed` naming the changed fields) or the wait ends (304).
        - Event streams: every GET view whose `Accept` prefers `text/event-stream` to JSON \
        (as a browser's EventSource sends it) answers a stream instead: the current body as the first event's `data`, then one event per \
        change the reader can see; the event `id` is the cursor (`Last-Event-ID` resumes), \
        `event: end` ends it. A token may also go in `access_token` there.
        - Errors have one shape, `Error`; the OAuth endpoints answer RFC 6749's, `OAuthError`.
        - Document shapes are inferred at start from the documents each collection holds. \
        A write that gives a described field a value of another type is 400 `invalid_body`; \
        fields not described may be added with any type.
        """
}
