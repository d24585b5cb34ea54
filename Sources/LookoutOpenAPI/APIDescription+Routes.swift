import OpenAPIKit

/// The seed app's token endpoints, the OAuth 2.0 ones, and the operations routes.
extension APIDescription {
    func authPaths() -> [(String, OpenAPI.PathItem)] {
        let token = Self.ref("Token")
        let login = OpenAPI.Operation(
            tags: ["auth"], summary: "Log in (the seed app's login)",
            description: "Any `Authorization` header is ignored. Failed logins are throttled per account and address.",
            operationId: "login",
            requestBody: .init(
                content: Self.json(
                    .object(
                        properties: ["email": .string(maxLength: 254), "password": .string],
                        additionalProperties: .a(true))),
                required: true),
            responses: Self.responses(
                [(200, OpenAPI.Response(description: "A new access token.", content: Self.json(token)))]
                    + Self.errors([400, 401, 413, 415, 429])),
            security: [])
        let verify = OpenAPI.Operation(
            tags: ["auth"], summary: "Verify the presented token (the seed app's verify)",
            operationId: "verify",
            requestBody: .init(content: Self.json(.object(additionalProperties: .a(true))), required: false),
            responses: Self.responses(
                [
                    (
                        200,
                        OpenAPI.Response(description: "The token presented, which is valid.", content: Self.json(token))
                    )
                ]
                    + Self.errors([400, 401, 413, 415])),
            security: Self.tokenRequired)
        return [
            ("/v1/auth/login", OpenAPI.PathItem(post: login)),
            ("/v1/auth/verify", OpenAPI.PathItem(post: verify)),
            ("/v1/auth/token", OpenAPI.PathItem(post: tokenOperation())),
            ("/v1/auth/introspect", OpenAPI.PathItem(post: introspect())),
            ("/v1/auth/revoke", OpenAPI.PathItem(post: revoke())),
            ("/.well-known/jwks.json", OpenAPI.PathItem(get: jwks())),
        ]
    }

    /// A form (or a JSON object of strings) with these string fields.
    private static func form(_ properties: OrderedDictionary<String, JSONSchema>) -> OpenAPI.Request {
        let schema = JSONSchema.object(properties: properties, additionalProperties: .a(true))
        return OpenAPI.Request(
            content: [.form: .b(OpenAPI.Content(schema: schema)), .json: .b(OpenAPI.Content(schema: schema))],
            required: true)
    }

    private static func oauthErrors(_ statuses: [Int]) -> [(OpenAPI.Response.StatusCode, OpenAPI.Response)] {
        errors(statuses, schema: "OAuthError")
    }

    private func tokenOperation() -> OpenAPI.Operation {
        OpenAPI.Operation(
            tags: ["auth"], summary: "OAuth 2.0 token endpoint: password and refresh-token grants (RFC 6749)",
            operationId: "token",
            requestBody: .b(
                Self.form([
                    "grant_type": .string(allowedValues: "password", "refresh_token"),
                    "username": .string(required: false), "password": .string(required: false),
                    "refresh_token": .string(required: false),
                    "scope": .string(required: false, description: "Ask for less than the user's role."),
                ])),
            responses: Self.responses(
                [
                    (
                        200,
                        OpenAPI.Response(
                            description: "New tokens; never cached.",
                            content: Self.json(
                                .object(
                                    properties: [
                                        "access_token": .string, "token_type": .string, "expires_in": .integer,
                                        "refresh_token": .string(description: "`lkr_…`, for one use."),
                                        "scope": .string,
                                    ],
                                    additionalProperties: .a(true))))
                    )
                ] + Self.oauthErrors([400, 401, 413, 415, 429])),
            security: [])
    }

