import Foundation
import LookoutJSON
import LookoutTestSupport
import Testing

@Suite("Expanding references", .timeLimit(.minutes(2)))
struct ExpandTests {
    static let json = ("Content-Type", "application/json")

    @Test("expand resolves a declared reference, in a document and in a list; an undeclared one is 400")
    func expand() async throws {
        try await withApp { app in
            let document = try await app.request("GET", "/v1/pickup_feeds/1?expand=category_id").json
            let categoryID = try #require(document["category_id"]?.intValue)
            let category = try DemoData.documents("category_feeds").first { $0["id"]?.intValue == categoryID }
            #expect(document["category"] == category)
            let projected = try await app.request("GET", "/v1/pickup_feeds/1?fields=rating&expand=category_id").json
            #expect(projected.objectValue?.keys == ["id", "rating", "category_id", "category"])
            let list = try #require(try await app.request("GET", "/v1/pickup_feeds?expand=category_id").json.arrayValue)
            #expect(list.allSatisfy { $0["category"]?.objectValue != nil })
            let bad = try await app.request("GET", "/v1/pickup_feeds/1?expand=shop_name")
            #expect(bad.status == 400)
            #expect(try bad.json["error"]?["message"]?.stringValue?.contains("expand") == true)
        }
    }

    @Test("a read through a reference waits on the referenced document")
    func wakesThroughReference() async throws {
        try await withApp { app in
            let editor = try await app.editorHeaders()
            let first = try await app.request("GET", "/v1/pickup_feeds/1?fields=shop_name&expand=category_id")
            let categoryID = try #require(try first.json["category_id"]?.intValue)
            let tag = try #require(first.header("ETag"))
            async let held = app.request(
                "GET", "/v1/pickup_feeds/1?fields=shop_name&expand=category_id&wait=30",
                headers: [Self.json, ("If-None-Match", tag)])
            try await app.waitUntilHeld(1)
            _ = try await app.request(
                "PATCH", "/v1/category_feeds/\(categoryID)", headers: editor, body: #"{"name":"握り寿司"}"#)
            let woken = try await held
            #expect(woken.status == 200)
            #expect(woken.header("Lookout-Changed") == "category_feeds/\(categoryID).name")
            #expect(try woken.json["category"]?["name"] == "握り寿司")
        }
    }
}
