import LookoutStore
import OpenAPIKit

/// Each collection's list, document and write operations, and the multi-read watch.
extension APIDescription {
    /// The filter operators a top-level field name may carry (`rating_gte=4`).
    static let filterOperators: [(suffix: String, meaning: String)] = [
        ("", "equal to any of the values (repeat it)"),
        ("_ne", "equal to none of the values"),
        ("_gt", "greater than"), ("_gte", "at least"), ("_lt", "less than"), ("_lte", "at most"),
        ("_like", "a string containing the pattern, ignoring case (`*` any run, `^` start, `$` end)"),
    ]

    func collectionPaths() -> [(String, OpenAPI.PathItem)] {
        var paths: [(String, OpenAPI.PathItem)] = []
        for collection in collections {
            let name = collection.name
            let document = Self.ref(Self.documentSchema(name))
            let list = OpenAPI.Operation(
                tags: ["collections"], summary: "List \(name)",
                description: listDescription(collection),
                operationId: "list_\(name)", parameters: listParameters(collection),
                responses: Self.view(listBody(collection, document), list: true),
                security: Self.tokenOptional)
            let create = OpenAPI.Operation(
                tags: ["collections"], summary: "Create a document in \(name)",
                operationId: "create_\(name)", parameters: [Self.ifMatch],
                requestBody: .init(content: Self.json(writeSchema(collection, patch: false)), required: true),
                responses: Self.responses(
                    Self.written(
                        document, status: 201, headers: ["Location": Self.header(.string, "The new document's path.")])
                        + Self.errors([400, 401, 403, 409, 412, 413, 415, 503])),
                security: Self.tokenRequired)
            paths.append(("/v1/\(name)", OpenAPI.PathItem(get: list, post: create)))

            let id = Either<OpenAPI.Reference<OpenAPI.Parameter>, OpenAPI.Parameter>.b(
                .path(name: "id", schema: Self.id(required: true)))
            let read = OpenAPI.Operation(
                tags: ["collections"], summary: "Read a document of \(name)",
                operationId: "get_\(name)",
                parameters: [
                    Self.query(
                        "fields", .string, "Return (and wait on) only these fields, comma-separated; `id` always."),
                    Self.query("expand", .string, "A declared reference field to resolve, such as `category_id`."),
                ] + Self.longPollParameters(maxWait: maxWaitSeconds),
                responses: Self.view(document, list: false), security: Self.tokenOptional)
            // A replacement and a merge patch answer alike; they differ in the body they take.
            func change(_ verb: String, _ summary: String, body: OpenAPI.Content.Map) -> OpenAPI.Operation {
                OpenAPI.Operation(
                    tags: ["collections"], summary: summary, operationId: "\(verb)_\(name)",
                    parameters: [Self.ifMatch], requestBody: .init(content: body, required: true),
                    responses: Self.responses(
                        Self.written(document, status: 200) + Self.errors([400, 401, 403, 404, 412, 413, 415, 503])),
                    security: Self.tokenRequired)
            }
            let replace = change(
                "replace", "Replace a document of \(name)", body: Self.json(writeSchema(collection, patch: false)))
            let patchBody = OpenAPI.Content(schema: writeSchema(collection, patch: true))
            let patch = change(
                "patch", "Change fields of a document of \(name) (JSON merge patch)",
                body: [.json: .b(patchBody), .init(rawValue: "application/merge-patch+json")!: .b(patchBody)])
            let delete = OpenAPI.Operation(
                tags: ["collections"], summary: "Delete a document of \(name)",
                operationId: "delete_\(name)", parameters: [Self.ifMatch],
                responses: Self.responses(
                    [(204, OpenAPI.Response(description: "Deleted."))] + Self.errors([400, 401, 403, 404, 412, 503])),
                security: Self.tokenRequired)
            paths.append(
                (
                    "/v1/\(name)/{id}",
                    OpenAPI.PathItem(parameters: [id], get: read, put: replace, delete: delete, patch: patch)
                ))
        }
        return paths
    }

    private func listDescription(_ collection: Collection) -> String {
        var text = """
            Every other parameter is a filter on a field: `field=value` and the operators \
            `_ne`, `_gt`, `_gte`, `_lt`, `_lte`, `_like`; several must all hold. A dotted \
            name (`address.city=Tokyo`) reaches into objects and arrays. `X-Total-Count` \
            counts the matches; a paged list links its pages in `Link`.
            """
        if let envelope = collection.options.pageEnvelope {
            text += " Read a page at a time (`page` is required), answered as `{page, has_next_page, \(envelope)}`."
        }
        return text
    }

    private func listBody(_ collection: Collection, _ document: JSONSchema) -> JSONSchema {
        let items = JSONSchema.array(items: document)
        guard let envelope = collection.options.pageEnvelope else { return items }
        return .object(
            properties: [
                "page": .integer(minimum: (1, exclusive: false)), "has_next_page": .boolean, envelope: items,
            ],
            additionalProperties: .a(true))
    }

