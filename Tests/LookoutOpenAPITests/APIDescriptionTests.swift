import LookoutJSON
import LookoutOpenAPI
import LookoutStore
import Testing

@Suite("APIDescription: the OpenAPI document of a set of collections")
struct APIDescriptionTests {
    func document() throws -> JSONValue {
        let feed = try DocumentCollection(
            name: "info_feed", options: .init(pageSize: 10, pageEnvelope: "information", publicFields: .all),
            documents: [["id": 1, "title": "t", "rank": 2]])
        let reviews = try DocumentCollection(
            name: "reviews", options: .init(references: ["pickup_id": "info_feed"]),
            documents: [["id": 1, "pickup_id": 1, "note": .null], ["id": 2, "pickup_id": 1, "note": "n"]])
        let description = APIDescription(
            collections: [feed, reviews].map {
                .init(name: $0.name, options: $0.options, shape: DocumentShape(documents: $0.documents))
            }, maxWaitSeconds: 30)
        return try JSONParser.parse(try description.json())
    }

    @Test("OpenAPI 3.1 with the seed app's, the token and the operations paths")
    func paths() throws {
        let document = try document()
        #expect(document["openapi"]?.stringValue == "3.1.1")
        let paths = try #require(document["paths"]?.objectValue)
        for path in [
            "/v1/auth/login", "/v1/auth/verify", "/v1/auth/token", "/v1/auth/introspect", "/v1/auth/revoke",
            "/.well-known/jwks.json", "/v1/info_feed", "/v1/info_feed/{id}", "/v1/reviews", "/v1/reviews/{id}",
            "/v1/watch", "/healthz", "/readyz", "/metrics", "/openapi.json", "/images/{name}",
        ] {
            #expect(paths[path] != nil, "\(path)")
        }
        #expect(paths["/v1/auth/login"]?["post"]?["requestBody"] != nil)
        #expect(document["components"]?["securitySchemes"]?["bearerAuth"]?["scheme"]?.stringValue == "bearer")
    }

    @Test("a collection's documents: id, each field's inferred type, nullable when null was seen, any other field")
    func shapes() throws {
        let schemas = try #require(try document()["components"]?["schemas"]?.objectValue)
        let reviews = try #require(schemas["reviews.document"])
        #expect(reviews["required"] == ["id"])
        #expect(reviews["additionalProperties"] == true)
        #expect(reviews["properties"]?["pickup_id"]?["type"] == "integer")
        #expect(reviews["properties"]?["note"]?["type"] == ["string", "null"])
        #expect(schemas["Error"] != nil)
    }

    @Test("lists: the envelope, page required there, filters per field, long-poll and event stream")
    func lists() throws {
        let document = try document()
        let list = try #require(document["paths"]?["/v1/info_feed"]?["get"])
        let parameters = list["parameters"]?.arrayValue ?? []
        let names = parameters.compactMap { $0["name"]?.stringValue }
        for name in [
            "q", "sort", "order", "page", "per_page", "limit", "after", "fields", "wait", "since", "title", "rank_gte",
            "title_like",
        ] {
            #expect(names.contains(name), "\(name)")
        }
        #expect(parameters.first { $0["name"] == "page" }?["required"] == true)
        #expect(parameters.first { $0["name"] == "wait" }?["schema"]?["maximum"] == 30)
        let ok = list["responses"]?["200"]?["content"]
        #expect(ok?["application/json"]?["schema"]?["properties"]?["information"] != nil)
        #expect(ok?["text/event-stream"] != nil)
        #expect(list["responses"]?["304"] != nil)
        let reviews = try #require(document["paths"]?["/v1/reviews"]?["get"]?["parameters"]?.arrayValue)
        // One allowed value is written as `const`.
        #expect(reviews.first { $0["name"] == "expand" }?["schema"]?["const"] == "pickup_id")
        #expect(reviews.first { $0["name"] == "page" }?["required"] != true)
    }
}
