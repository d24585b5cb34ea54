import Foundation
import LookoutApp
import LookoutJSON
import LookoutTestSupport
import Testing

@Suite("GET /openapi.json: the OpenAPI 3.1 document, and writes kept to its shapes", .timeLimit(.minutes(2)))
struct OpenAPITests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The demo's document as committed, for those who generate clients without a server.
    static let committed = root.appendingPathComponent(
        "examples/swift-client/Sources/LookoutClientExample/openapi.json")

    @Test("served without a token, as JSON, and a valid OpenAPI 3.1 document (openapi-spec-validator)")
    func served() async throws {
        try await withApp { app in
            let response = try await app.request("GET", "/openapi.json", headers: [])
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json; charset=utf-8")
            #expect(try response.json["openapi"]?.stringValue == "3.1.1")
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("lookout-openapi-\(UUID()).json")
            defer { try? FileManager.default.removeItem(at: file) }
            try Data(response.body).write(to: file)
            let validator = Self.root.appendingPathComponent(".build-py/bin/openapi-spec-validator").path
            try #require(
                FileManager.default.isExecutableFile(atPath: validator),
                "openapi-spec-validator is missing: run `make python-tools`")
            let (status, output) = try run(validator, [file.path])
            #expect(status == 0, "\(output)")
        }
    }

    @Test("the committed copy (the Swift client example's) is what the demo serves (regenerate: lookout openapi)")
    func committedCopy() async throws {
        let generated = try OpenAPICommand.document(AppConfiguration())
        let committed = try Array(Data(contentsOf: Self.committed))
        #expect(
            committed == generated,
            "the committed document is stale: .build/debug/lookout openapi > \(Self.committed.path)")
        try await withApp { app in
            let response = try await app.request("GET", "/openapi.json")
            #expect(response.body == generated)
        }
    }

    @Test("a write giving a described field another type is 400 invalid_body naming it; new fields take anything")
    func writesKeepTheShape() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let wrong = try await app.request("PATCH", "/v1/galleries/1", headers: editor, body: #"{"title":5}"#)
            #expect(wrong.status == 400)
            let error = try wrong.json["error"]
            #expect(error?["code"]?.stringValue == "invalid_body")
            #expect(error?["message"]?.stringValue?.contains("'title' must be string") == true)
            // Nothing of a refused write is kept.
            #expect(try await app.request("GET", "/v1/galleries/1").json["title"]?.stringValue != nil)
            let replaced = try await app.request(
                "PUT", "/v1/pickup_feeds/1", headers: editor, body: #"{"shop_name":"x","rating":"five"}"#)
            #expect(replaced.status == 400)
            let created = try await app.request(
                "POST", "/v1/galleries", headers: editor, body: #"{"title":["not","a","string"]}"#)
            #expect(created.status == 400)
            // Unknown fields, any type; null removes in a patch; integers are numbers.
            let added = try await app.request(
                "POST", "/v1/galleries", headers: editor, body: #"{"title":"t","extra":{"a":[1]}}"#)
            #expect(added.status == 201)
            let removed = try await app.request("PATCH", "/v1/galleries/1", headers: editor, body: #"{"title":null}"#)
            #expect(removed.status == 200)
            let rating = try await app.request("PATCH", "/v1/pickup_feeds/1", headers: editor, body: #"{"rating":4}"#)
            #expect(rating.status == 200)
            // The patch's null removed the field.
            #expect(try await app.request("GET", "/v1/galleries/1").json["title"] == nil)
        }
    }

    @Test(
        "shapes are inferred from the documents stored at start: a field added before a restart is described and checked after it"
    )
    func shapesFollowTheStoredDocumentsAtStart() async throws {
        let first = try await LiveApp.start()
        defer { try? FileManager.default.removeItem(atPath: first.dataDirectory) }
        let editor = try await first.editorHeaders()
        #expect(
            try await first.request("PATCH", "/v1/galleries/2", headers: editor, body: #"{"mood":"calm"}"#).status
                == 200)
        // Until the restart, the new field is not described, and takes any type.
        #expect(
            try await first.request("PATCH", "/v1/galleries/3", headers: editor, body: #"{"mood":7}"#).status == 200)
        first.shutdown()

        let second = try await LiveApp.start(dataDirectory: first.dataDirectory)
        defer { second.shutdown() }
        let document = try await second.request("GET", "/openapi.json").json
        let mood = document["components"]?["schemas"]?["galleries.document"]?["properties"]?["mood"]
        #expect(mood?["anyOf"]?.arrayValue?.count == 2, "both types seen: \(String(describing: mood))")
        let editorAgain = try await second.editorHeaders()
        let refused = try await second.request(
            "PATCH", "/v1/galleries/4", headers: editorAgain, body: #"{"mood":true}"#)
        #expect(refused.status == 400)
        #expect(
            try refused.json["error"]?["message"]?.stringValue?.contains("'mood' must be integer or string") == true)
    }

    private func run(_ executable: String, _ arguments: [String]) throws -> (Int32, String) {
        let (ending, output) = try ChildProcess.run(executable, arguments)
        return (ending.status, output)
    }
}