    private func listParameters(_ collection: Collection) -> OpenAPI.Parameter.Array {
        let pageSize = DocumentCollection.Options.maxPageSize
        let size = JSONSchema.integer(maximum: (pageSize, exclusive: false), minimum: (1, exclusive: false))
        var parameters: OpenAPI.Parameter.Array = [
            Self.query("q", .string, "Full text: any string in the document contains this, ignoring case."),
            Self.query(
                "sort", .string, "Sort keys, comma-separated; `-` before a key sorts it descending. Ties go by `id`."),
            Self.query("order", .string, "`asc` or `desc` for each `sort` key, comma-separated."),
            Self.query(
                "page", .integer(minimum: (1, exclusive: false)), "Page-number paging, from 1.",
                required: collection.options.pageEnvelope != nil),
            Self.query("per_page", size, "Page size for `page` (default \(collection.options.pageSize))."),
            Self.query(
                "limit", size, "Cursor paging: at most this many documents (default \(collection.options.pageSize))."),
            Self.query("after", .string, "Cursor paging: the cursor of the document to continue after (from `Link`)."),
            Self.query("fields", .string, "Return (and wait on) only these fields, comma-separated; `id` always."),
        ]
        if !collection.options.references.isEmpty {
            parameters.append(
                Self.query(
                    "expand",
                    .string(
                        allowedValues: collection.options.references.keys.sorted().map { .init(stringLiteral: $0) }),
                    "A reference field to resolve; its document is added under the field's name without `_id`."))
        }
        parameters += Self.longPollParameters(maxWait: maxWaitSeconds)
        for field in ["id"] + collection.shape.fieldNames {
            for (suffix, meaning) in Self.filterOperators {
                parameters.append(Self.query(field + suffix, .string, "Filter on `\(field)`: \(meaning)."))
            }
        }
        return parameters
    }

    /// `wait`, `since` and `If-None-Match`: what turns any GET into a long-poll.
    static func longPollParameters(maxWait: Double) -> OpenAPI.Parameter.Array {
        [
            query(
                "wait", .number(maximum: (maxWait, exclusive: false), minimum: (0, exclusive: false)),
                "Long-poll: hold the request up to this many seconds until what it read changes after the cursor "
                    + "(`since` or `If-None-Match`); 304 at the end of the wait."),
            query("since", .string, "Long-poll: the cursor (an `ETag` without quotes) to wait for a change after."),
            .b(
                .header(
                    name: "If-None-Match", schema: .string,
                    description: "The `ETag` of an earlier answer: 304 if nothing it read changed (with `wait`, held).")
            ),
        ]
    }

    static var ifMatch: Either<OpenAPI.Reference<OpenAPI.Parameter>, OpenAPI.Parameter> {
        .b(
            .header(
                name: "If-Match", schema: .string,
                description: "The document's `ETag` (or `*`): refused with 412 if it changed since."))
    }

    static func query(_ name: String, _ schema: JSONSchema, _ description: String, required: Bool = false) -> Either<
        OpenAPI.Reference<OpenAPI.Parameter>, OpenAPI.Parameter
    > {
        .b(.query(name: name, required: required, schema: schema, description: description))
    }

    /// A view's answers: the body as JSON or as an event stream, 304, and its errors.
    static func view(_ body: JSONSchema, list: Bool, errors more: [Int] = []) -> OpenAPI.Response.Map {
        var headers: OpenAPI.Header.Map = [
            "ETag": header(.string, "The cursor: send it back in `If-None-Match` or `since` to long-poll."),
            "Lookout-Changed": header(.string, "On a woken long-poll: the fields that changed, `collection/id.field`."),
        ]
        if list {
            headers["X-Total-Count"] = header(.integer, "How many documents match.")
            headers["Link"] = header(.string, "RFC 8288 links to the first, previous, next and last pages.")
        }
        let ok = OpenAPI.Response(
            description: "The view; with `Accept: text/event-stream`, a stream of it instead.", headers: headers,
            content: [
                .json: .b(OpenAPI.Content(schema: body)),
                .eventStream: .b(
                    OpenAPI.Content(
                        schema: .string(
                            description: "`retry`, then events whose `data` is the JSON body and `id` the cursor; "
                                + "`: heartbeat` comments; `event: end` with `{\"reason\": …}`."))),
            ])
        let notModified = OpenAPI.Response(
            description: "Nothing read changed since the cursor (or within `wait`).",
            headers: ["ETag": header(.string, "The latest cursor.")])
        return responses([(200, ok), (304, notModified)] + errors([400, 401, 404, 414, 431] + more))
    }

    /// A write's answer: the document as stored, with its version as `ETag`.
    static func written(
        _ document: JSONSchema, status: Int, headers extra: OpenAPI.Header.Map = [:]
    ) -> [(OpenAPI.Response.StatusCode, OpenAPI.Response)] {
        var headers: OpenAPI.Header.Map = ["ETag": header(.string, "The document's version, for `If-Match`.")]
        for (name, value) in extra { headers[name] = value }
        return [
            (
                .init(integerLiteral: status),
                OpenAPI.Response(description: "The document as stored.", headers: headers, content: json(document))
            )
        ]
    }

    func watchPaths() -> [(String, OpenAPI.PathItem)] {
        let answer = JSONSchema.object(
            properties: [
                "values": .object(
                    description: "Each read's value (null when missing), by the read as given.",
                    additionalProperties: .a(true)),
                "cursor": .string(description: "Send back as `since` to long-poll."),
            ],
            additionalProperties: .a(true))
        let readDescription = "Reads `collection/id.field` or `collection/id`, comma-separated."
        let get = OpenAPI.Operation(
            tags: ["watch"], summary: "Read and wait on fields of several documents",
            operationId: "watch",
            parameters: [Self.query("read", .string, readDescription, required: true)]
                + Self.longPollParameters(maxWait: maxWaitSeconds),
            responses: Self.view(answer, list: false), security: Self.tokenOptional)
        let post = OpenAPI.Operation(
            tags: ["watch"], summary: "Read and wait on fields of several documents, listed in the body",
            operationId: "watch_many", parameters: Self.longPollParameters(maxWait: maxWaitSeconds),
            requestBody: .init(
                content: Self.json(
                    .object(properties: ["read": .array(items: .string)], additionalProperties: .a(true))),
                required: true),
            responses: Self.view(answer, list: false, errors: [413, 415]),
            security: Self.tokenOptional)
        return [("/v1/watch", OpenAPI.PathItem(get: get, post: post))]
    }
}