    private func introspect() -> OpenAPI.Operation {
        OpenAPI.Operation(
            tags: ["auth"], summary: "Whether a token is current, and what it says (RFC 7662)",
            operationId: "introspect",
            requestBody: .b(
                Self.form(["token": .string, "token_type_hint": .string(required: false)])),
            responses: Self.responses(
                [
                    (
                        200,
                        OpenAPI.Response(
                            description: "`{\"active\": false}` for a token that is not current or not the caller's.",
                            content: Self.json(
                                .object(
                                    properties: [
                                        "active": .boolean, "token_type": .string(required: false),
                                        "scope": .string(required: false), "sub": .string(required: false),
                                        "username": .string(required: false), "iat": .integer(required: false),
                                        "exp": .integer(required: false), "jti": .string(required: false),
                                    ],
                                    additionalProperties: .a(true))))
                    )
                ] + Self.oauthErrors([400, 401, 413, 415])),
            security: Self.tokenRequired)
    }

    private func revoke() -> OpenAPI.Operation {
        OpenAPI.Operation(
            tags: ["auth"], summary: "Revoke a token; a refresh token revokes its family (RFC 7009)",
            operationId: "revoke",
            requestBody: .b(Self.form(["token": .string, "token_type_hint": .string(required: false)])),
            responses: Self.responses(
                [(200, OpenAPI.Response(description: "Whether or not the token was valid."))]
                    + Self.oauthErrors([400, 413, 415])),
            security: [])
    }

    private func jwks() -> OpenAPI.Operation {
        OpenAPI.Operation(
            tags: ["auth"], summary: "The public signing keys (RFC 7517); EdDSA keys only", operationId: "jwks",
            responses: Self.responses([
                (
                    200,
                    OpenAPI.Response(
                        description: "The key set.",
                        content: Self.json(
                            .object(
                                properties: ["keys": .array(items: .object(additionalProperties: .a(true)))],
                                additionalProperties: .a(true))))
                )
            ]))
    }

    func servicePaths() -> [(String, OpenAPI.PathItem)] {
        let status = JSONSchema.object(properties: ["status": .string], additionalProperties: .a(true))
        let health = OpenAPI.Operation(
            tags: ["operations"], summary: "Liveness", operationId: "health",
            responses: Self.responses([(200, OpenAPI.Response(description: "Serving.", content: Self.json(status)))]))
        let ready = OpenAPI.Operation(
            tags: ["operations"], summary: "Readiness: the store, the data directory and the database",
            operationId: "ready",
            responses: Self.responses([
                (200, OpenAPI.Response(description: "Every check is `ok`.", content: Self.json(status))),
                (
                    503,
                    OpenAPI.Response(
                        description: "A check fails; its message in place of `ok`.", content: Self.json(status))
                ),
            ]))
        let metrics = OpenAPI.Operation(
            tags: ["operations"], summary: "Prometheus metrics", operationId: "metrics",
            responses: Self.responses([
                (
                    200,
                    OpenAPI.Response(
                        description: "The Prometheus text format.",
                        content: [.init(rawValue: "text/plain")!: .b(OpenAPI.Content(schema: .string))])
                )
            ]))
        let openAPI = OpenAPI.Operation(
            tags: ["operations"], summary: "This document", operationId: "openapi",
            responses: Self.responses([
                (
                    200,
                    OpenAPI.Response(
                        description: "OpenAPI 3.1.", content: Self.json(.object(additionalProperties: .a(true))))
                )
            ]))
        let image = OpenAPI.Operation(
            tags: ["operations"], summary: "A placeholder thumbnail that Lookout draws itself",
            operationId: "image",
            parameters: [.b(.path(name: "name", schema: .string))],
            responses: Self.responses(
                [
                    (
                        200,
                        OpenAPI.Response(
                            description: "A PNG.",
                            content: [.png: .b(OpenAPI.Content(schema: .string(contentEncoding: .binary)))])
                    )
                ] + Self.errors([400, 404]))
        )
        return watchPaths() + [
            ("/healthz", OpenAPI.PathItem(get: health)),
            ("/readyz", OpenAPI.PathItem(get: ready)),
            ("/metrics", OpenAPI.PathItem(get: metrics)),
            ("/openapi.json", OpenAPI.PathItem(get: openAPI)),
            ("/images/{name}", OpenAPI.PathItem(get: image)),
        ]
    }
}
