import LookoutStore
import OpenAPIKit

/// Shared schemas, responses and header fields.
extension APIDescription {
    func components() -> OpenAPI.Components {
        var schemas: OpenAPI.ComponentDictionary<JSONSchema> = [
            "Error": .object(
                description: "Every error but the OAuth endpoints'.",
                properties: [
                    "error": .object(
                        properties: [
                            "code": .string(description: "Stable, machine-readable, e.g. `token_expired`."),
                            "message": .string(description: "For people; may change."),
                            "requestId": .string(
                                required: false, description: "Also in `X-Request-Id` and the server's log."),
                        ],
                        additionalProperties: .a(true))
                ],
                additionalProperties: .a(true)),
            "OAuthError": .object(
                description: "RFC 6749's error shape, used by `/v1/auth/token`, `/introspect` and `/revoke`.",
                properties: [
                    "error": .string(description: "`invalid_request`, `invalid_grant`, `invalid_scope`, …"),
                    "error_description": .string(required: false),
                ],
                additionalProperties: .a(true)),
            "Token": .object(properties: ["token": .string(description: "A JWT.")], additionalProperties: .a(true)),
        ]
        for collection in collections {
            schemas[.init(stringLiteral: Self.documentSchema(collection.name))] = documentSchema(collection)
        }
        return OpenAPI.Components(
            schemas: schemas,
            securitySchemes: [
                .init(stringLiteral: Self.bearer): .b(
                    .http(
                        scheme: "bearer", bearerFormat: "JWT",
                        description: """
                            An access token from `POST /v1/auth/login` or `POST /v1/auth/token`. \
                            Reads work without one as far as a collection's fields are public; \
                            writes need an editor's or an admin's.
                            """))
            ])
    }

    static func documentSchema(_ collection: String) -> String { "\(collection).document" }

    /// A stored document of `collection`: `id`, each field of its shape with the types it
    /// holds, and any other field.
    func documentSchema(_ collection: Collection) -> JSONSchema {
        var properties: OrderedDictionary<String, JSONSchema> = ["id": Self.id(required: true)]
        for name in collection.shape.fieldNames {
            properties[name] = Self.schema(for: collection.shape.fields[name]!)
        }
        return .object(
            description: "A document of \(collection.name). Types inferred from its documents at start.",
            properties: properties, additionalProperties: .a(true))
    }

    /// A write's body: as a document, `id` optional (a create may give its own).
    /// - Parameter patch: a JSON merge patch, where `null` removes a field.
    func writeSchema(_ collection: Collection, patch: Bool) -> JSONSchema {
        var properties: OrderedDictionary<String, JSONSchema> = [:]
        if !patch { properties["id"] = Self.id(required: false) }
        for name in collection.shape.fieldNames {
            var kinds = collection.shape.fields[name]!
            if patch { kinds.insert(.null) }
            properties[name] = Self.schema(for: kinds)
        }
        return .object(
            description: patch
                ? "A JSON merge patch (RFC 7396): `null` removes a field."
                : "The whole document. A described field must keep its type; new fields may hold anything.",
            properties: properties, additionalProperties: .a(true))
    }

    static func id(required: Bool) -> JSONSchema {
        .integer(
            required: required, maximum: (DocumentCollection.ids.upperBound, exclusive: false),
            minimum: (DocumentCollection.ids.lowerBound, exclusive: false))
    }

    /// An optional property holding any of `kinds`.
    static func schema(for kinds: Set<DocumentShape.Kind>) -> JSONSchema {
        let nullable = kinds.contains(.null)
        let others = kinds.subtracting([.null]).sorted()
        guard others.count == 1 else {
            if others.isEmpty { return .null() }
            return .any(of: kinds.sorted().map { single($0, nullable: false) }, core: .init(required: false))
        }
        return single(others[0], nullable: nullable)
    }

    private static func single(_ kind: DocumentShape.Kind, nullable: Bool) -> JSONSchema {
        switch kind {
        case .null: .null()
        case .boolean: .boolean(required: false, nullable: nullable)
        case .integer: .integer(required: false, nullable: nullable)
        case .number: .number(required: false, nullable: nullable)
        case .string: .string(required: false, nullable: nullable)
        case .array: .array(required: false, nullable: nullable)
        case .object: .object(required: false, nullable: nullable, additionalProperties: .a(true))
        }
    }

    // MARK: Responses

    static func json(_ schema: JSONSchema) -> OpenAPI.Content.Map {
        [.json: .b(OpenAPI.Content(schema: schema))]
    }

    static func ref(_ name: String) -> JSONSchema {
        .reference(.component(named: name))
    }

    /// The errors each status stands for, as the README's table has them.
    private static let errorMeanings: [Int: String] = [
        400: "`malformed_json`, `invalid_body`, `invalid_parameter` or `malformed_request`.",
        401: "No valid token: `missing_token`, `invalid_token`, `token_expired`, `token_revoked`, `token_required` "
            + "or `invalid_credentials`; with `WWW-Authenticate`.",
        403: "`forbidden`: writing needs an editor's or an admin's token.",
        404: "`not_found`.",
        409: "`conflict`: the id is taken, or no id is left.",
        412: "`precondition_failed`: `If-Match` names a version that is no longer current.",
        413: "`payload_too_large`.",
        414: "`uri_too_long`, or `query_too_long` when a paged list's `Link` header would pass 1 KiB.",
        415: "`unsupported_media_type`: send `Content-Type: application/json`.",
        429: "`too_many_attempts`: logins locked after repeated failures; with `Retry-After`.",
        431: "`header_fields_too_large`.",
        503: "`storage_unavailable` or `shutting_down`; with `Retry-After`.",
    ]

    /// Error responses of the usual shape for `statuses`.
    static func errors(_ statuses: [Int], schema: String = "Error") -> [(OpenAPI.Response.StatusCode, OpenAPI.Response)]
    {
        statuses.map { status in
            var headers: OpenAPI.Header.Map?
            if status == 401 && schema == "Error" {
                headers = ["WWW-Authenticate": header(.string, "`Bearer realm=\"lookout\"`, with the error.")]
            }
            if status == 429 || status == 503 {
                headers = ["Retry-After": header(.integer, "Seconds to wait.")]
            }
            return (
                .init(integerLiteral: status),
                OpenAPI.Response(
                    description: errorMeanings[status] ?? "An error.", headers: headers, content: json(ref(schema)))
            )
        }
    }

    static func header(_ schema: JSONSchema, _ description: String) -> Either<
        OpenAPI.Reference<OpenAPI.Header>, OpenAPI.Header
    > {
        .b(OpenAPI.Header(schemaOrContent: .a(.header(schema)), description: description))
    }

    static func responses(_ list: [(OpenAPI.Response.StatusCode, OpenAPI.Response)]) -> OpenAPI.Response.Map {
        var map: OpenAPI.Response.Map = [:]
        for (status, response) in list { map[status] = .b(response) }
        return map
    }

    /// `security` of an operation that needs a token.
    static var tokenRequired: [OpenAPI.SecurityRequirement] { [[.component(named: bearer): []]] }
    /// `security` of an operation that takes a token but works without one.
    static var tokenOptional: [OpenAPI.SecurityRequirement] { [[:], [.component(named: bearer): []]] }
}
